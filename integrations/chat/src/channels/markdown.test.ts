import { describe, expect, it } from 'vitest';
import { checkFormatted } from '../testing/fake-matrix.ts';
import { parseTelegramHtml } from '../testing/fake-telegram.ts';
import { codeBlockHtml, htmlToText, markdownToHtml, plainHtml, splitHtml, utf16Length } from './markdown.ts';

const telegram = (markdown: string) => markdownToHtml(markdown, 'telegram');
const matrix = (markdown: string) => markdownToHtml(markdown, 'matrix');

/** Inputs that have broken formatters: nesting, unclosed markup, HTML, odd links. */
const tricky = [
  '**bold *italic inside* bold** and *italic **bold inside** italic*',
  '**bold `code` bold** and [**bold link** with `code`](https://example.org)',
  '**never closed and *neither',
  '```python\nprint("never closed")\n<b>',
  '<script>alert("x")</script> & &amp; &lt; &#60; <b>not bold</b>',
  '`<b>html in code</b> & more`',
  '```html\n<div class="a">&nbsp;</div>\n```',
  '[js](javascript:alert(1)) [relative](/etc/passwd) [data](data:text/html,x) [ok](https://a.example/x_(y)?q=1&r=2)',
  '[nested [link](https://inner.example)](https://outer.example)',
  'snake_case_name and __init__ and 2*3*4 and a * b * c',
  '# Heading with `code`\n## Another **bold**\n\n- item\n- item with [link](http://example.org)\n  - nested\n1. first\n2) second',
  '> quote with **bold**\n> second line\n\nafter',
  '---\n***\n___',
  '~~struck~~ and ~single~ and \\*escaped\\* and \\`not code\\`',
  '``code with ` backtick`` and ````\nfence of four\n```\nstill code\n````',
  '* * *\n*\n**\n***',
  '',
  '   \n\n  ',
  '[unclosed link(https://example.org',
  'emoji 😀 and **bold 😀** and `😀`',
];

describe('markdown as Telegram HTML', () => {
  it('formats bold, italic, strikethrough, code, code blocks with their language, links, headings, lists, quotes', () => {
    expect(telegram('**bold** __bold__ *italic* _italic_ ~~struck~~ `code`')).toBe(
      '<b>bold</b> <b>bold</b> <i>italic</i> <i>italic</i> <s>struck</s> <code>code</code>',
    );
    expect(telegram('[the docs](https://example.org/a?b=1&c=2)')).toBe(
      '<a href="https://example.org/a?b=1&amp;c=2">the docs</a>',
    );
    expect(telegram('<https://example.org>')).toBe('<a href="https://example.org">https://example.org</a>');
    expect(telegram('```ts\nconst a = 1 < 2;\n```')).toBe(
      '<pre><code class="language-ts">const a = 1 &lt; 2;</code></pre>',
    );
    expect(telegram('```\nplain\n```')).toBe('<pre>plain</pre>');
    expect(telegram('# Title\n\n- one\n- two\n  - nested\n3. three')).toBe(
      '<b>Title</b>\n\n• one\n• two\n  • nested\n3. three',
    );
    expect(telegram('> quoted **bold**\n> more')).toBe('<blockquote>quoted <b>bold</b>\nmore</blockquote>');
  });

  it('keeps line breaks and blank lines as written, drops them at the ends', () => {
    expect(telegram('\n\nfirst\nsecond\n\n\nthird\n\n')).toBe('first\nsecond\n\n\nthird');
  });

  it('escapes everything that is not parsed markdown: HTML the model writes shows as text', () => {
    expect(telegram('<script>alert("x")</script> & <b>not bold</b>')).toBe(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;not bold&lt;/b&gt;',
    );
    expect(telegram('`<b>html in code</b> & more`')).toBe('<code>&lt;b&gt;html in code&lt;/b&gt; &amp; more</code>');
  });

  it('makes only http(s) links links; any other stays the text it was written as', () => {
    expect(telegram('[js](javascript:alert(1)) [file](/etc/passwd)')).toBe(
      '[js](javascript:alert(1)) [file](/etc/passwd)',
    );
    expect(telegram('[nested [link](https://inner.example)](https://outer.example)')).toBe(
      '<a href="https://outer.example">nested link</a>',
    );
  });

  it('nests as Telegram allows: formatting in formatting, code never inside another entity', () => {
    expect(telegram('**bold *italic* bold**')).toBe('<b>bold <i>italic</i> bold</b>');
    expect(telegram('**bold `code` bold**')).toBe('<b>bold </b><code>code</code><b> bold</b>');
    expect(telegram('[see `x`](https://example.org)')).toBe('<a href="https://example.org">see </a><code>x</code>');
  });

  it('leaves unclosed markup as text and runs an unclosed fence (a reply still streaming) to the end', () => {
    expect(telegram('**never closed')).toBe('**never closed');
    expect(telegram('text\n```js\nlet a = "<b>";')).toBe(
      'text\n<pre><code class="language-js">let a = &quot;&lt;b&gt;&quot;;</code></pre>',
    );
  });

  it('does not take snake_case, __dunder__ inside words or a lone star for emphasis', () => {
    expect(telegram('snake_case_name a * b * c')).toBe('snake_case_name a * b * c');
    expect(telegram('\\*not italic\\*')).toBe('*not italic*');
  });

  it('gives HTML the fake Bot API parses as strictly as Telegram, whatever the input', () => {
    for (const input of tricky) {
      const html = telegram(input);
      if (html.trim() === '') continue;
      const parsed = parseTelegramHtml(html);
      expect(parsed, `${JSON.stringify(input)} → ${html}`).toBeTypeOf('string');
      expect(parsed).toBe(htmlToText(html));
    }
  });
});

describe('markdown as Matrix HTML', () => {
  it('uses the formatted_body subset: lists as ul/ol, line breaks as <br>, code blocks with their language', () => {
    expect(matrix('# Title\nline\n\n- one\n- **two**\n  - nested\n\n3. three\n4. four\n\n```py\nx = 1\n```')).toBe(
      '<b>Title</b><br>line<br><ul><li>one</li><li><b>two</b><ul><li>nested</li></ul></li></ul><ol start="3"><li>three</li><li>four</li></ol><pre><code class="language-py">x = 1</code></pre>',
    );
    expect(matrix('**bold `code` bold**')).toBe('<b>bold <code>code</code> bold</b>');
  });

  it('gives HTML a sanitiser keeps whole, whatever the input, and body the text it shows', () => {
    for (const input of tricky) {
      const html = matrix(input);
      expect(checkFormatted({ format: 'org.matrix.custom.html', formatted_body: html }), input).toBeUndefined();
    }
    expect(htmlToText(matrix('**a** & <b>\n- x\n- y\n\n1. one\n2. two\n\n```\ncode <x>\n```\nend'))).toBe(
      'a & <b>\n• x\n• y\n1. one\n2. two\ncode <x>\nend',
    );
  });

  it('shows plain text literally: escaped, line breaks as <br>', () => {
    expect(plainHtml('1 < 2 & 3\nnext', 'matrix')).toBe('1 &lt; 2 &amp; 3<br>next');
    expect(codeBlockHtml('a\n<b>', 'matrix')).toBe('<pre><code>a\n&lt;b&gt;</code></pre>');
  });
});

describe('splitting HTML into messages', () => {
  const visible = (html: string) => {
    const parsed = parseTelegramHtml(html);
    if (typeof parsed !== 'string') throw new Error(`${parsed.problem}: ${html.slice(0, 200)}`);
    return parsed;
  };

  it('cuts a very long code block into valid messages, each reopening the block with its language', () => {
    const code = Array.from({ length: 900 }, (_, line) => `line ${line}: if (a < b && c > d) return "x";`).join('\n');
    const html = telegram(`Here:\n\n\`\`\`ts\n${code}\n\`\`\`\n\nDone **now**.`);
    const pieces = splitHtml(html, { maxChars: 4096, flavour: 'telegram', measure: utf16Length });
    expect(pieces.length).toBeGreaterThanOrEqual(10);
    for (const [index, piece] of pieces.entries()) {
      expect(utf16Length(visible(piece))).toBeLessThanOrEqual(4096);
      if (index > 0 && index < pieces.length - 1) expect(piece).toMatch(/^<pre><code class="language-ts">line \d+/);
    }
    // Nothing lost: the pieces show the whole text, cut at line breaks.
    expect(pieces.map(visible).join('')).toBe(visible(html));
    expect(pieces.slice(0, -1).every((piece) => visible(piece).endsWith('\n'))).toBe(true);
  });

  it('never cuts inside an entity or a tag: a text of nothing but escaped characters', () => {
    const html = telegram(`**${'<&>'.repeat(3000)}**`);
    const pieces = splitHtml(html, { maxChars: 1000, flavour: 'telegram' });
    expect(pieces).toHaveLength(9);
    for (const piece of pieces) {
      expect(piece).toMatch(/^<b>(&lt;|&amp;|&gt;)+<\/b>$/);
      expect(visible(piece).length).toBeLessThanOrEqual(1000);
    }
    expect(pieces.map(visible).join('')).toBe('<&>'.repeat(3000));
  });

  it('counts UTF-16 code units for Telegram: an emoji beyond the BMP is two', () => {
    const pieces = splitHtml(telegram('😀'.repeat(3000)), {
      maxChars: 4096,
      flavour: 'telegram',
      measure: utf16Length,
    });
    expect(pieces.map((piece) => Array.from(piece).length)).toEqual([2048, 952]);
  });

  it('cuts Matrix HTML into pieces a sanitiser keeps whole, with lists and line breaks', () => {
    const lines = Array.from({ length: 400 }, (_, index) => `- item ${index} with **bold** & <html>`).join('\n');
    const html = matrix(`Intro\n\n${lines}\n\nOutro`);
    const pieces = splitHtml(html, { maxChars: 4000, flavour: 'matrix' });
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const piece of pieces) {
      expect(checkFormatted({ format: 'org.matrix.custom.html', formatted_body: piece })).toBeUndefined();
      expect(Array.from(htmlToText(piece)).length).toBeLessThanOrEqual(4000);
    }
    expect(pieces.map(htmlToText).join('\n').replace(/\n+/g, '\n')).toBe(htmlToText(html).replace(/\n+/g, '\n'));
  });

  it('keeps the HTML of each piece within a limit too: many links with long addresses', () => {
    const links = Array.from(
      { length: 300 },
      (_, index) => `[l${index}](https://example.org/${'x'.repeat(200)}/${index})`,
    );
    const html = matrix(links.join(' '));
    const pieces = splitHtml(html, { maxChars: 4000, flavour: 'matrix', maxMarkupChars: 16_000 });
    expect(pieces.length).toBeGreaterThanOrEqual(5);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(16_000);
      expect(checkFormatted({ format: 'org.matrix.custom.html', formatted_body: piece })).toBeUndefined();
    }
    expect(pieces.map(htmlToText).join('')).toBe(htmlToText(html));
    expect(pieces.join('')).toContain('/299">l299</a>');
  });

  it('leaves a text that fits as it is, and drops pieces of nothing but white space', () => {
    expect(splitHtml('<b>short</b>', { maxChars: 100, flavour: 'telegram' })).toEqual(['<b>short</b>']);
    expect(splitHtml(`${'a'.repeat(10)}\n\n\n`, { maxChars: 10, flavour: 'telegram' })).toEqual(['a'.repeat(10)]);
  });
});

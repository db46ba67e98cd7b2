import { describe, expect, it } from 'vitest';
import { splitMrkdwn, toMrkdwn } from './slack-format.ts';

describe('markdown as Slack mrkdwn', () => {
  it('converts bold, italic, strike, links, headings and bullets, and escapes &, < and >', () => {
    expect(toMrkdwn('**Rent** is *due*, ~~paid~~')).toBe('*Rent* is _due_, ~paid~');
    expect(toMrkdwn('see [the invoice](https://example.com/a?b=1&c=2) now')).toBe(
      'see <https://example.com/a?b=1&c=2|the invoice> now',
    );
    expect(toMrkdwn('# Today\n- one\n* two')).toBe('*Today*\n• one\n• two');
    // Nothing the model writes becomes a mention or a link it did not write as one.
    expect(toMrkdwn('<!channel> a < b && c > d <https://evil|x>')).toBe(
      '&lt;!channel&gt; a &lt; b &amp;&amp; c &gt; d &lt;https://evil|x&gt;',
    );
  });

  it('keeps code as written (escaped), drops a code block’s language', () => {
    expect(toMrkdwn('run `a **b** <c>` then\n```ts\nconst x = **y** < 2;\n```')).toBe(
      'run `a **b** &lt;c&gt;` then\n```\nconst x = **y** &lt; 2;\n```',
    );
  });
});

describe('splitting mrkdwn', () => {
  it('cuts at line breaks within the limit, and closes and reopens a code block it cuts through', () => {
    const code = Array.from({ length: 40 }, (_, line) => `line ${line} of the code`).join('\n');
    const text = `Here:\n\`\`\`\n${code}\n\`\`\`\nDone.`;
    const pieces = splitMrkdwn(text, 300);
    expect(pieces.length).toBeGreaterThanOrEqual(3);
    for (const piece of pieces) {
      expect(Array.from(piece).length).toBeLessThanOrEqual(300);
      expect((piece.match(/```/g)?.length ?? 0) % 2).toBe(0);
    }
    // Without the fences added at the cuts, the pieces are the text.
    expect(pieces.join('').replaceAll('``````\n', '')).toBe(text);
  });

  it('leaves a text within the limit whole', () => {
    expect(splitMrkdwn('short', 3000)).toEqual(['short']);
  });
});

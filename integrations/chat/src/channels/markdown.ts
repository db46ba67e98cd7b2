/**
 * Markdown (what a model writes) as a chat platform's HTML, and HTML cut into messages that are each valid on their
 * own (docs/channels.md "Formatting", decision 0075). Two flavours:
 * - `telegram`: the Bot API's `parse_mode: HTML` subset — `<b> <i> <s> <code> <pre> <a href> <blockquote>`, line
 *   breaks as they are (Telegram has no `<br>`, no lists, no headings: a list item is `• item`, a heading bold);
 * - `matrix`: the `org.matrix.custom.html` subset of `formatted_body` — the same tags plus `<ul> <ol> <li> <br>`,
 *   line breaks as `<br>`.
 *
 * Only what is parsed becomes markup; every other character is escaped, so nothing the model writes (`<script>`,
 * a stray `&`) is taken as HTML. Only http(s) links become `<a>`; any other link stays the text it was written as.
 * A fence left open (a reply still streaming) is a code block to the end.
 */

export type MarkupFlavour = 'telegram' | 'matrix';

type Inline =
  | { kind: 'text'; text: string }
  | { kind: 'code'; text: string }
  | { kind: 'b' | 'i' | 's'; children: Inline[] }
  | { kind: 'a'; href: string; children: Inline[] };

/** `&`, `<`, `>` (and `"` for attributes) as entities: text that is shown as it is. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (char) => entities[char] ?? char);
}

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/** Plain text in a flavour's markup, shown literally (Matrix: line breaks as `<br>`). */
export function plainHtml(text: string, flavour: MarkupFlavour): string {
  const escaped = escapeHtml(text);
  return flavour === 'matrix' ? escaped.replace(/\n/g, '<br>') : escaped;
}

/** Text shown exactly as it is, as a code block. */
export function codeBlockHtml(text: string, flavour: MarkupFlavour, language?: string): string {
  const lang = language !== undefined && /^[\w+#.-]{1,32}$/.test(language) ? language : undefined;
  if (flavour === 'telegram' && lang === undefined) return `<pre>${escapeHtml(text)}</pre>`;
  return `<pre><code${lang === undefined ? '' : ` class="language-${lang}"`}>${escapeHtml(text)}</code></pre>`;
}

const fenceOpen = /^ {0,3}(`{3,}|~{3,})[ \t]*([^\s`]*)[^`]*$/;
const heading = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/;
const listItem = /^([ \t]*)([-*+]|\d{1,9}[.)])[ \t]+(.*)$/;
const quote = /^ {0,3}>[ \t]?(.*)$/;
const rule = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;

interface ListLine {
  depth: number;
  ordered: boolean;
  marker: string;
  text: string;
}

/** Markdown as the flavour's HTML. */
export function markdownToHtml(markdown: string, flavour: MarkupFlavour): string {
  const lines = markdown.replace(/\r\n?/g, '\n').split('\n');
  // Each output line (a block can hold line breaks of its own); joined by the flavour's line break.
  const out: { html: string; block: boolean }[] = [];
  let paragraph: string[] = [];
  let quoted: string[] = [];
  let list: ListLine[] = [];
  const flushParagraph = () => {
    if (paragraph.length > 0) out.push({ html: inlineHtml(parseInline(paragraph.join('\n')), flavour), block: false });
    paragraph = [];
  };
  const flushQuote = () => {
    if (quoted.length > 0)
      out.push({
        html: `<blockquote>${inlineHtml(parseInline(quoted.join('\n')), flavour)}</blockquote>`,
        block: true,
      });
    quoted = [];
  };
  const flushList = () => {
    if (list.length > 0) out.push(...listHtml(list, flavour));
    list = [];
  };
  const flush = () => {
    flushParagraph();
    flushQuote();
    flushList();
  };
  for (let index = 0; index < lines.length; index += 1) {
    const line = lines[index] ?? '';
    const fence = fenceOpen.exec(line);
    if (fence) {
      flush();
      const marker = fence[1] ?? '```';
      const code: string[] = [];
      let closed = false;
      for (index += 1; index < lines.length; index += 1) {
        const next = lines[index] ?? '';
        const close = /^ {0,3}(`{3,}|~{3,})[ \t]*$/.exec(next);
        if (close && close[1]?.[0] === marker[0] && (close[1]?.length ?? 0) >= marker.length) {
          closed = true;
          break;
        }
        code.push(next);
      }
      // An open fence (a reply still streaming) runs to the end.
      if (!closed) index = lines.length;
      out.push({ html: codeBlockHtml(code.join('\n'), flavour, fence[2] || undefined), block: true });
      continue;
    }
    if (line.trim() === '') {
      flush();
      out.push({ html: '', block: false });
      continue;
    }
    if (rule.test(line)) {
      flush();
      out.push({ html: '———', block: false });
      continue;
    }
    const title = heading.exec(line);
    if (title) {
      flush();
      out.push({ html: `<b>${inlineHtml(parseInline(title[2] ?? ''), flavour, ['b'])}</b>`, block: false });
      continue;
    }
    const item = listItem.exec(line);
    if (item) {
      flushParagraph();
      flushQuote();
      const marker = item[2] ?? '-';
      list.push({
        depth: Math.floor((item[1] ?? '').replace(/\t/g, '    ').length / 2),
        ordered: /\d/.test(marker),
        marker,
        text: item[3] ?? '',
      });
      continue;
    }
    const quotedLine = quote.exec(line);
    if (quotedLine) {
      flushParagraph();
      flushList();
      quoted.push(quotedLine[1] ?? '');
      continue;
    }
    if (list.length > 0 && /^[ \t]+\S/.test(line)) {
      // A list item's continuation line.
      const last = list[list.length - 1];
      if (last) last.text += `\n${line.trim()}`;
      continue;
    }
    flushQuote();
    flushList();
    paragraph.push(line);
  }
  flush();
  // Blank lines at either end say nothing.
  while (out.length > 0 && out[0]?.html === '') out.shift();
  while (out.length > 0 && out[out.length - 1]?.html === '') out.pop();
  if (flavour === 'telegram') return withoutEmpty(out.map((line) => line.html).join('\n'));
  // Matrix: `<br>` between lines, none next to a block (a block starts and ends a line of its own).
  let html = '';
  out.forEach((line, index) => {
    if (index > 0 && !line.block && !out[index - 1]?.block) html += '<br>';
    html += line.html;
  });
  return withoutEmpty(html);
}

/** Elements with nothing in them (left by closing formatting around a code span) are dropped. */
function withoutEmpty(html: string): string {
  let result = html;
  for (let before = ''; before !== result; ) {
    before = result;
    result = result.replace(/<(b|i|s|a)(?: [^<>]*)?><\/\1>/g, '');
  }
  return result;
}

function listHtml(items: ListLine[], flavour: MarkupFlavour): { html: string; block: boolean }[] {
  if (flavour === 'telegram') {
    return items.map((item) => ({
      html: `${'  '.repeat(item.depth)}${item.ordered ? escapeHtml(item.marker) : '•'} ${inlineHtml(parseInline(item.text), flavour)}`,
      block: false,
    }));
  }
  let html = '';
  const open: { depth: number; tag: string }[] = [];
  for (const item of items) {
    while (open.length > 0 && (open[open.length - 1]?.depth ?? 0) > item.depth) {
      html += `</li></${open.pop()?.tag}>`;
    }
    const tag = item.ordered ? 'ol' : 'ul';
    const top = open[open.length - 1];
    if (top && top.depth === item.depth && top.tag !== tag) {
      // A list of the other kind at the same depth: a new list.
      html += `</li></${open.pop()?.tag}>`;
    }
    const same = open[open.length - 1];
    if (same && same.depth === item.depth) {
      html += '</li>';
    } else {
      const start = item.ordered ? Number.parseInt(item.marker, 10) : 1;
      html += `<${tag}${item.ordered && start !== 1 ? ` start="${start}"` : ''}>`;
      open.push({ depth: item.depth, tag });
    }
    html += `<li>${inlineHtml(parseInline(item.text), flavour)}`;
  }
  while (open.length > 0) html += `</li></${open.pop()?.tag}>`;
  return [{ html, block: true }];
}

/**
 * Inline nodes as HTML, inside the elements `within` (outermost first). A link inside a link is its text. Telegram
 * takes no entity inside a code span and no code span inside another entity: the elements around one are closed
 * before it and opened again after it.
 */
function inlineHtml(nodes: Inline[], flavour: MarkupFlavour, within: readonly string[] = []): string {
  return nodes
    .map((node) => {
      switch (node.kind) {
        case 'text':
          return plainHtml(node.text, flavour);
        case 'code': {
          const code = `<code>${escapeHtml(node.text)}</code>`;
          if (flavour !== 'telegram' || within.length === 0) return code;
          const close = [...within]
            .reverse()
            .map((tag) => `</${tag.split(' ')[0]}>`)
            .join('');
          const open = within.map((tag) => `<${tag}>`).join('');
          return `${close}${code}${open}`;
        }
        case 'a':
          if (within.some((tag) => tag.startsWith('a '))) return inlineHtml(node.children, flavour, within);
          return `<a href="${escapeHtml(node.href)}">${inlineHtml(node.children, flavour, [...within, `a href="${escapeHtml(node.href)}"`])}</a>`;
        default:
          return `<${node.kind}>${inlineHtml(node.children, flavour, [...within, node.kind])}</${node.kind}>`;
      }
    })
    .join('');
}

/** Inline markdown: code spans, links, bold, italic, strikethrough, backslash escapes; the rest is text. */
function parseInline(source: string): Inline[] {
  const nodes: Inline[] = [];
  let text = '';
  // Per emphasis marker, the stretch where a search for its closer found none: an opener inside it finds none either,
  // so a text full of unclosed markers is read in linear time, not quadratic.
  const unclosed = new Map<string, { from: number; until: number }>();
  let brackets: Map<number, number> | undefined;
  const push = (node: Inline) => {
    if (text !== '') nodes.push({ kind: 'text', text });
    text = '';
    nodes.push(node);
  };
  let index = 0;
  while (index < source.length) {
    const char = source[index] ?? '';
    if (char === '\\' && /[!-/:-@[-`{-~]/.test(source[index + 1] ?? '')) {
      text += source[index + 1];
      index += 2;
      continue;
    }
    if (char === '`') {
      const run = /^`+/.exec(source.slice(index))?.[0] ?? '`';
      const end = findRun(source, '`', run.length, index + run.length);
      if (end >= 0) {
        let code = source.slice(index + run.length, end).replace(/\n/g, ' ');
        if (/^ .*\S.* $/.test(code)) code = code.slice(1, -1);
        push({ kind: 'code', text: code });
        index = end + run.length;
        continue;
      }
      text += run;
      index += run.length;
      continue;
    }
    if (char === '[') {
      brackets ??= matchBrackets(source);
      const link = parseLink(source, index, brackets.get(index));
      if (link) {
        if (/^https?:\/\/[^\s<>"]+$/i.test(link.href))
          push({ kind: 'a', href: link.href, children: parseInline(link.label) });
        // Any other link (javascript:, a relative path) stays the text it was written as.
        else text += source.slice(index, link.end);
        index = link.end;
        continue;
      }
    }
    if (char === '<') {
      // An autolink: <https://…>.
      const auto = /^<(https?:\/\/[^\s<>"]+)>/i.exec(source.slice(index));
      if (auto?.[1]) {
        push({ kind: 'a', href: auto[1], children: [{ kind: 'text', text: auto[1] }] });
        index += auto[0].length;
        continue;
      }
    }
    const marker = emphasisMarker(source, index);
    const known = marker === undefined ? undefined : unclosed.get(marker);
    const emphasis =
      marker === undefined || (known && index >= known.from && index < known.until)
        ? undefined
        : parseEmphasis(source, index);
    if (emphasis && 'kind' in emphasis) {
      push({ kind: emphasis.kind, children: parseInline(emphasis.inner) });
      index = emphasis.end;
      continue;
    }
    if (emphasis && marker !== undefined) unclosed.set(marker, { from: index, until: emphasis.until });
    text += char;
    index += 1;
  }
  if (text !== '') nodes.push({ kind: 'text', text });
  return nodes;
}

/** The index of the next run of exactly `length` `char`s at or after `from`; -1 when there is none. */
function findRun(source: string, char: string, length: number, from: number): number {
  for (let index = from; index < source.length; ) {
    if (source[index] !== char) {
      index += 1;
      continue;
    }
    let end = index;
    while (source[end] === char) end += 1;
    if (end - index === length) return index;
    index = end;
  }
  return -1;
}

/** Each `[`'s matching `]` (none across a paragraph break), in one pass. */
function matchBrackets(source: string): Map<number, number> {
  const matches = new Map<number, number>();
  let open: number[] = [];
  for (let index = 0; index < source.length; index += 1) {
    const char = source[index];
    if (char === '\\') index += 1;
    else if (char === '\n' && source[index + 1] === '\n') open = [];
    else if (char === '[') open.push(index);
    else if (char === ']') {
      const start = open.pop();
      if (start !== undefined) matches.set(start, index);
    }
  }
  return matches;
}

/** A link `[label](url)` at `start`, whose `]` is at `close`. */
function parseLink(
  source: string,
  start: number,
  close: number | undefined,
): { label: string; href: string; end: number } | undefined {
  if (close === undefined || source[close + 1] !== '(') return undefined;
  const target = /^\(\s*(<[^<>\n]*>|(?:[^\s()]|\([^\s()]*\))*)(?:\s+"[^"\n]*")?\s*\)/.exec(source.slice(close + 1));
  if (!target) return undefined;
  const href = (target[1] ?? '').replace(/^<(.*)>$/, '$1');
  return { label: source.slice(start + 1, close), href, end: close + 1 + target[0].length };
}

/** The emphasis marker at `index` (`**`, `*`, `__`, `_`, `~~`), if there is one. */
function emphasisMarker(source: string, index: number): string | undefined {
  const char = source[index];
  if (char !== '*' && char !== '_' && char !== '~') return undefined;
  const double = source[index + 1] === char;
  if (char === '~' && !double) return undefined;
  return double ? `${char}${char}` : char;
}

/**
 * `**bold**`, `__bold__`, `*italic*`, `_italic_`, `~~strike~~` at `start`: the opener is followed by a non-space, the
 * closer preceded by one; `_` only at word boundaries (snake_case stays as it is). Undefined when it is no opener;
 * `until` when nothing closes it before that index (a paragraph break or the end).
 */
function parseEmphasis(
  source: string,
  start: number,
): { kind: 'b' | 'i' | 's'; inner: string; end: number } | { until: number } | undefined {
  const marker = emphasisMarker(source, start);
  const char = source[start];
  if (marker === undefined || char === undefined) return undefined;
  const double = marker.length === 2;
  const kind = char === '~' ? 's' : double ? 'b' : 'i';
  const first = source[start + marker.length];
  if (first === undefined || /\s/.test(first)) return undefined;
  if (char === '_' && /[\p{L}\p{N}]/u.test(source[start - 1] ?? '')) return undefined;
  for (let index = start + marker.length + 1; index < source.length; index += 1) {
    if (source[index] === '\\') {
      index += 1;
      continue;
    }
    if (source[index] === '`') {
      // A code span inside is skipped whole: its stars are code.
      const run = /^`+/.exec(source.slice(index))?.[0] ?? '`';
      const end = findRun(source, '`', run.length, index + run.length);
      if (end >= 0) index = end + run.length - 1;
      continue;
    }
    if (source[index] === '\n' && source[index + 1] === '\n') return { until: index };
    if (!source.startsWith(marker, index)) continue;
    // `**` is not the end of `*italic*`, nor `*` of `**bold**`, unless the run is long enough.
    if (!double && source[index + 1] === char) {
      index += 1;
      continue;
    }
    if (/\s/.test(source[index - 1] ?? ' ')) continue;
    if (char === '_' && /[\p{L}\p{N}]/u.test(source[index + marker.length] ?? '')) continue;
    return { kind, inner: source.slice(start + marker.length, index), end: index + marker.length };
  }
  return { until: source.length };
}

// ---- cutting HTML into messages ----

interface Tag {
  name: string;
  /** The opening tag as written. */
  raw: string;
}

/** One visible character (or `<br>`) of an HTML text, with the elements it is in (outermost first). */
interface Unit {
  text: string;
  br: boolean;
  stack: readonly Tag[];
}

const namedEntities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };
const voidTags = new Set(['br']);

/** An HTML text as units; tags that close nothing open are dropped, a stray `<` or `&` is text. */
function toUnits(html: string): Unit[] {
  const units: Unit[] = [];
  let stack: readonly Tag[] = [];
  const token =
    /<(\/?)([a-zA-Z][a-zA-Z0-9-]*)((?:\s[^<>]*)?)\/?>|&(#x[0-9a-fA-F]{1,6}|#[0-9]{1,7}|[a-zA-Z]{2,6});|[^<&]+|[<&]/g;
  for (const match of html.matchAll(token)) {
    const [whole, closing, rawName, , entity] = match;
    if (rawName !== undefined) {
      const name = rawName.toLowerCase();
      if (voidTags.has(name)) {
        if (!closing) units.push({ text: '\n', br: true, stack });
      } else if (closing) {
        const at = stack.map((tag) => tag.name).lastIndexOf(name);
        if (at >= 0) stack = stack.slice(0, at);
      } else {
        stack = [...stack, { name, raw: whole }];
      }
      continue;
    }
    let text = whole;
    if (entity !== undefined) {
      const code = entity.startsWith('#x')
        ? Number.parseInt(entity.slice(2), 16)
        : entity.startsWith('#')
          ? Number.parseInt(entity.slice(1), 10)
          : undefined;
      const decoded =
        code === undefined
          ? namedEntities[entity.toLowerCase()]
          : code > 0 && code <= 0x10ffff
            ? String.fromCodePoint(code)
            : undefined;
      text = decoded ?? whole;
    }
    for (const char of text) units.push({ text: char, br: false, stack });
  }
  return units;
}

/** Units back as HTML: the elements opened and closed around them, all closed at the end. */
function fromUnits(units: readonly Unit[], flavour: MarkupFlavour): string {
  let html = '';
  let open: readonly Tag[] = [];
  for (const unit of units) {
    let common = 0;
    while (common < open.length && common < unit.stack.length && open[common] === unit.stack[common]) common += 1;
    for (let index = open.length - 1; index >= common; index -= 1) html += `</${open[index]?.name}>`;
    for (let index = common; index < unit.stack.length; index += 1) html += unit.stack[index]?.raw ?? '';
    open = unit.stack;
    html += unit.br
      ? '<br>'
      : flavour === 'matrix' && unit.text === '\n' && !inPre(unit)
        ? '<br>'
        : escapeText(unit.text);
  }
  for (let index = open.length - 1; index >= 0; index -= 1) html += `</${open[index]?.name}>`;
  return html;
}

function escapeText(char: string): string {
  return char === '&' ? '&amp;' : char === '<' ? '&lt;' : char === '>' ? '&gt;' : char;
}

function inPre(unit: Unit): boolean {
  return unit.stack.some((tag) => tag.name === 'pre');
}

/** About how many characters of HTML a unit adds: itself escaped, and the tags closed and opened before it. */
function markupLength(unit: Unit, previous: Unit | undefined): number {
  const before = previous?.stack ?? [];
  let common = 0;
  while (common < before.length && common < unit.stack.length && before[common] === unit.stack[common]) common += 1;
  let length = unit.br ? 4 : escapeText(unit.text).length;
  for (const tag of before.slice(common)) length += tag.name.length + 3;
  for (const tag of unit.stack.slice(common)) length += tag.raw.length;
  return length;
}

/** Whether a unit is the first of a list item. */
function startsItem(unit: Unit, previous: Unit | undefined): boolean {
  const item = unit.stack.findLast((tag) => tag.name === 'li');
  return item !== undefined && previous?.stack.findLast((tag) => tag.name === 'li') !== item;
}

/** What a unit adds to the text a user sees: a list item's first character brings its bullet. */
function weight(unit: Unit, previous: Unit | undefined, measure: (text: string) => number): number {
  return measure(unit.text) + (startsItem(unit, previous) ? 4 : 0);
}

/**
 * Cuts an HTML text into pieces of at most `maxChars` of visible text each (as `measure` counts it), each valid on
 * its own: the elements open at a cut are closed at its end and opened again at the start of the next piece. A cut
 * falls after a line break where there is one in the second half of the piece, never inside a tag or an entity.
 * Pieces with nothing but white space are left out.
 */
export function splitHtml(
  html: string,
  options: {
    maxChars: number;
    flavour: MarkupFlavour;
    measure?: (text: string) => number;
    /** The most characters of HTML a piece may have (markup included), when the platform limits that too. */
    maxMarkupChars?: number;
  },
): string[] {
  const measure = options.measure ?? ((text: string) => Array.from(text).length);
  const maxMarkup = options.maxMarkupChars ?? Number.POSITIVE_INFINITY;
  const units = toUnits(html);
  const pieces: Unit[][] = [];
  let start = 0;
  while (start < units.length) {
    let used = 0;
    let markup = 0;
    let end = start;
    let lastBreak = -1;
    while (end < units.length) {
      const unit = units[end] as Unit;
      const previous = end === start ? undefined : units[end - 1];
      // Before a list item is a line break too.
      if (end > start && startsItem(unit, previous)) lastBreak = end;
      const cost = weight(unit, previous, measure);
      const markupCost = markupLength(unit, previous);
      const closing = unit.stack.reduce((sum, tag) => sum + tag.name.length + 3, 0);
      if (used + cost > options.maxChars || (end > start && markup + markupCost + closing > maxMarkup)) break;
      used += cost;
      markup += markupCost;
      end += 1;
      if (unit.text === '\n') lastBreak = end;
    }
    if (end < units.length && lastBreak > start && used > 0 && lastBreak - start > (end - start) / 2) end = lastBreak;
    if (end === start) end = start + 1;
    pieces.push(units.slice(start, end));
    start = end;
  }
  return pieces
    .filter((piece) => piece.some((unit) => unit.text.trim() !== ''))
    .map((piece) => fromUnits(piece, options.flavour));
}

/**
 * The text an HTML text shows, without markup: for Matrix's `body` and a message Telegram would not parse. Line
 * breaks and list items (`• `, `1. `) are kept.
 */
export function htmlToText(html: string): string {
  const units = toUnits(html);
  let text = '';
  let previousItem: Tag | undefined;
  const counters = new Map<Tag, number>();
  const ensureBreak = () => {
    if (text !== '' && !text.endsWith('\n')) text += '\n';
  };
  let previous: Unit | undefined;
  for (const unit of units) {
    // A block element (a list, a code block, a quote) begins and ends on a line of its own.
    const blocks = (stack: readonly Tag[]) => stack.filter((tag) => blockTags.has(tag.name));
    const before = previous ? blocks(previous.stack) : [];
    const now = blocks(unit.stack);
    const changed = before.length !== now.length || before.some((tag, index) => tag !== now[index]);
    if (changed && unit.text !== '\n') ensureBreak();
    const item = unit.stack.findLast((tag) => tag.name === 'li');
    if (item !== undefined && item !== previousItem) {
      ensureBreak();
      const list = unit.stack
        .slice(0, unit.stack.lastIndexOf(item))
        .findLast((tag) => tag.name === 'ol' || tag.name === 'ul');
      const depth = unit.stack.filter((tag) => tag.name === 'li').length - 1;
      let marker = '•';
      if (list?.name === 'ol') {
        const start = Number(/start="(\d+)"/.exec(list.raw)?.[1] ?? 1);
        const number = counters.get(list) ?? start;
        counters.set(list, number + 1);
        marker = `${number}.`;
      }
      text += `${'  '.repeat(depth)}${marker} `;
    }
    previousItem = item;
    text += unit.text;
    previous = unit;
  }
  return text;
}

const blockTags = new Set(['pre', 'blockquote', 'ul', 'ol', 'li', 'p']);

/** A text's length in UTF-16 code units: the unit of Telegram's entity offsets, and the stricter count of its limit. */
export function utf16Length(text: string): number {
  return text.length;
}

/**
 * Markdown as Discord shows it, and split to its 2000-character limit. Discord's markdown is mostly the model's
 * (bold, italics, strikethrough, inline code, code blocks with a language, quotes, lists, `#` to `###` headings, links
 * as written); what differs is rewritten or escaped outside code: `__x__` (underline on Discord, bold in markdown)
 * becomes `**x**`, `####` and deeper headings become bold lines, `||` (a spoiler) and a line's leading `-# ` (small
 * text) are escaped. Mentions need no escaping: every message is sent with `allowed_mentions: {parse: []}`.
 */

/** The longest message Discord takes. */
export const discordMaxChars = 2000;

const fence = /^\s*(`{3,}|~{3,})/;

export function formatDiscord(markdown: string): string {
  let inFence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const opener = fence.exec(line)?.[1];
      if (opener !== undefined) {
        if (inFence === undefined) inFence = opener;
        else if (opener.startsWith(inFence)) inFence = undefined;
        return line;
      }
      if (inFence !== undefined) return line;
      return formatLine(line);
    })
    .join('\n');
}

function formatLine(line: string): string {
  const heading = /^#{4,6}\s+(.*)$/.exec(line);
  let text = heading ? `**${heading[1]?.trim()}**` : line;
  if (/^-#\s/.test(text)) text = `\\${text}`;
  // Inline code spans are left as they are; the rest is rewritten.
  return text
    .split(/(`[^`]*`)/)
    .map((part, index) =>
      index % 2 === 1 ? part : part.replace(/__(?=\S)([^_]*?\S)__/g, '**$1**').replace(/\|\|/g, '\\|\\|'),
    )
    .join('');
}

/**
 * Splits a formatted text into messages of at most `maxChars` characters (code points), each valid on its own: at
 * a line break where there is one, and a code block cut in two is closed at the end of the first message and
 * reopened (with its language) at the start of the next. Text without code blocks is split losslessly (the pieces
 * joined give the text back).
 */
export function splitDiscord(text: string, maxChars = discordMaxChars): string[] {
  if (Array.from(text).length <= maxChars) return [text];
  const pieces: string[] = [];
  const lines = text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
  let current: string[] = [];
  /** The open code block's first line (```ts), when the text so far is inside one. */
  let open: string | undefined;
  let openAtStart: string | undefined;
  const closing = (fenceLine: string | undefined) => (fenceLine === undefined ? '' : fenceClose(fenceLine));
  const flush = () => {
    if (current.length === 0) return;
    let piece = current.join('');
    if (open !== undefined) piece += `${piece.endsWith('\n') ? '' : '\n'}${closing(open)}`;
    pieces.push(piece);
    current = open === undefined ? [] : Array.from(`${open.replace(/\n$/, '')}\n`);
    openAtStart = open;
  };
  for (const line of lines) {
    let rest = Array.from(line);
    const marker = fence.exec(line)?.[1];
    const opensOrCloses = marker !== undefined;
    while (rest.length > 0) {
      // Room for the closing fence when this piece ends inside a code block.
      const afterLine = opensOrCloses ? (open === undefined ? line : undefined) : open;
      const reserve = afterLine === undefined ? 0 : closing(afterLine).length + 1;
      const room = maxChars - current.length - reserve;
      if (rest.length <= room) {
        current.push(...rest);
        rest = [];
      } else if (current.length > (openAtStart === undefined ? 0 : Array.from(openAtStart).length + 1)) {
        flush();
      } else {
        // One line longer than a message: cut it.
        const cut = Math.max(1, room);
        current.push(...rest.slice(0, cut));
        rest = rest.slice(cut);
        flush();
      }
    }
    if (opensOrCloses) open = open === undefined ? line.replace(/\n$/, '') : undefined;
  }
  if (current.length > 0) pieces.push(current.join(''));
  return pieces;
}

function fenceClose(openLine: string): string {
  return fence.exec(openLine)?.[1] ?? '```';
}

/**
 * Markdown (the model's output) as Slack's mrkdwn (docs/channels.md "Slack"): `*bold*`, `_italic_`, `~strike~`,
 * `<url|text>` links, inline code and ``` blocks (without a language, which Slack does not take), headings as bold
 * lines, `-`/`*` list items as bullets. `&`, `<` and `>` are escaped everywhere (in code too, as Slack asks), so
 * nothing the model writes can become a mention (`<!channel>`) or a link it did not write as one.
 */
export function toMrkdwn(markdown: string): string {
  const out: string[] = [];
  let fence = false;
  for (const line of markdown.split('\n')) {
    const opener = /^\s*```/.exec(line);
    if (opener) {
      // An opening fence loses its language; a closing one stays as it is.
      out.push(fence ? escapeMrkdwn(line) : '```');
      fence = !fence;
      continue;
    }
    out.push(fence ? escapeMrkdwn(line) : inline(line));
  }
  return out.join('\n');
}

function escapeMrkdwn(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

/** One line outside a code block: its inline code spans kept (escaped), the rest converted. */
function inline(line: string): string {
  const heading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
  if (heading) return `*${spans(heading[1] ?? '').replaceAll('*', '')}*`;
  const item = /^(\s*)[-*+]\s+(.*)$/.exec(line);
  if (item) return `${item[1] ?? ''}• ${spans(item[2] ?? '')}`;
  return spans(line);
}

function spans(text: string): string {
  return text
    .split(/(`[^`\n]+`)/)
    .map((part, index) => (index % 2 === 1 ? escapeMrkdwn(part) : markup(part)))
    .join('');
}

/** Links, bold, italic and strike of text without code. Placeholders keep converted bold from being read as italic. */
function markup(text: string): string {
  const links: string[] = [];
  const bolds: string[] = [];
  let result = text.replace(/\[([^\]\n]+)\]\((https?:\/\/[^\s)]+)\)/g, (_all, label: string, url: string) => {
    links.push(`<${url.replaceAll('>', '%3E').replaceAll('|', '%7C')}|${escapeMrkdwn(label).replaceAll('|', '¦')}>`);
    return `\uE000L${links.length - 1}\uE001`;
  });
  result = escapeMrkdwn(result);
  result = result.replace(/(\*\*|__)(?=\S)([^\n]*?\S)\1/g, (_all, _mark: string, inner: string) => {
    bolds.push(`*${inner}*`);
    return `\uE000B${bolds.length - 1}\uE001`;
  });
  result = result.replace(/(^|[^\w*])\*(?=\S)([^*\n]*?\S)\*(?!\w)/g, '$1_$2_');
  result = result.replace(/~~(?=\S)([^\n]*?\S)~~/g, '~$1~');
  return result.replace(/\uE000([LB])(\d+)\uE001/g, (_all, kind: string, index: string) =>
    kind === 'L' ? (links[Number(index)] ?? '') : (bolds[Number(index)] ?? ''),
  );
}

/**
 * Text in pieces of at most `maxChars` characters, cut at a line break where there is one; a piece that ends inside
 * a ``` block closes it and the next reopens it, so each shows as code on its own.
 */
export function splitMrkdwn(text: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let rest = Array.from(text);
  let reopen = false;
  const fenceRoom = 4;
  while (rest.length > maxChars - (reopen ? fenceRoom : 0)) {
    const room = maxChars - (reopen ? fenceRoom : 0) - fenceRoom;
    const window = rest.slice(0, room);
    const newline = window.lastIndexOf('\n');
    const cut = newline > room / 2 ? newline + 1 : room;
    let piece = `${reopen ? '```\n' : ''}${rest.slice(0, cut).join('')}`;
    const open = openFence(piece);
    if (open) piece = `${piece}${piece.endsWith('\n') ? '' : '\n'}\`\`\``;
    pieces.push(piece);
    reopen = open;
    rest = rest.slice(cut);
  }
  if (rest.length > 0) pieces.push(`${reopen ? '```\n' : ''}${rest.join('')}`);
  return pieces;
}

/** Whether a text ends inside a ``` block (an odd number of fences). */
function openFence(text: string): boolean {
  return (text.match(/```/g)?.length ?? 0) % 2 === 1;
}

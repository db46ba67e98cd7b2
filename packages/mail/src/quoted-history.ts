/**
 * The message without the history it quotes: `>` lines and the `On … wrote:` line before them. What was said
 * before is in the earlier messages; the classification is about what this one says, and quoted threads can be most
 * of a reply's length.
 */
export function withoutQuotedHistory(body: string): string {
  const lines = body.split('\n');
  const kept: string[] = [];
  for (const [index, line] of lines.entries()) {
    if (/^\s*>/.test(line)) continue;
    // The attribution line (`On Mon, 3 Mar 2026, Ana <ana@…> wrote:`) right before a quote.
    const next = lines.slice(index + 1).find((candidate) => candidate.trim() !== '') ?? '';
    if (/wrote:\s*$/.test(line) && /^\s*>/.test(next)) continue;
    kept.push(line);
  }
  return kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

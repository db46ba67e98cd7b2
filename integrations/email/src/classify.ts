import { classifyItemNote, fenceUntrusted } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';

/**
 * `email.inbox.classify` (`{note}`): one structured LLM call answers every classification of the platform over the
 * fenced message. A message classified before is not asked again unless its content changed.
 */
export async function classify(context: EmailContext<{ note: string }>) {
  return classifyItemNote(context, (data) => ({
    role: 'You classify email for its owner.',
    about: 'the message below',
    fenced: fenceUntrusted(
      {
        from: String(data.from ?? ''),
        subject: String(data.subject ?? ''),
        body: withoutQuotedHistory(String(data.body_excerpt ?? '')),
      },
      { maxCharsByField: { from: 300, subject: 500, body: 6_000 } },
    ),
  }));
}

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

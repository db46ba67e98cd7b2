import { withoutQuotedHistory } from '@assistant/mail';
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

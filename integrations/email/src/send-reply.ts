import type { ActPayload } from '@assistant/sdk';
import { composeReply, replyRecipient } from './compose-reply.ts';
import type { EmailContext } from './email-settings.ts';
import { sendRawMail, smtpIdentity } from './smtp-transport.ts';

/**
 * Sends the reply through the instance's `smtp`, threaded under the original: the message composed by
 * `composeReply` (as drafts are), to the envelope recipient given explicitly, the sender's one address.
 */
export async function sendReply(
  context: EmailContext<ActPayload>,
  original: Record<string, unknown>,
  text: string,
): Promise<void> {
  const raw = await composeReply({ from: smtpIdentity(context.instance.settings).from, original, text });
  await sendRawMail(context.instance.settings, {
    to: replyRecipient(original).address,
    raw,
    what: 'sending the reply',
  });
}

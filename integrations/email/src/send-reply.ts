import { type ActPayload, RetryableError } from '@assistant/sdk';
import { composeReply, replyRecipient } from './compose-reply.ts';
import type { EmailContext } from './email-settings.ts';
import { smtpTransport } from './smtp-transport.ts';

/**
 * Sends the reply through the instance's `smtp`, threaded under the original: the message composed by
 * `composeReply` (as drafts are), to the envelope recipient given explicitly, the sender's one address.
 */
export async function sendReply(
  context: EmailContext<ActPayload>,
  original: Record<string, unknown>,
  text: string,
): Promise<void> {
  const { smtp, from, envelopeFrom, transporter } = smtpTransport(context.instance.settings);
  const raw = await composeReply({ from, original, text });
  try {
    await transporter.sendMail({ envelope: { from: envelopeFrom, to: [replyRecipient(original).address] }, raw });
  } catch (error) {
    throw new RetryableError(`sending the reply through ${smtp.host}:${smtp.port} failed: ${(error as Error).message}`);
  } finally {
    transporter.close();
  }
}

import { type ActPayload, RetryableError } from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';
import { smtpTransport } from './smtp-transport.ts';

/** Sends the reply through the instance's `smtp`, threaded under the original. */
export async function sendReply(
  context: EmailContext<ActPayload>,
  original: Record<string, unknown>,
  text: string,
): Promise<void> {
  const { smtp, from, transporter } = smtpTransport(context.instance.settings);
  const subject = String(original.subject ?? '');
  const messageId = String(original.message_id ?? '');
  try {
    await transporter.sendMail({
      from,
      to: String(original.from_address ?? original.from ?? ''),
      subject: /^re:/i.test(subject) ? subject : `Re: ${subject}`,
      text,
      ...(messageId ? { inReplyTo: messageId, references: messageId } : {}),
    });
  } catch (error) {
    throw new RetryableError(`sending the reply through ${smtp.host}:${smtp.port} failed: ${(error as Error).message}`);
  } finally {
    transporter.close();
  }
}

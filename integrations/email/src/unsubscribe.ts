import { type ActPayload, RetryableError, UnrecoverableError } from '@assistant/sdk';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { EmailContext } from './email-settings.ts';
import { oneClickUnsubscribe } from './safe-unsubscribe.ts';
import { smtpTransport } from './smtp-transport.ts';
import { chooseUnsubscribe } from './unsubscribe-target.ts';

/** The whole text of a mailto: unsubscribe: nothing of it comes from the sender. */
export const unsubscribeMail = { subject: 'unsubscribe', text: 'unsubscribe\n' } as const;

/**
 * `unsubscribe`: RFC 8058 one-click (a POST to the https: target, through `oneClickUnsubscribe`'s checks) where the
 * sender offers it, otherwise a fixed "unsubscribe" mail to the one mailto: address. Returns how it was done. A
 * refusal (an unsafe target, a target other than the note showed when it was approved) is recorded on the note as
 * `unsubscribe_refused` and in the human log, and fails the task without retries.
 */
export async function unsubscribe(context: EmailContext<ActPayload>, data: Record<string, unknown>): Promise<string> {
  const targets = Array.isArray(data.list_unsubscribe) ? data.list_unsubscribe.map(String) : [];
  const choice = chooseUnsubscribe({ targets, oneClick: data.list_unsubscribe_one_click === true });
  if (choice.method === 'none') return refuse(context, choice.reason);
  // The approval was given for what the note showed; a note edited since then does not redirect it.
  const shown = data.unsubscribe_target;
  if (typeof shown === 'string' && shown !== choice.target) {
    return refuse(
      context,
      `refused: the note shows ${shown} as the unsubscribe target, but it would go to ${choice.target}`,
    );
  }
  if (choice.method === 'one-click') {
    try {
      await oneClickUnsubscribe({
        url: choice.url,
        signal: context.signal,
        timeoutMs: context.instance.settings.connect_timeout,
      });
    } catch (error) {
      if (error instanceof UnrecoverableError) return refuse(context, error.message);
      throw error;
    }
    return `one-click POST to ${choice.target}`;
  }
  const { smtp, from, envelopeFrom, transporter } = smtpTransport(context.instance.settings);
  try {
    const raw = await new MailComposer({ from, to: choice.address, ...unsubscribeMail }).compile().build();
    await transporter.sendMail({ envelope: { from: envelopeFrom, to: [choice.address] }, raw });
  } catch (error) {
    throw new RetryableError(
      `sending the unsubscribe mail through ${smtp.host}:${smtp.port} failed: ${(error as Error).message}`,
      { cause: error },
    );
  } finally {
    transporter.close();
  }
  return `mail to ${choice.address}`;
}

async function refuse(context: EmailContext<ActPayload>, reason: string): Promise<never> {
  await context.notes.update(context.payload.item, { set: { unsubscribe_refused: reason } });
  await context.log.human(`did not unsubscribe: ${reason}`, { link: context.payload.item });
  throw new UnrecoverableError(reason);
}

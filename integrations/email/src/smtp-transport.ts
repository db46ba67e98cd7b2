import { SmtpSendError, sendSmtp } from '@assistant/mail';
import { ActionNotTakenError, RetryableError, UnrecoverableError } from '@assistant/sdk';
import addressparser from 'nodemailer/lib/addressparser/index.js';
import type { EmailSettings } from './email-settings.ts';

/**
 * Who the instance sends as, for `send_reply` and mailto: unsubscribes; an error when `smtp:` is not set. `from` is
 * the From header as configured (`Alice <alice@example.com>` or an address), `envelopeFrom` its address alone.
 */
export function smtpIdentity(settings: EmailSettings) {
  const smtp = settings.smtp;
  if (!smtp) throw new UnrecoverableError('sending mail needs `smtp:` settings on this email instance');
  const from = smtp.from ?? settings.username ?? '';
  const [first] = addressparser(from, { flatten: true });
  return { smtp, from, envelopeFrom: first?.address ?? from };
}

/** How long an action waits for a mail server that is down or said "try later" before it tries again. */
export const outageRetryMs = 60_000;

/**
 * Sends one composed message to one recipient through the instance's `smtp`, step by step (connect, STARTTLS when
 * offered, login, then the message), so that a failure says whether the message can have left:
 * - before the message (no connection, no greeting, TLS or login refused) or refused with a reply (the sender, the
 *   recipient, the content): ActionNotTakenError. Nothing was sent; `actOnce` forgets the attempt and the task is
 *   retried, so an SMTP outage of some minutes delays a reply instead of losing it;
 * - the connection broke while the message was on its way: a plain RetryableError. It may have left, and `actOnce`
 *   turns that into a failure a person looks at, never a second copy.
 */
export async function sendRawMail(
  settings: EmailSettings,
  options: { to: string; raw: string | Buffer; what: string },
): Promise<void> {
  const { smtp, envelopeFrom } = smtpIdentity(settings);
  try {
    await sendSmtp({
      server: {
        host: smtp.host,
        port: smtp.port,
        tls: smtp.tls,
        ...(smtp.username && smtp.password?.isSet ? { username: smtp.username, password: smtp.password.reveal() } : {}),
      },
      connectTimeoutMs: settings.connect_timeout,
      from: envelopeFrom,
      to: options.to,
      raw: options.raw,
    });
  } catch (error) {
    if (!(error instanceof SmtpSendError)) throw error;
    const text = `${options.what} through ${smtp.host}:${smtp.port} failed: ${error.message}`;
    // EENVELOPE: MAIL FROM, RCPT TO or DATA refused before the content; EMESSAGE: the content refused with a reply.
    if (!error.notSent) throw new RetryableError(text, { cause: error.cause });
    // The server down or saying "try later" (4xx): wait for it, however long, without spending attempts. A refused
    // login or a permanent refusal (5xx) is retried after the backoff and fails once attempts run out.
    const { stage, code, responseCode } = error;
    const outage =
      (stage === 'session' && code !== 'EAUTH') ||
      (responseCode !== undefined && responseCode >= 400 && responseCode < 500);
    throw new ActionNotTakenError(text, {
      cause: error.cause,
      ...(outage ? { retryAtMs: Date.now() + outageRetryMs } : {}),
    });
  }
}

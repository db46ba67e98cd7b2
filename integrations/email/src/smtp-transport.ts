import { UnrecoverableError } from '@assistant/sdk';
import { createTransport } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser/index.js';
import type { EmailSettings } from './email-settings.ts';

/**
 * The instance's SMTP transport, for `send_reply` and mailto: unsubscribes; an error when `smtp:` is not set. `from`
 * is the From header as configured (`Alice <alice@example.com>` or an address), `envelopeFrom` its address alone.
 */
export function smtpTransport(settings: EmailSettings) {
  const smtp = settings.smtp;
  if (!smtp) throw new UnrecoverableError('sending mail needs `smtp:` settings on this email instance');
  const from = smtp.from ?? settings.username ?? '';
  const [first] = addressparser(from, { flatten: true });
  return {
    smtp,
    from,
    envelopeFrom: first?.address ?? from,
    transporter: createTransport({
      host: smtp.host,
      port: smtp.port,
      secure: smtp.tls,
      ...(smtp.username && smtp.password?.isSet ? { auth: { user: smtp.username, pass: smtp.password.reveal() } } : {}),
      connectionTimeout: settings.connect_timeout,
      greetingTimeout: settings.connect_timeout,
      socketTimeout: settings.connect_timeout * 4,
    }),
  };
}

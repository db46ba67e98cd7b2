import { isPlainAddress } from '@assistant/mail';
import { UnrecoverableError } from '@assistant/sdk';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';

export interface ComposeReplyOptions {
  /** The owner's address (`alice@example.com` or `Alice <alice@example.com>`), from the instance's settings. */
  from: string;
  /** The note's data of the message answered: `from`, `from_address`, `subject`, `message_id`. */
  original: Record<string, unknown>;
  /** The reply text. */
  text: string;
}

/**
 * A well-formed Message-ID: `<left@right>` of printable characters, no spaces, line breaks or angle brackets. The left
 * part has no `@`, so there is one way to split a value and matching takes linear time: with `@` on both sides, a
 * stranger's `<@@@@…` of 40,000 characters took seconds (quadratic backtracking) and blocked the worker (issue 30).
 * Values longer than a header line may be (998 characters, RFC 5322) are not looked at.
 */
const messageIdPattern = /^<[\x21-\x3b\x3d\x3f\x41-\x7e]+@[\x21-\x3b\x3d\x3f-\x7e]+>$/;
const maxMessageIdChars = 998;

/**
 * A plain-text reply as RFC 5322, threaded under the original (In-Reply-To, References), for the draft saved over
 * IMAP or in a Maildir and for the reply sent over SMTP alike. Everything from the original (the sender's name,
 * the subject, the Message-ID) is mail a stranger wrote: nodemailer's MailComposer writes each header, encoding and
 * folding values itself, the recipient is the one plain address of the sender, line breaks in the subject and the
 * name become spaces, and a Message-ID that is not well-formed is not used for threading. No value can start a
 * header of its own.
 */
export async function composeReply(options: ComposeReplyOptions): Promise<Buffer> {
  const { original } = options;
  const to = replyRecipient(original);
  const subject = singleLine(String(original.subject ?? ''));
  const messageId = String(original.message_id ?? '').trim();
  const threaded = messageId.length <= maxMessageIdChars && messageIdPattern.test(messageId);
  const composer = new MailComposer({
    from: options.from,
    to,
    subject: /^re:/i.test(subject) ? subject : `Re: ${subject}`,
    text: options.text,
    ...(threaded ? { inReplyTo: messageId, references: messageId } : {}),
  });
  return composer.compile().build();
}

/** The sender of the original as one recipient: its plain address and, apart, its display name. */
export function replyRecipient(original: Record<string, unknown>): { name: string; address: string } {
  const address = String(original.from_address ?? '').trim();
  if (!isPlainAddress(address)) {
    throw new UnrecoverableError(
      `cannot reply to ${JSON.stringify(address.slice(0, 200))}: not a single plain address`,
    );
  }
  // The note's `from` is `Name <address>`; the name is only ever a display name, never parsed for addresses.
  const from = String(original.from ?? '');
  const suffix = ` <${address}>`;
  const name = from.toLowerCase().endsWith(suffix.toLowerCase()) ? singleLine(from.slice(0, -suffix.length)) : '';
  return { name, address };
}

function singleLine(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

export interface ComposeReplyOptions {
  /** The owner's address. */
  from: string;
  /** The note's data of the message answered: `from`, `from_address`, `subject`, `message_id`. */
  original: Record<string, unknown>;
  /** The reply text. */
  text: string;
}

/** A plain-text reply as RFC 5322, threaded under the original (In-Reply-To, References). */
export async function composeReply(options: ComposeReplyOptions): Promise<string> {
  const { from, original, text } = options;
  const subject = String(original.subject ?? '');
  const messageId = String(original.message_id ?? '');
  const headers = [
    `From: ${from}`,
    `To: ${String(original.from ?? '')}`,
    `Subject: ${encodeHeader(/^re:/i.test(subject) ? subject : `Re: ${subject}`)}`,
    `Date: ${new Date().toUTCString()}`,
    ...(messageId ? [`In-Reply-To: ${messageId}`, `References: ${messageId}`] : []),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
  ];
  return `${headers.join('\r\n')}\r\n\r\n${text.replace(/\r?\n/g, '\r\n')}\r\n`;
}

function encodeHeader(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

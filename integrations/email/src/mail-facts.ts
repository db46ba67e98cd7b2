import { type Authentication, type AuthenticationVerdicts, trustedAuthentication } from '@assistant/mail';
import type { AddressObject, ParsedMail } from 'mailparser';
import { chooseUnsubscribe } from './unsubscribe-target.ts';

/**
 * What the email integration knows about a message without asking an LLM: the deterministic fields automations test
 * (`is_noreply`, `from_domain`, `authentication`, …) and what the note shows. Pure: the same parsed message always
 * gives the same facts.
 */
export interface MailFacts {
  message_id: string;
  from: string;
  from_address: string;
  from_domain: string;
  to: string[];
  subject: string;
  /** ISO 8601; the Date header, or undefined when it is missing or unreadable. */
  date?: string;
  is_noreply: boolean;
  is_calendar_event: boolean;
  has_attachments: boolean;
  attachments: string[];
  has_list_unsubscribe: boolean;
  /** The List-Unsubscribe targets (https: and mailto:), in header order. */
  list_unsubscribe: string[];
  /** RFC 8058 one-click unsubscribe is offered (List-Unsubscribe-Post). */
  list_unsubscribe_one_click: boolean;
  /**
   * What `unsubscribe` would do: `one-click` (an https: POST), `mailto` (a fixed mail to one address) or `none`
   * (it would be refused: no usable target).
   */
  unsubscribe_method: 'one-click' | 'mailto' | 'none';
  /** The host the one-click POST goes to, or the address the mail goes to: what an approval is about. */
  unsubscribe_target?: string;
  /**
   * From the Authentication-Results headers of the configured `authserv_ids` only: `fail` when DKIM, SPF or DMARC
   * failed; `pass` when one passed and none failed; `none` when our server checked and found neither; `unknown`
   * when no header of ours is there (or no authserv-id is configured).
   */
  authentication: Authentication;
  authentication_results: AuthenticationVerdicts;
  /** The authserv-id of the header trusted. */
  authenticated_by?: string;
  is_reply: boolean;
  in_reply_to?: string;
  /** The text of the message (the HTML's text when there is no plain part), cut at `maxExcerpt` characters. */
  body_excerpt: string;
  body_length: number;
}

const noreplyPattern =
  /^(no[-_.]?reply|do[-_.]?not[-_.]?reply|notifications?|notify|mailer[-_.]?daemon|bounces?|postmaster|alerts?)([+-].*)?$/i;

export interface MailFactsOptions {
  /** Of `body_excerpt`, in characters. @default 2000 */
  maxExcerpt?: number;
  /** The authserv-ids of the owner's own mail servers, whose Authentication-Results are trusted. @default [] */
  authservIds?: readonly string[];
}

export function mailFacts(parsed: ParsedMail, options: MailFactsOptions = {}): MailFacts {
  const from = firstAddress(parsed.from);
  const fromAddress = (from?.address ?? '').toLowerCase();
  const [localPart = '', domain = ''] = fromAddress.split('@');
  const headers = parsed.headers;
  const unsubscribe = rawHeader(parsed, 'list-unsubscribe');
  const targets = [...unsubscribe.matchAll(/<([^>]+)>/g)]
    .map((match) => match[1] ?? '')
    .filter((target) => /^(https?:|mailto:)/i.test(target));
  const oneClick = /one-click/i.test(rawHeader(parsed, 'list-unsubscribe-post'));
  const unsubscribeChoice = chooseUnsubscribe({ targets, oneClick });
  const authentication = trustedAuthentication(
    parsed.headerLines.map((line) => ({ key: line.key, value: unfoldedValue(line.line) })),
    options.authservIds ?? [],
  );
  const text = (parsed.text ?? (typeof parsed.html === 'string' ? htmlToText(parsed.html) : ''))
    .replace(/\r\n/g, '\n')
    .trim();
  const maxExcerpt = options.maxExcerpt ?? 2_000;
  const attachments = parsed.attachments ?? [];
  const calendar =
    attachments.some((attachment) => /^(text\/calendar|application\/ics)/i.test(attachment.contentType)) ||
    /text\/calendar/i.test(headerText(headers.get('content-type')));
  return {
    message_id: parsed.messageId ?? '',
    from: from?.name ? `${from.name} <${fromAddress}>` : fromAddress,
    from_address: fromAddress,
    from_domain: domain,
    to: addresses(parsed.to),
    subject: parsed.subject ?? '',
    ...(parsed.date && !Number.isNaN(parsed.date.getTime()) ? { date: parsed.date.toISOString() } : {}),
    is_noreply: noreplyPattern.test(localPart),
    is_calendar_event: calendar,
    has_attachments: attachments.some((attachment) => attachment.contentDisposition === 'attachment'),
    attachments: attachments
      .filter((attachment) => attachment.contentDisposition === 'attachment')
      .map((attachment) => attachment.filename ?? attachment.contentType),
    has_list_unsubscribe: targets.length > 0,
    list_unsubscribe: targets,
    list_unsubscribe_one_click: oneClick,
    unsubscribe_method: unsubscribeChoice.method,
    ...(unsubscribeChoice.method === 'none' ? {} : { unsubscribe_target: unsubscribeChoice.target }),
    ...authentication,
    is_reply: Boolean(parsed.inReplyTo),
    ...(parsed.inReplyTo ? { in_reply_to: parsed.inReplyTo } : {}),
    body_excerpt: text.length > maxExcerpt ? `${text.slice(0, maxExcerpt)}…` : text,
    body_length: text.length,
  };
}

function firstAddress(
  value: AddressObject | AddressObject[] | undefined,
): { name: string; address?: string | undefined } | undefined {
  const list = Array.isArray(value) ? value : value ? [value] : [];
  const [first] = list.flatMap((entry) => entry.value);
  return first ? { name: first.name, address: first.address } : undefined;
}

/**
 * A header's raw value (all occurrences joined), as sent: mailparser turns some headers into structures that lose
 * parts of them (List-Unsubscribe keeps one URL), and these are read as text anyway.
 */
function rawHeader(parsed: ParsedMail, name: string): string {
  return parsed.headerLines
    .filter((line) => line.key === name)
    .map((line) => unfoldedValue(line.line))
    .join(', ');
}

/** A raw header line's value, unfolded. */
function unfoldedValue(line: string): string {
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
}

function addresses(value: AddressObject | AddressObject[] | undefined): string[] {
  const list = Array.isArray(value) ? value : value ? [value] : [];
  return list
    .flatMap((entry) => entry.value)
    .flatMap((address) => (address.address ? [address.address.toLowerCase()] : []));
}

function headerText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(headerText).join(', ');
  if (value && typeof value === 'object') {
    const structured = value as { value?: unknown; params?: Record<string, unknown> };
    if (typeof structured.value === 'string') return structured.value;
    if (structured.value && typeof structured.value === 'object') return JSON.stringify(structured.value);
  }
  return value === undefined || value === null ? '' : String(value);
}

function htmlToText(html: string): string {
  return html
    .replace(/<(script|style)[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<br\s*\/?>|<\/p>|<\/div>|<\/li>/gi, '\n')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/[ \t]+/g, ' ')
    .replace(/\n\s*\n+/g, '\n\n')
    .trim();
}

import { shortHash } from '../stores/memory-notes.ts';

/** A person an item names deterministically (the From of a mail, the author of a GitHub item). */
export interface ItemPerson {
  name?: string;
  email?: string;
  handle?: { platform: string; value: string };
  /**
   * The sender is a machine, not a person: a no-reply or notification address, a bounce, a bulk mail that offers
   * List-Unsubscribe, a GitHub `[bot]`. Consolidation makes no contact of it unless the model names it as a person.
   */
  automated?: true;
}

/**
 * The local parts of addresses no person writes from: the email integration's `is_noreply` test (mail-facts.ts),
 * read again here for notes written before it or without it.
 */
const automatedLocalPart =
  /^(no[-_.]?reply|do[-_.]?not[-_.]?reply|notifications?|notify|mailer[-_.]?daemon|bounces?|postmaster|alerts?)([+-].*)?$/i;

/** Whether an address is one no person writes from (`no-reply@…`, `notifications@github.com`, `bounces+x@…`). */
function isAutomatedAddress(address: string): boolean {
  return automatedLocalPart.test(address.split('@')[0] ?? '');
}

/** One item as consolidation reads it: where it is, which version, and its text as untrusted fields. */
export interface ConsolidationItem {
  /** The note path (`email/…md`), or `chats/<id>.md#<message>` for a chat message. */
  source: string;
  kind: 'email' | 'github' | 'chat';
  /** The content hash: a new version is consolidated again. */
  version: string;
  /** When the item was written (a mail's Date, an issue's `updated_at`, a message's time), as an ISO instant. */
  observedAt: string;
  people: ItemPerson[];
  /** The untrusted text, by field (`subject`, `body`, …), fenced in the prompt. */
  fields: Record<string, string>;
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** `Alice Martin <alice@acme.example>` → name and address; a bare address has no name. */
function parseMailbox(value: string): { name?: string; email?: string } {
  const match = /^\s*"?([^"<]*?)"?\s*<([^>]+)>\s*$/.exec(value);
  if (match) {
    const name = match[1]?.trim();
    const email = match[2]?.trim().toLowerCase();
    return { ...(name ? { name } : {}), ...(email ? { email } : {}) };
  }
  const bare = value.trim();
  return bare.includes('@') ? { email: bare.toLowerCase() } : bare ? { name: bare } : {};
}

/** The first instant among the values that parses, as ISO; `fallback` when none does. */
function instant(values: unknown[], fallback: string): string {
  for (const value of values) {
    const parsed = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
    if (Number.isFinite(parsed)) return new Date(parsed).toISOString();
  }
  return fallback;
}

/**
 * A consolidation item for an email note (`email/…`: `message_id`, `from`, `subject`, `body_excerpt`,
 * `content_hash`) or a GitHub item note (`github/…`: `repo`, `number`, `title`, `author`, `body_excerpt`,
 * `latest_comments`, `content_hash`); undefined for any other note. The version is the note's `content_hash`, so a
 * label or a flag that changed does not consolidate the item again; its text changing does.
 */
export function itemForConsolidation(note: {
  path: string;
  data: Record<string, unknown>;
  body: string;
}): ConsolidationItem | undefined {
  const { path, data, body } = note;
  const version = text(data.content_hash) || shortHash(body);
  if (path.startsWith('email/') && (typeof data.message_id === 'string' || typeof data.from === 'string')) {
    const from = parseMailbox(text(data.from));
    const address = text(data.from_address).trim().toLowerCase() || from.email;
    // A bulk mail (it offers List-Unsubscribe: a newsletter, a shop) comes from a sender, not a correspondent.
    const automated =
      data.is_noreply === true || data.has_list_unsubscribe === true || (address ? isAutomatedAddress(address) : false);
    const person: ItemPerson = {
      ...(from.name ? { name: from.name } : {}),
      ...(address ? { email: address } : {}),
      ...(automated ? { automated: true } : {}),
    };
    return {
      source: path,
      kind: 'email',
      version,
      observedAt: instant([data.date, data.collected_at], '1970-01-01T00:00:00.000Z'),
      people: person.name || person.email ? [person] : [],
      fields: {
        from: text(data.from),
        subject: text(data.subject),
        body: text(data.body_excerpt) || body,
      },
    };
  }
  if (path.startsWith('github/') && typeof data.number === 'number') {
    const author = text(data.author).trim();
    const comments = Array.isArray(data.latest_comments) ? data.latest_comments : [];
    const thread = comments
      .map((comment) => {
        const entry = (comment ?? {}) as Record<string, unknown>;
        return `@${text(entry.author)}, ${text(entry.at)}:\n${text(entry.text)}`;
      })
      .join('\n\n');
    return {
      source: path,
      kind: 'github',
      version,
      observedAt: instant([data.updated_at, data.created_at, data.collected_at], '1970-01-01T00:00:00.000Z'),
      people: author
        ? [{ handle: { platform: 'github', value: author }, ...(/\[bot\]$/i.test(author) ? { automated: true } : {}) }]
        : [],
      fields: {
        item: `${data.kind === 'pull' ? 'Pull request' : 'Issue'} ${text(data.repo)}#${String(data.number)} by @${author}`,
        title: text(data.title),
        body: text(data.body_excerpt),
        ...(thread ? { comments: thread } : {}),
      },
    };
  }
  return undefined;
}

/**
 * A consolidation item for one chat message: its source is `chats/<conversation>.md#<message id>`, its version a
 * hash of the text (an edited message is read again). The owner is the writer, so it names no person itself.
 */
export function chatMessageItem(message: {
  conversation: string;
  messageId: string;
  text: string;
  at: string;
}): ConsolidationItem {
  return {
    source: `chats/${message.conversation}.md#${message.messageId}`,
    kind: 'chat',
    version: shortHash(message.text),
    observedAt: instant([message.at], new Date(0).toISOString()),
    people: [],
    fields: { message: message.text },
  };
}

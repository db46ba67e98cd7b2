/** A person an item names deterministically (the From of a mail, the author of a GitHub item). */
export interface ItemPerson {
  name?: string;
  email?: string;
  handle?: { platform: string; value: string };
}

/** One item as consolidation reads it: where it is, which version, and its text as untrusted fields. */
export interface ConsolidationItem {
  /** The note path (`email/…md`), or `chats/<id>.md#<message>` for a chat message. */
  source: string;
  kind: 'email' | 'github' | 'chat';
  /** The content hash: a new version is consolidated again. */
  version: string;
  observedAt: string;
  people: ItemPerson[];
  /** The untrusted text, by field (`subject`, `body`, …), fenced in the prompt. */
  fields: Record<string, string>;
}

/** A consolidation item for an email or GitHub item note; undefined for any other note. */
export function itemForConsolidation(_note: {
  path: string;
  data: Record<string, unknown>;
  body: string;
}): ConsolidationItem | undefined {
  throw new Error('not implemented yet');
}

/** A consolidation item for one chat message. */
export function chatMessageItem(_message: {
  conversation: string;
  messageId: string;
  text: string;
  at: string;
}): ConsolidationItem {
  throw new Error('not implemented yet');
}

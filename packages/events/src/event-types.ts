import type { z } from 'zod';

/**
 * The types a hook's `when:` can test on an event field: the same as the automations' condition language
 * (packages/automations/src/conditions.ts `FieldType`).
 */
export type EventFieldType = 'boolean' | 'string' | 'number' | 'date' | 'list';

/**
 * One field of an event's `data` a hook may test. `trusted`: computed from our own state (a task's type, a note's
 * path, a schedule's name), not from what an outsider wrote (a mail's From or subject, a GitHub comment). A hook
 * whose fast path tests an untrusted field is not deterministic for irreversible actions (provenance `hybrid`).
 */
export interface EventField {
  type: EventFieldType;
  trusted: boolean;
  description?: string;
}

/** An event type of the registry: a stable dotted name, its payload schema and the fields hooks may test. */
export interface EventTypeDefinition {
  /** `mail.received`, `task.failed`, or an integration's `<integration>.<name>` declared in its manifest. */
  name: string;
  description: string;
  /** The payload schema (`data`); a payload that breaks it is stored with `problem` set and fires nothing. */
  schema: z.ZodType<Record<string, unknown>>;
  /** Fields of `data` (top-level keys) a hook's `when:`/filter may name. */
  fields: Record<string, EventField>;
  /** Where the type was declared: `builtin`, or the integration's name. */
  origin: string;
}

/**
 * One event as stored: one JSON line in `data/events/YYYY-MM-DD.jsonl`.
 * - `id` is deterministic: `ev-` + the first 20 hex digits of sha256(`type` NUL `source` NUL `native_id`), so the
 *   same mail or delivery is the same event, however many times it is reported.
 * - `caused_by` is the lineage: ids of the events (`ev-…`) or tasks (the queue's task ids) that caused it.
 */
export interface EventRecord {
  id: string;
  type: string;
  /** When it was appended, ISO 8601 UTC. */
  at: string;
  /** Who reported it: `email:personal`, `queue`, `notes`, `approvals`, `chat`, `github:work`, `scheduler`, `clock`, `hooks`. */
  source: string;
  /** The source's own id for it: a Message-ID, a delivery GUID, a task id plus state, a minute. */
  native_id: string;
  caused_by?: string[];
  data: Record<string, unknown>;
  /** Set when `data` breaks the type's schema or the type is unknown: stored, shown, and never fires a hook. */
  problem?: string;
}

/** What a producer reports; the ledger computes `id` and `at` and checks `data` against the registry. */
export interface EventInput {
  type: string;
  source: string;
  nativeId: string;
  data: Record<string, unknown>;
  causedBy?: string[];
  /** Defaults to now. */
  at?: string;
}

/**
 * What producers depend on (the worker, the server, integrations): `emit` returns once the event is durable
 * (fsynced). The same id emitted twice, even from two processes, is stored once; the second call returns the stored
 * event with `duplicate: true`.
 */
export interface EventSink {
  emit(input: EventInput): Promise<{ event: EventRecord; duplicate: boolean }>;
}

/** Queries over the ledger, in order of appending. `cursor` is opaque (`YYYY-MM-DD:<byte offset>`). */
export interface EventQuery {
  since?: string;
  until?: string;
  types?: string[];
  /** Only events after this cursor. */
  after?: string;
  /** @default 100 */
  limit?: number;
}

export interface EventPage {
  events: (EventRecord & { cursor: string })[];
  /** Pass as `after` for the next page; undefined when nothing is left. */
  next?: string;
}

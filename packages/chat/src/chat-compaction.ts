import path from 'node:path';
import { ChatEventLog } from './chat-events.ts';
import type { EventLogRetention } from './event-log-compaction.ts';
import { ChatInbox } from './inbox.ts';

/** What keeps the chat stores bounded (the chat instance's `retention` setting, decisions 0077 and 0078). */
export interface ChatRetention {
  events: EventLogRetention;
  /** Answered inbox messages older than this are removed: the window of client-id deduplication. */
  answeredInboxMs: number;
}

/** The defaults of the chat instance's `retention` (docs/configuration.md). */
export const defaultChatRetention: ChatRetention = {
  events: { maxBytes: 1024 * 1024, maxAgeMs: 7 * 24 * 3_600_000, idleMs: 10 * 60_000 },
  answeredInboxMs: 7 * 24 * 3_600_000,
};

export interface ChatCompactionReport {
  /** Event logs compacted, and the bytes of events removed from them. */
  eventLogs: number;
  eventBytes: number;
  /** Answered inbox messages removed. */
  inboxMessages: number;
  /** Leftovers of compactions that died, cleared. */
  recovered: number;
}

/** A compaction older than this is one that died: nothing it does takes this long. */
const staleCompactionMs = 60_000;

/**
 * One housekeeping pass over the chat stores under `directory` (`data/chat`): every conversation's event log and
 * inbox compacted by `retention`, after clearing what compactions that died left behind. Each conversation is
 * compacted on its own; one that fails (a file a person broke) is reported through `onError` and the pass goes on.
 */
export async function compactChat(options: {
  directory: string;
  retention: ChatRetention;
  now?: Date;
  signal?: AbortSignal;
  onError?: (conversationId: string, error: unknown) => void;
}): Promise<ChatCompactionReport> {
  const now = options.now ?? new Date();
  const events = new ChatEventLog({ directory: path.join(options.directory, 'events') });
  const inbox = new ChatInbox({ directory: path.join(options.directory, 'inbox') });
  const report: ChatCompactionReport = { eventLogs: 0, eventBytes: 0, inboxMessages: 0, recovered: 0 };
  report.recovered = await events.recover({ staleMs: staleCompactionMs, now });
  for (const conversationId of await events.conversations()) {
    options.signal?.throwIfAborted();
    try {
      const result = await events.compact(conversationId, { retention: options.retention.events, now });
      if (result.removedBytes > 0) {
        report.eventLogs += 1;
        report.eventBytes += result.removedBytes;
      }
    } catch (error) {
      options.onError?.(conversationId, error);
    }
  }
  for (const conversationId of await inbox.conversations()) {
    options.signal?.throwIfAborted();
    try {
      const { removed } = await inbox.compact(conversationId, {
        answeredRetentionMs: options.retention.answeredInboxMs,
        now,
      });
      report.inboxMessages += removed;
    } catch (error) {
      options.onError?.(conversationId, error);
    }
  }
  return report;
}

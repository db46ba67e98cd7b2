import type { ChatMessage } from '@assistant/llm';
import type { TranscriptMeta, TranscriptStore } from '../transcript/transcript-store.ts';

/** A {@link TranscriptStore} in memory that keeps every save and archive, for assertions. */
export interface MemoryTranscriptStore extends TranscriptStore {
  /** The last saved transcript, or the one given to start from. */
  messages: ChatMessage[] | undefined;
  /** Every save, in order. */
  readonly saves: Array<{ messages: ChatMessage[]; meta: TranscriptMeta }>;
  /** Every batch of messages compression archived, in order. */
  readonly archived: ChatMessage[][];
  archive(compressed: ChatMessage[]): Promise<void>;
}

/** Creates an in-memory transcript store, optionally holding a transcript to resume from. */
export function createMemoryTranscriptStore(initial?: ChatMessage[]): MemoryTranscriptStore {
  const store: MemoryTranscriptStore = {
    messages: initial === undefined ? undefined : structuredClone(initial),
    saves: [],
    archived: [],
    async load() {
      return store.messages === undefined ? undefined : structuredClone(store.messages);
    },
    async save(messages, meta) {
      store.messages = structuredClone(messages);
      store.saves.push({ messages: structuredClone(messages), meta: { ...meta } });
    },
    async archive(compressed) {
      store.archived.push(structuredClone(compressed));
    },
  };
  return store;
}

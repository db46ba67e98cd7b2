import type { ChatMessage } from '@assistant/llm';

/** What the loop writes with every save, so a reader can tell a finished transcript from one cut short by a crash. */
export interface TranscriptMeta {
  /** Model calls made by this run of the loop (a resumed run counts from zero again). */
  steps: number;
  /** `running` while the loop runs; the result status (`completed`, `stopped`, …) on the final save. */
  status: string;
}

/**
 * Where a loop keeps its transcript. The loop saves after every step and once more when it finishes; on start it
 * loads, and a non-empty transcript is continued as it is (the system message and input are not added again), which
 * is how a task resumes after a worker crash.
 */
export interface TranscriptStore {
  /** The saved transcript, or `undefined` (or an empty array) when there is none yet. */
  load(): Promise<ChatMessage[] | undefined>;
  /** Replaces the saved transcript with `messages`. */
  save(messages: ChatMessage[], meta: TranscriptMeta): Promise<void>;
  /** Keeps messages that compression replaced by a summary, so they stay retrievable. Called before the next save. */
  archive?(compressed: ChatMessage[]): Promise<void>;
}

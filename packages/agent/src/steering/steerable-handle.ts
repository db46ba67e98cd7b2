import type { ChatMessage } from '@assistant/llm';
import type { AgentResult } from '../loop/agent-options.ts';

/** Where a loop is: `stopping` from a stop (or timeout) until its result is ready, then `finished`. */
export type HandleStatus = 'running' | 'paused' | 'stopping' | 'finished';

/** A question a tool asked the owner, from any depth of nesting. */
export interface Clarification {
  /** Pass it to `answerClarification`. */
  id: string;
  question: string;
  /** Labels from the top loop to the loop whose tool asked, for example `['task', 'research', 'fetch']`. */
  lineage: readonly string[];
}

/** A progress message a tool sent the owner, from any depth of nesting. */
export interface Notification {
  message: string;
  lineage: readonly string[];
  at: Date;
}

/**
 * Steers a running tool loop and every loop nested in it. Steering actions are written into the transcript as user
 * messages (`[steering] …`, `[interjection] …`) at the next model call, so the model knows what its owner did.
 */
export interface SteerableHandle {
  readonly id: string;
  readonly label: string;
  /** Labels from the top loop down to this one. */
  readonly lineage: readonly string[];
  /**
   * Holds back new model calls and tool starts, here and in every running nested loop. A model call already in
   * flight may finish; its tool calls wait.
   */
  pause(): void;
  /** Lets a paused loop and its running nested loops continue. */
  resume(): void;
  /**
   * Queues a message for the model's next call, here and in every running nested loop. Interjections are delivered
   * in the order given, none is lost: a final answer that arrives while one is queued does not end the loop.
   */
  interject(message: string): void;
  /** Aborts the model call and tools in flight, here and in every nested loop. The result says `stopped`. */
  stop(reason?: string): void;
  /**
   * Answers a question about the work so far with a separate model call (no tools) over a snapshot of this
   * transcript and those of the running nested loops. Does not change the transcript or hold up the loop.
   */
  ask(question: string): Promise<string>;
  /** Resolves when the loop finishes, however it finishes; never rejects. */
  result(): Promise<AgentResult>;
  done(): boolean;
  status(): HandleStatus;
  /**
   * The next question a tool asked, from this loop or any nested loop. All handles of one tree share the top
   * loop's queue. Stays pending when no question comes, so race it with `result()`.
   */
  nextClarification(): Promise<Clarification>;
  /** Resolves the tool's `askCaller` promise. An id whose tool was stopped meanwhile is ignored. */
  answerClarification(id: string, answer: string): void;
  /** The next progress notification from any depth; like `nextClarification`, shared by the tree. */
  nextNotification(): Promise<Notification>;
  /** Loops started by this loop's tools, running or finished, in the order they started. */
  children(): SteerableHandle[];
  /** A copy of the transcript as it is now. */
  transcript(): ChatMessage[];
}

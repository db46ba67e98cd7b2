import type { ChatMessage, ChatModel, TokenUsage } from '@assistant/llm';
import type { SteerableHandle } from '../steering/steerable-handle.ts';
import type { Tool } from '../tools/define-tool.ts';
import type { ToolGate } from '../tools/tool-gate.ts';
import type { TranscriptStore } from '../transcript/transcript-store.ts';
import type { AgentEvent } from './agent-event.ts';

/** When the transcript is summarised to make room in the model's context window. */
export interface CompressionOptions {
  /**
   * Compress before a model call when the estimated tokens exceed this share of the model's context window.
   * @default 0.8
   */
  thresholdRatio?: number;
  /**
   * Messages at the end kept verbatim (more when needed to keep a tool call with its results).
   * @default 6
   */
  keepRecent?: number;
}

/** Options of {@link startAgent}. */
export interface AgentOptions {
  model: ChatModel;
  /** The system message. Not added again when the transcript store returns a saved transcript. */
  system: string;
  /** The task: one user message, or messages to start from. Not added again on resume. */
  input: string | ChatMessage[];
  /** @default [] */
  tools?: Tool[];
  /**
   * Names this loop in lineages and events: `task › research › fetch`.
   * @default 'agent'
   */
  label?: string;
  /** The loop that started this one. Set by `ToolContext.startAgent`; must be a handle made by `startAgent`. */
  parent?: SteerableHandle;
  /**
   * The most model calls this loop makes (summaries for compression and `ask` do not count).
   * @default 20
   */
  maxSteps?: number;
  /** Stops the loop with status `timeout` after this many milliseconds, paused time included. */
  timeoutMs?: number;
  /** Stops the loop with status `budget` before a model call once reported usage reaches the limit. */
  budget?: { tokens?: number };
  /**
   * Tool calls of one step run in parallel, at most this many at once.
   * @default 4
   */
  toolConcurrency?: number;
  /** Loads a saved transcript on start and saves after every step. */
  transcript?: TranscriptStore;
  /** Receives every event of this loop and of the loops nested in it; a listener that throws is ignored. */
  onEvent?: (event: AgentEvent) => void;
  /** @default { thresholdRatio: 0.8, keepRecent: 6 } */
  compression?: CompressionOptions;
  /** @default estimateTokensByCharacters (characters / 4) */
  estimateTokens?: (messages: ChatMessage[]) => number;
  /** Aborting stops the loop like `stop()`, with status `stopped`. */
  signal?: AbortSignal;
  /**
   * Consulted before every tool call (after its arguments are parsed and while the loop is not paused); a refusal
   * becomes the call's answer `error: refused: …` and the loop goes on. A nested loop asks its own gate, then its
   * parent's: it can add to the gate it runs under, never loosen it.
   * @default every call runs (or the parent's gate, for a nested loop)
   */
  gate?: ToolGate;
  /**
   * Told when a question to the caller (`askCaller`, from this loop or one nested in it) starts waiting for its
   * answer, and when it stops waiting (answered, or the loop stopped): a worker gives the task's slot back meanwhile.
   * Only the top loop's is used. @default none
   */
  ownerWait?: OwnerWait;
}

/** See {@link AgentOptions.ownerWait}: `begin` and `end` come in pairs, one pair per question. */
export interface OwnerWait {
  begin(): void;
  /** The answer reaches the tool that asked once what this returns has settled (a worker removes its parked mark). */
  end(): void | Promise<void>;
}

/** How a loop ended. `stopped` is a cancellation by the owner (or an aborted signal), never a failure. */
export type AgentResultStatus = 'completed' | 'stopped' | 'max_steps' | 'timeout' | 'budget' | 'failed';

/** What `result()` resolves with. */
export interface AgentResult {
  status: AgentResultStatus;
  /** The model's final answer; set when the status is `completed`. */
  answer?: string;
  /** Why the loop ended early: the stop reason, the limit reached, or the error. */
  reason?: string;
  /**
   * The error a failed loop ended with, for the caller to rethrow (a model outage, `ModelUnavailableError`, puts the
   * task back to resume from its transcript). Never in the `done` event, which is written to disk.
   */
  error?: unknown;
  /** Model calls made by the loop. */
  steps: number;
  /** Reported usage summed over the loop's model calls, compression summaries included. */
  usage: TokenUsage;
}

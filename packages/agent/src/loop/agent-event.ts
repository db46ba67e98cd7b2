import type { TokenUsage } from '@assistant/llm';
import type { AgentResult } from './agent-options.ts';

/** Fields every event has: which loop it comes from. */
export interface AgentEventSource {
  /** Labels from the top loop to the loop the event comes from. */
  lineage: readonly string[];
  handleId: string;
}

/** A steering action as the loop received it; the matching transcript message follows at the next model call. */
export type SteeringAction = 'pause' | 'resume' | 'interject' | 'stop';

/** Where a paused loop waits. */
export type PausePoint = 'model-call' | 'tool-call' | 'tool-step';

/** What happened, without the source fields. */
export type AgentEventPayload =
  | { type: 'step-started'; step: number }
  /**
   * A piece of the model's reply in this step, as the model writes it (streamed). The pieces of a step joined are the
   * reply's text. `restart: true` (with empty text) means the request is being retried: discard the text of this step
   * received so far. Summaries of compression and `ask` answers are never sent as tokens.
   */
  | { type: 'token'; step: number; text: string; restart?: boolean }
  | { type: 'step-finished'; step: number; toolCalls: number; usage: TokenUsage | undefined }
  | { type: 'tool-started'; step: number; toolCallId: string; toolName: string }
  | { type: 'tool-finished'; step: number; toolCallId: string; toolName: string; succeeded: boolean }
  /** The gate holds the call until the owner decides the approval request `approval` (or it times out). */
  | { type: 'approval-wait'; step: number; toolCallId: string; toolName: string; approval: string }
  /** The gate answered a call that waited: `run` false with the refusal's reason, or true and the tool starts. */
  | {
      type: 'approval-decided';
      step: number;
      toolCallId: string;
      toolName: string;
      approval: string;
      run: boolean;
      reason?: string;
    }
  | { type: 'steering-applied'; action: SteeringAction; message: string }
  /**
   * The loop is paused and waits for resume: before its next model call, before starting a tool, or inside a running
   * tool that called `waitWhilePaused` before its next step.
   */
  | { type: 'waiting-while-paused'; before: PausePoint }
  | { type: 'notification'; message: string }
  | { type: 'clarification'; id: string; question: string }
  | { type: 'compression'; archivedMessages: number; estimatedTokensBefore: number; estimatedTokensAfter: number }
  | { type: 'done'; result: AgentResult };

/**
 * Everything a loop reports, delivered to its own `onEvent` and to those of all its ancestors, so the top sees the
 * whole tree and tells the loops apart by lineage.
 */
export type AgentEvent = AgentEventSource & AgentEventPayload;

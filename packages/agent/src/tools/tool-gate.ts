import type { ToolCall } from '@assistant/llm';
import type { SteerableHandle } from '../steering/steerable-handle.ts';
import type { Tool } from './define-tool.ts';

/** One tool call as the gate sees it: after its arguments were parsed and the loop was not paused. */
export interface ToolGateRequest {
  tool: Tool;
  /** The parsed arguments, as the tool would receive them. */
  input: unknown;
  call: ToolCall;
  /** Aborted when the loop is stopped: a gate waiting for a decision stops waiting. */
  signal: AbortSignal;
  /** The loop making the call (its `lineage` names it). */
  handle: SteerableHandle;
  /**
   * Tells the loop the call waits for a decision (the approval request's id), so it emits `approval-wait` and, once
   * the gate answers, `approval-decided`. A gate that decides at once does not call it.
   */
  waiting(approval: string): void;
}

/** Whether the call runs; a refusal's reason reaches the model as `error: refused: <reason>`. */
export type ToolGateDecision = { run: true } | { run: false; reason: string };

/**
 * Decides, before each tool call, whether it runs: the one place every loop's tool calls pass through (chat turns,
 * system.agent, research, MCP tools), so a tool cannot reach the world by being called from a loop the policy forgot.
 */
export type ToolGate = (request: ToolGateRequest) => Promise<ToolGateDecision>;

/**
 * A nested loop's gate: its own, then its parent's. A tool that starts a loop can add a gate of its own but never
 * loosen the one it runs under: a call runs only when both let it. The inherited gate is asked last because it may
 * wait for the owner and record the approved call as run.
 */
export function bothGates(inherited: ToolGate | undefined, own: ToolGate | undefined): ToolGate | undefined {
  if (inherited === undefined || own === undefined) return inherited ?? own;
  return async (request) => {
    const first = await own(request);
    return first.run ? inherited(request) : first;
  };
}

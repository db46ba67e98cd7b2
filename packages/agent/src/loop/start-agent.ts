import type { SteerableHandle } from '../steering/steerable-handle.ts';
import { AgentLoop } from './agent-loop.ts';
import type { AgentOptions } from './agent-options.ts';

/**
 * Starts a tool loop and returns its handle at once: the loop sends the transcript to the model, runs the tool calls
 * it asks for (in parallel, under `toolConcurrency`), feeds the results back, applies steering, and repeats until
 * the model answers without tool calls or a limit, stop or error ends it. `result()` tells which; it never rejects.
 *
 * Throws a `TypeError` at once for invalid options (a non-positive `maxSteps`, duplicate tool names, a `parent`
 * that is not a loop handle).
 */
export function startAgent(options: AgentOptions): SteerableHandle {
  return new AgentLoop(options);
}

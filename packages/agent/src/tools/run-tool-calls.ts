import { fenceUntrusted, type ToolCall } from '@assistant/llm';
import { createConcurrencyLimit } from '../internal/concurrency-limit.ts';
import { describeError } from '../internal/describe-error.ts';
import type { Tool, ToolContext } from './define-tool.ts';
import { parseToolArguments } from './parse-tool-arguments.ts';
import type { ToolGate, ToolGateDecision, ToolGateRequest } from './tool-gate.ts';

/** What one tool call gave: the tool message content, and whether the tool ran and returned. */
export interface ToolCallOutcome {
  call: ToolCall;
  content: string;
  succeeded: boolean;
}

/** Options of {@link runToolCalls}. */
export interface RunToolCallsOptions {
  calls: readonly ToolCall[];
  /** Every tool of the loop, by name. */
  tools: ReadonlyMap<string, Tool>;
  /** The tools offered in this step; a call to any other is answered with an error. */
  offered: readonly Tool[];
  concurrency: number;
  /** Resolves when a tool may start (the loop is not paused); rejects when the loop is stopped. */
  waitUntilStartAllowed(): Promise<void>;
  signal: AbortSignal;
  context: ToolContext;
  /** Decides whether each call runs; absent, every call runs. */
  gate?: ToolGate | undefined;
  /** The gate holds `call` until approval request `approval` is decided. */
  onApprovalWait?(call: ToolCall, approval: string): void;
  /** The gate answered a call it held. */
  onApprovalDecided?(call: ToolCall, approval: string, decision: ToolGateDecision): void;
  onStarted(call: ToolCall): void;
  onFinished(outcome: ToolCallOutcome): void;
}

/**
 * Runs the tool calls of one step in parallel, at most `concurrency` at once, and answers every call in call order.
 * Never rejects: invalid calls, unknown tools and thrown errors become `error: …` messages the model can act on.
 * When the loop is stopped, calls still running are answered at once with an error instead of being awaited, so a
 * tool that ignores its signal cannot hold the loop open; every call still gets an answer, which keeps the
 * transcript valid for a resumed run.
 */
export async function runToolCalls(options: RunToolCallsOptions): Promise<ToolCallOutcome[]> {
  const limit = createConcurrencyLimit(options.concurrency);
  const offered = new Set(options.offered.map((tool) => tool.name));

  const runOne = async (call: ToolCall): Promise<ToolCallOutcome> => {
    const tool = options.tools.get(call.name);
    if (tool === undefined || !offered.has(call.name)) {
      return { call, content: `error: ${unavailableMessage(call.name, tool, options.offered)}`, succeeded: false };
    }
    const parsed = parseToolArguments(call, tool.input);
    if (!parsed.ok) return { call, content: `error: ${parsed.error}`, succeeded: false };
    // The gate is asked outside the concurrency limit: a call waiting hours for its approval must not hold back the
    // calls of the same step that may run now. It is asked once the loop is not paused, so a paused loop asks
    // nobody for anything.
    if (options.gate !== undefined) {
      await options.waitUntilStartAllowed();
      const decision = await askToolGate(options.gate, {
        tool,
        input: parsed.input,
        call,
        signal: options.signal,
        handle: options.context.handle,
        onWait: (approval) => options.onApprovalWait?.(call, approval),
        onDecided: (approval, decided) => options.onApprovalDecided?.(call, approval, decided),
      });
      if (!decision.run) {
        return { call, content: fenced(tool, `error: refused: ${decision.reason}`), succeeded: false };
      }
    }
    return limit(async () => {
      await options.waitUntilStartAllowed();
      options.onStarted(call);
      try {
        const value = await tool.run(parsed.input, { ...options.context, toolCallId: call.id });
        const outcome = { call, content: fenced(tool, JSON.stringify(value) ?? 'null'), succeeded: true };
        options.onFinished(outcome);
        return outcome;
      } catch (error) {
        const outcome = { call, content: fenced(tool, `error: ${describeError(error)}`), succeeded: false };
        options.onFinished(outcome);
        return outcome;
      }
    });
  };

  let onAbort = (): void => {};
  const stopped = new Promise<'stopped'>((resolve) => {
    onAbort = () => resolve('stopped');
    if (options.signal.aborted) resolve('stopped');
    else options.signal.addEventListener('abort', onAbort, { once: true });
  });

  try {
    return await Promise.all(
      options.calls.map(async (call): Promise<ToolCallOutcome> => {
        // The catch turns a rejection after a stop (the pause gate rejects with the abort reason) into an answer,
        // and keeps it from surfacing as an unhandled rejection once the race below has already settled.
        const settled = runOne(call).catch(
          (error: unknown): ToolCallOutcome => ({ call, content: `error: ${describeError(error)}`, succeeded: false }),
        );
        const first = await Promise.race([settled, stopped]);
        if (first !== 'stopped') return first;
        return {
          call,
          content: `error: the loop was stopped before this tool call finished (${describeError(options.signal.reason)})`,
          succeeded: false,
        };
      }),
    );
  } finally {
    options.signal.removeEventListener('abort', onAbort);
  }
}

/**
 * The gate's decision on one call, with the wait events around it. A gate that fails is a refusal: not knowing
 * whether a call may run is no permission to run it. Rejects only with the abort reason, once `signal` is aborted.
 */
export async function askToolGate(
  gate: ToolGate,
  request: Omit<ToolGateRequest, 'waiting'> & {
    onWait?: ((approval: string) => void) | undefined;
    onDecided?: ((approval: string, decision: ToolGateDecision) => void) | undefined;
  },
): Promise<ToolGateDecision> {
  const { onWait, onDecided, ...asked } = request;
  let approval: string | undefined;
  let decision: ToolGateDecision;
  try {
    decision = await gate({
      ...asked,
      waiting: (id) => {
        if (approval !== undefined) return;
        approval = id;
        onWait?.(id);
      },
    });
  } catch (error) {
    request.signal.throwIfAborted();
    decision = { run: false, reason: `the tool gate failed: ${describeError(error)}` };
  }
  if (approval !== undefined) onDecided?.(approval, decision);
  return decision;
}

/**
 * What a tool gave, as the model gets it: fenced as untrusted data unless the tool declared itself trusted. This is
 * the one place tool output becomes a message, so no tool can forget it. Each result gets a fresh marker, and the
 * text cannot contain or imitate one (see fenceUntrusted); no size cap here: compression handles long transcripts.
 */
function fenced(tool: Tool, text: string): string {
  if (tool.trusted) return text;
  return fenceUntrusted({ [tool.name]: text }, { maxChars: Number.POSITIVE_INFINITY }).text;
}

function unavailableMessage(name: string, tool: Tool | undefined, offered: readonly Tool[]): string {
  if (tool !== undefined) {
    return `tool ${name} is not available yet; call ${tool.hiddenUntil.join(', ')} first`;
  }
  const names = offered.map((candidate) => candidate.name).join(', ');
  return `unknown tool ${JSON.stringify(name)}; available tools: ${names === '' ? '(none)' : names}`;
}

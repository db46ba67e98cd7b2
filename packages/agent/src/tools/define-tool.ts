import type { ToolSpec } from '@assistant/llm';
import * as z from 'zod';
import type { AgentOptions } from '../loop/agent-options.ts';
import type { SteerableHandle } from '../steering/steerable-handle.ts';
import type { ToolGateDecision } from './tool-gate.ts';

/** What a running tool can reach: cancellation, the loop that runs it, nesting, and the owner. */
export interface ToolContext {
  /** Aborted when the loop is stopped or times out; pass it on to anything the tool waits for. */
  signal: AbortSignal;
  /** The loop running this tool. */
  handle: SteerableHandle;
  /** Starts a nested loop whose parent is this loop, so pause, resume, interjections and stop reach it. */
  startAgent(options: Omit<AgentOptions, 'parent'>): SteerableHandle;
  /**
   * Asks the owner a clarifying question. It surfaces at the top handle's `nextClarification()` and resolves with
   * the answer given to `answerClarification`; it rejects with the abort reason when the loop is stopped first.
   */
  askCaller(question: string): Promise<string>;
  /** Tells the owner about progress; surfaces at the top handle's `nextNotification()`. */
  notify(message: string): void;
  /**
   * Resolves at once while the loop runs, or when it is resumed; rejects with the abort reason when it is stopped.
   * Long-running tools call it between their own steps, because a pause only holds back new model calls and tool
   * starts on its own.
   */
  waitWhilePaused(): Promise<void>;
  /** The id of the call being run (absent outside a loop's step): which call of its step this is. */
  toolCallId?: string;
  /**
   * Asks the loop's tool gate whether a call this tool makes for the model may run: a code cell's call of another
   * tool passes the same gate, persona grants and approvals as the loop's own calls, and the loop reports its
   * approval wait as for its own (`approval-wait`, `approval-decided`, with `callId` as the tool call id). `onWait`
   * is told when the call starts waiting for the owner. Resolves with the decision (a failing gate is a refusal);
   * rejects only when the loop is stopped. A loop without a gate lets every call run.
   */
  gate(request: {
    tool: Tool;
    input: unknown;
    /** Names the call in approvals and events; the same call asked again (after a restart) must have the same id. */
    callId: string;
    onWait?: (approval: string) => void;
  }): Promise<ToolGateDecision>;
}

/**
 * What calling a tool can do, as every layer's gate reads it: `read_only` reads and changes nothing, `soft` changes
 * what can be undone, `irreversible` does what cannot be undone (a message sent, a merge, a payment) and so waits
 * for the owner's approval unless config.yaml's `tools:` allows it.
 */
export type ToolTier = 'read_only' | 'soft' | 'irreversible';

/** A tool the loop can offer to the model. Make one with {@link defineTool}. */
export interface Tool<Input = unknown> {
  readonly name: string;
  readonly description: string;
  /** Validates the arguments the model wrote; what it outputs is what `run` receives. */
  readonly input: z.ZodType<Input>;
  /** Names of tools that must each have succeeded once in this loop before this tool is offered. */
  readonly hiddenUntil: readonly string[];
  /** The tool as the model sees it, with the input schema as JSON Schema. */
  readonly spec: ToolSpec;
  /** False (the default) fences what the tool returns as untrusted data; see {@link ToolDefinition.trusted}. */
  readonly trusted?: boolean;
  /** What calling it can do; see {@link ToolDefinition.tier}. */
  readonly tier: ToolTier;
  /** Where code calls it (`run_code`); see {@link ToolDefinition.codePath}. */
  readonly codePath?: readonly string[] | false;
  run(input: Input, context: ToolContext): Promise<unknown>;
}

/** Options of {@link defineTool}. */
export interface ToolDefinition<Input> {
  /** Letters, digits, `_` and `-`, at most 64 characters (what chat APIs accept). */
  name: string;
  /** Tells the model when to use the tool; the model reads nothing else about it. */
  description: string;
  /** A zod object schema for the tool's arguments. */
  input: z.ZodType<Input>;
  /** The tool's work. The returned value goes to the model as JSON; a thrown error as `error: message`. */
  run(input: Input, context: ToolContext): Promise<unknown>;
  /**
   * Explore before acting: the tool is not offered until every tool named here has been called successfully at
   * least once in the same loop.
   * @default []
   */
  hiddenUntil?: string[];
  /**
   * What the tool returns reaches the model fenced as untrusted data (a note, a mail, a web page can say "ignore
   * previous instructions"), and so does the message of an error it throws. Declare `trusted: true` only for a
   * tool whose output cannot carry text from outside: arithmetic, a clock, a count.
   * @default false
   */
  trusted?: boolean;
  /**
   * What calling the tool can do. A tool that does not say is taken for the worst: `irreversible`, which the gate
   * does not run without the owner's approval.
   * @default 'irreversible'
   */
  tier?: ToolTier;
  /**
   * Where a code cell (`run_code`, docs/codeact.md) finds the tool: `['notes', 'search']` is `tools.notes.search(…)`.
   * `false` keeps it out of code: a tool that ends the loop or waits on others (`wait_agents`, `reply_to_caller`)
   * has no place inside a cell with a deadline.
   * @default the registry's choice: `[server, tool]` for an MCP tool `server__tool`, else `[name]`
   */
  codePath?: readonly string[] | false;
}

const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Defines a tool for {@link startAgent}. The input schema is converted to JSON Schema once, here, so a schema the
 * model cannot be shown fails at definition time rather than mid-task.
 */
export function defineTool<Input>(definition: ToolDefinition<Input>): Tool<Input> {
  if (!toolNamePattern.test(definition.name)) {
    throw new TypeError(
      `Expected a tool name of letters, digits, _ and - (at most 64 characters), got ${JSON.stringify(definition.name)}`,
    );
  }
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(definition.input, {
    io: 'input',
    unrepresentable: 'any',
  });
  if (parameters.type !== 'object') {
    throw new TypeError(
      `Expected the input of tool ${definition.name} to be an object schema, got JSON Schema type ${JSON.stringify(parameters.type)}`,
    );
  }
  return {
    name: definition.name,
    description: definition.description,
    input: definition.input,
    hiddenUntil: [...(definition.hiddenUntil ?? [])],
    spec: { name: definition.name, description: definition.description, parameters },
    trusted: definition.trusted ?? false,
    tier: definition.tier ?? 'irreversible',
    ...(definition.codePath === undefined ? {} : { codePath: definition.codePath }),
    run: definition.run,
  };
}

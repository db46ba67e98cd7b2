import { defineTool, type Tool, type ToolContext } from '@assistant/agent';
import { type GrantChain, grants, type Persona, rootGrantChain } from '@assistant/agents';
import {
  type CallLog,
  type CellResult,
  codeDigest,
  createToolRegistry,
  type Executor,
  type JSONValue,
  type RegisteredTool,
  runLoggedCell,
  type ToolRegistry,
} from '@assistant/codeact';
import * as z from 'zod';
import type { CodeActContext } from './handler-context.ts';

/** The names of the code tools, for personas' grants and the lists of built-in tools. */
export const codeToolNames = ['run_code', 'search_tools'] as const;

/**
 * Whether a cell may call `tool`: not the code tools themselves, not a tool declared `codePath: false` (it waits or
 * ends the loop), and not one offered only after others succeeded (`hiddenUntil`), since a cell cannot tell what the
 * loop explored first. Such tools stay JSON tools, in discovery mode too.
 */
function callableFromCode(tool: Tool): boolean {
  return (
    tool.codePath !== false &&
    tool.hiddenUntil.length === 0 &&
    !(codeToolNames as readonly string[]).includes(tool.name)
  );
}

/** Options of {@link codeTools}. */
export interface CodeToolsOptions {
  /** The tools a cell may call: the loop's others (the code tools themselves and tools with `codePath: false` are left out). */
  tools: readonly Tool[];
  /** Runs the cells; one per worker, shared by its loops. */
  executor: Executor;
  /** The durable call log of one `run_code` call (see FileCallLog). */
  callLog(key: { loop: string; callId: string; codeSha256: string }): CallLog;
  /**
   * Discovery first: run_code's description lists no tools, and the model finds them with `search_tools`, which keeps
   * the prompt small however many tools (MCP servers') the loop has. @default false: the declarations are listed
   */
  discovery?: boolean;
  /** A cell's wall-clock limit, its tools' time included. @default 30000 */
  timeoutMs?: number;
}

const runCodeInput = z.strictObject({
  code: z
    .string()
    .min(1)
    .max(100_000)
    .describe('The body of an async JavaScript function: await tools.…(…) calls, `return` the result.'),
});

const searchToolsInput = z.strictObject({
  query: z.string().min(1).max(500).describe('What you want to do, in a few words: "read a note", "github issues".'),
  limit: z.int().min(1).max(20).optional(),
});

/**
 * `run_code` and `search_tools`: the model writes a short JavaScript program over the loop's tools and the sandbox
 * (@assistant/codeact) runs it, instead of one model round trip per call. Every call from code passes the loop's
 * tool gate (persona grants, config.yaml's `tools:`, approvals with the call rendered in full), and is written to
 * the call's durable log before its result returns to the cell: a call that waits for the owner stops the cell, and
 * the same code runs again after the decision, answered from the log up to where it stopped; a worker that dies
 * mid-cell resumes the same way (the loop re-runs the saved call with its id). See docs/codeact.md.
 */
export function codeTools(options: CodeToolsOptions): Tool[] {
  const callable = options.tools.filter(callableFromCode);
  const registry = createToolRegistry(
    callable.map((tool) => ({
      name: tool.name,
      description: tool.description,
      parameters: tool.spec.parameters as Record<string, unknown>,
      tier: tool.tier,
      ...(Array.isArray(tool.codePath) ? { path: tool.codePath } : {}),
    })),
    // Tools meet here at run time (an MCP server named `notes`): one whose path is taken is left out of code, said
    // in run_code's description, rather than failing the loop.
    { onConflict: 'skip' },
  );
  const byName = new Map(callable.map((tool) => [tool.name, tool]));
  const timeoutMs = options.timeoutMs ?? 30_000;

  const runCode = defineTool({
    name: 'run_code',
    description: runCodeDescription(registry, options.discovery === true, timeoutMs),
    input: runCodeInput,
    // What the cell returns carries what its tools read (mail, notes, web pages): untrusted.
    trusted: false,
    // Running code does nothing by itself: each call it makes is gated as its tool's own tier.
    tier: 'read_only',
    run: async ({ code }, context) => {
      const callId = context.toolCallId ?? 'direct';
      const loop = context.handle.lineage.join(' › ');
      const { result } = await runLoggedCell({
        executor: options.executor,
        code,
        paths: registry.tools.map((tool) => tool.path),
        log: options.callLog({ loop, callId, codeSha256: codeDigest(code) }),
        host: callHost(registry, byName, context, callId),
        signal: context.signal,
        timeoutMs,
      });
      return answerOf(result);
    },
  });

  const searchTools = defineTool({
    name: 'search_tools',
    description:
      'Finds the tools a run_code program can call, by what you want to do. Returns their TypeScript declarations (`tools.<namespace>.<name>(args)`) with what each does.',
    input: searchToolsInput,
    trusted: false,
    tier: 'read_only',
    codePath: false,
    run: async ({ query, limit }) => {
      const found = registry.search(query, limit ?? 8);
      return {
        found: found.length,
        tools: found.map((tool) => ({ call: `tools.${tool.path.join('.')}`, declaration: tool.declaration })),
        ...(found.length === 0 ? { hint: 'no tool matches; try other words' } : {}),
      };
    },
  });

  return [runCode, searchTools];
}

function runCodeDescription(registry: ToolRegistry, discovery: boolean, timeoutMs: number): string {
  const lines = [
    'Runs a short JavaScript program (the body of an async function) in a sandbox, so several tool calls take one step:',
    'call tools as `await tools.<namespace>.<name>({...})`, loop and filter in code, `return` what you need (JSON) and',
    '`console.log` notes. No network, files, timers, require or import: only `tools`.',
    `A program has ${Math.round(timeoutMs / 1000)} s. Every call passes the same permissions and approvals as a direct tool call;`,
    'a call that needs the owner pauses the program and it runs again from the start once decided, with calls made',
    'before answered from a log: so make the same calls in the same order every run (no Date.now or Math.random in',
    'what you pass to a tool). A refused call rejects with its reason; catch it to go on.',
  ];
  if (registry.skipped.length > 0) {
    lines.push(
      `Not callable from code (their place under tools is taken): ${registry.skipped.map((tool) => tool.name).join(', ')}.`,
    );
  }
  if (discovery || registry.tools.length === 0) {
    lines.push('', 'Find the tools with search_tools first; it returns their declarations.');
  } else {
    lines.push('', 'The tools:', '```ts', registry.declarations(), '```');
  }
  return lines.join('\n');
}

/** The gate and the tools behind a cell's calls. */
function callHost(
  registry: ToolRegistry,
  byName: ReadonlyMap<string, Tool>,
  context: ToolContext,
  runCodeCallId: string,
) {
  const toolAt = (path: readonly string[]): { entry: RegisteredTool; tool: Tool } => {
    const entry = registry.byPath(path);
    const tool = entry === undefined ? undefined : byName.get(entry.name);
    if (entry === undefined || tool === undefined) throw new Error(`no tool tools.${path.join('.')}`);
    return { entry, tool };
  };
  /** The cell passes one argument object, as the JSON tool would get it. */
  const inputOf = (tool: Tool, args: JSONValue[]): { ok: true; input: unknown } | { ok: false; error: string } => {
    if (args.length > 1) return { ok: false, error: `${tool.name} takes one argument object, got ${args.length}` };
    const parsed = tool.input.safeParse(args[0] ?? {});
    if (parsed.success) return { ok: true, input: parsed.data };
    const issue = parsed.error.issues[0];
    return {
      ok: false,
      error: `invalid arguments for ${tool.name}: ${issue?.path.join('.') || '(argument)'}: ${issue?.message}`,
    };
  };
  return {
    permit: async (
      call: { path: readonly string[]; args: JSONValue[]; index: number },
      onWait: () => void,
    ): Promise<{ run: true } | { run: false; reason: string }> => {
      const { tool } = toolAt(call.path);
      const input = inputOf(tool, call.args);
      // Bad arguments are the cell's mistake: refused before the gate, so nobody is asked to approve them.
      if (!input.ok) return { run: false, reason: input.error };
      return context.gate({ tool, input: input.input, callId: `${runCodeCallId}.${call.index}`, onWait });
    },
    run: async (call: { path: readonly string[]; args: JSONValue[]; index: number; signal: AbortSignal }) => {
      const { tool } = toolAt(call.path);
      const input = inputOf(tool, call.args);
      if (!input.ok) throw new Error(input.error);
      const value = await tool.run(input.input, {
        ...context,
        signal: AbortSignal.any([context.signal, call.signal]),
        toolCallId: `${runCodeCallId}.${call.index}`,
      });
      // What crosses back into the sandbox is JSON: a tool's value as JSON.stringify gives it.
      return (value === undefined ? null : JSON.parse(JSON.stringify(value))) as JSONValue;
    },
    rerunnable: (path: readonly string[]) => registry.byPath(path)?.tier === 'read_only',
  };
}

/** What the model reads: the value and logs, or a readable error (which the loop fences and answers as `error:`). */
function answerOf(result: CellResult): unknown {
  const calls = result.calls.length;
  if (result.ok) return { value: result.value, logs: result.logs, calls };
  const lines = [`${result.error.kind}: ${result.error.message}`];
  if (result.logs.length > 0) lines.push('console output before it stopped:', ...result.logs);
  const failedCalls = result.calls.filter((call) => call.status === 'error');
  for (const call of failedCalls.slice(0, 5)) {
    if (call.status === 'error') lines.push(`call ${call.index} tools.${call.path.join('.')} failed: ${call.error}`);
  }
  throw new Error(lines.join('\n'));
}

/**
 * A loop's tools with code as action when its persona asks for it (`code_mode:`) and its grants let it call
 * `run_code`: `alongside`, run_code and search_tools join the JSON tools; `discovery`, they replace every tool a cell
 * can call, so the prompt lists a few tools however many the loop has. Calls from code pass the loop's gate like its
 * own, so a tool the persona does not grant is refused inside code too. Without the sandbox (`codeact` absent) or
 * with `code_mode: off`, the tools as they are.
 */
export function withCodeMode(options: {
  codeact: CodeActContext | undefined;
  persona: Persona | undefined;
  /** The loop's grants; @default the persona's own (a root loop's) */
  chain?: GrantChain | undefined;
  tools: Tool[];
  warn: (message: string, fields: Record<string, unknown>) => void;
}): Tool[] {
  const { codeact, persona, tools } = options;
  const mode = persona?.codeMode ?? 'off';
  if (mode === 'off' || codeact === undefined || persona === undefined) return tools;
  const chain = options.chain ?? rootGrantChain(persona);
  if (!grants(chain, 'run_code')) {
    options.warn(`persona ${persona.name} has code_mode: ${mode} but its tools do not grant run_code`, {
      persona: persona.name,
    });
    return tools;
  }
  const code = codeact.tools(tools, { discovery: mode === 'discovery' });
  if (mode === 'alongside') return [...tools, ...code];
  return [...tools.filter((tool) => !callableFromCode(tool)), ...code];
}

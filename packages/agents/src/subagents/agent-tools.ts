import { defineTool, type Tool, type ToolContext, type ToolGate } from '@assistant/agent';
import type { ChatMessage } from '@assistant/llm';
import * as z from 'zod';
import type { GrantChain } from '../persona-types.ts';
import { grantVerdict } from '../personas/grant-chain.ts';
import type { SubAgents } from '../subagent-types.ts';

/**
 * What an agent loop remembers about its children between runs of its task, saved with its transcript (so it is
 * exactly as current as the messages): the step count that keys spawns, and which results the model was given.
 */
export class AgentLoopState {
  /** Model calls of the top loop so far: spawns are keyed by step and call, so a replayed step finds its children. */
  step = 0;
  /** Children whose results the model has been given: each is given once. */
  readonly delivered = new Set<string>();
  /** Set by reply_to_caller: the answer the child ends with. */
  reply: { answer: string; forwardedFrom?: string } | undefined;

  restore(data: unknown): void {
    if (typeof data !== 'object' || data === null) return;
    const saved = data as { step?: unknown; delivered?: unknown };
    if (typeof saved.step === 'number' && Number.isInteger(saved.step) && saved.step >= 0) this.step = saved.step;
    if (Array.isArray(saved.delivered)) {
      for (const id of saved.delivered) if (typeof id === 'string') this.delivered.add(id);
    }
  }

  snapshot(): { step: number; delivered: string[] } {
    return { step: this.step, delivered: [...this.delivered].sort() };
  }
}

/** The position of the running call in its step, from the transcript: the same on a replay of the step. */
function callIndex(context: ToolContext): string {
  const messages = context.handle.transcript();
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index];
    if (message?.role !== 'assistant' || message.toolCalls === undefined) continue;
    const position = message.toolCalls.findIndex((call) => call.id === context.toolCallId);
    if (position >= 0) return String(position);
    break;
  }
  return `call-${context.toolCallId ?? 'unknown'}`;
}

/** The parent's conversation so far, for a `fork` child: without the system prompt and the step now running. */
function forkedMessages(context: ToolContext): ChatMessage[] {
  const messages = context.handle.transcript().filter((message) => message.role !== 'system');
  const last = messages.at(-1);
  if (last?.role === 'assistant' && last.toolCalls?.some((call) => call.id === context.toolCallId)) messages.pop();
  // The most recent part, at most ~60,000 characters: a child's context is not the parent's whole history.
  const kept: ChatMessage[] = [];
  let size = 0;
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index] as ChatMessage;
    size += JSON.stringify(message).length;
    if (size > 60_000 && kept.length > 0) break;
    kept.unshift(message);
  }
  return kept;
}

export interface AgentToolsOptions {
  subagents: SubAgents;
  state: AgentLoopState;
  /** Whether the loop is a child (it gets reply_to_caller). */
  child: boolean;
  /** The personas that may be spawned (a star's workers), or every persona when absent. */
  mayspawn?: readonly string[];
}

/**
 * The tools of a persona that works with sub-agents: spawn_agent, wait_agents, message_agent, list_agents, and for a
 * child reply_to_caller. Offered only when the loop's grants name them (docs/agents.md, "Sub-agents").
 */
export function agentTools(options: AgentToolsOptions): Tool[] {
  const { subagents, state } = options;
  const tools: Tool[] = [
    defineTool({
      name: 'spawn_agent',
      codePath: ['agents', 'spawn'],
      description:
        'Starts a sub-agent running as `persona` on `task`, in the background; answers its id at once. context: "isolated" (only the task), "fork" (it also sees this conversation so far) or "summary" (it sees `summary`, which you write). Get its result with wait_agents.',
      input: z.object({
        persona: z.string().min(1).max(64),
        task: z.string().min(1).max(20_000),
        context: z.enum(['isolated', 'fork', 'summary']).default('isolated'),
        summary: z.string().min(1).max(20_000).optional(),
        purpose: z.string().min(1).max(2_000).optional(),
        max_steps: z.int().min(1).max(200).optional(),
      }),
      tier: 'soft',
      trusted: true,
      run: async (input, context) => {
        if (options.mayspawn !== undefined && !options.mayspawn.includes(input.persona)) {
          throw new Error(
            `AGENT_LIMIT: you may spawn only ${options.mayspawn.join(', ')}; ${input.persona} is not one of them`,
          );
        }
        if (input.context === 'summary' && input.summary === undefined) {
          throw new Error('context "summary" needs the summary you write for the child in `summary`');
        }
        const spawned = await subagents.spawn({
          persona: input.persona,
          task: input.task,
          key: `${state.step}.${callIndex(context)}`,
          ...(input.purpose === undefined ? {} : { purpose: input.purpose }),
          context:
            input.context === 'fork'
              ? { mode: 'fork', messages: forkedMessages(context) }
              : input.context === 'summary'
                ? { mode: 'summary', summary: input.summary as string }
                : { mode: 'isolated' },
          ...(input.max_steps === undefined ? {} : { budget: { maxSteps: input.max_steps } }),
        });
        return {
          id: spawned.id,
          task: spawned.taskId,
          persona: input.persona,
          status: spawned.existing ? 'already started (this step ran before a restart)' : 'started',
        };
      },
    }),
    defineTool({
      name: 'wait_agents',
      // It waits for children, for as long as they take: no place in a cell with a deadline.
      codePath: false,
      description:
        'Waits for sub-agents to finish (all you spawned whose results you have not had, when `ids` is empty) and answers their results; at most `timeout_seconds` (default 600), then answers what has finished. Each result is given once.',
      input: z.object({
        ids: z.array(z.string().min(1).max(64)).max(20).default([]),
        timeout_seconds: z.int().min(0).max(3_600).default(600),
      }),
      tier: 'read_only',
      run: async (input, context) => {
        const asked =
          input.ids.length > 0
            ? input.ids
            : (await subagents.list()).map((child) => child.record.id).filter((id) => !state.delivered.has(id));
        const already = asked.filter((id) => state.delivered.has(id));
        const waiting = asked.filter((id) => !state.delivered.has(id));
        if (waiting.length === 0) {
          return {
            results: [],
            running: [],
            already_given: already,
            note:
              asked.length === 0
                ? 'you have no sub-agents whose results you have not had'
                : 'you had these results before',
          };
        }
        const { results, running } = await subagents.wait(waiting, {
          timeoutMs: input.timeout_seconds * 1_000,
          signal: context.signal,
        });
        for (const result of results) state.delivered.add(result.id);
        return {
          results: results.map((result) => ({
            id: result.id,
            persona: result.persona,
            status: result.status,
            ...(result.answer === undefined ? {} : { answer: result.answer }),
            ...(result.reason === undefined ? {} : { reason: result.reason }),
            steps: result.steps,
          })),
          running,
          ...(already.length > 0 ? { already_given: already } : {}),
        };
      },
    }),
    defineTool({
      name: 'message_agent',
      codePath: ['agents', 'message'],
      description: 'Sends a message to a running sub-agent: it reaches its next model call (an interjection).',
      input: z.object({ id: z.string().min(1).max(64), text: z.string().min(1).max(20_000) }),
      tier: 'soft',
      trusted: true,
      run: async (input) => {
        await subagents.message(input.id, input.text);
        return `sent to ${input.id}`;
      },
    }),
    defineTool({
      name: 'list_agents',
      codePath: ['agents', 'list'],
      description: 'Lists the sub-agents you spawned: persona, task, state, and whether you have had the result.',
      input: z.object({}),
      tier: 'read_only',
      run: async () =>
        (await subagents.list()).map((child) => ({
          id: child.record.id,
          persona: child.record.persona,
          task: child.record.task.slice(0, 300),
          state: child.state,
          ...(child.result === undefined ? {} : { status: child.result.status }),
          result_given: state.delivered.has(child.record.id),
        })),
    }),
  ];
  if (options.child) {
    tools.push(
      defineTool({
        name: 'reply_to_caller',
        // It ends the child's work: the loop's own decision, not a step of a program.
        codePath: false,
        description:
          "Ends your work and gives your caller your result: `text`, or with `forward` a sub-agent's answer word for word (its id).",
        input: z.object({
          text: z.string().min(1).max(100_000).optional(),
          forward: z.string().min(1).max(64).optional(),
        }),
        tier: 'soft',
        trusted: true,
        run: async (input, context) => {
          if ((input.text === undefined) === (input.forward === undefined)) {
            throw new Error('give either `text` or `forward`, not both');
          }
          if (input.forward !== undefined) {
            const result = await subagents.result(input.forward);
            if (result === undefined) throw new Error(`${input.forward} has no result (yet); wait_agents first`);
            if (result.answer === undefined)
              throw new Error(`${input.forward} ended ${result.status} without an answer`);
            state.reply = { answer: result.answer, forwardedFrom: input.forward };
          } else state.reply = { answer: input.text as string };
          context.handle.stop('replied to the caller');
          return 'sent to your caller';
        },
      }),
    );
  }
  return tools;
}

/**
 * The gate of a loop's grants: a tool its chain does not grant is refused with a reason the model reads
 * (`PERSONA_TOOL_DENIED: persona researcher does not grant send_mail`), and the refusal shows in the trace.
 */
export function grantsGate(chain: GrantChain): ToolGate {
  return async (request) => {
    const verdict = grantVerdict(chain, request.tool.name);
    return verdict.verdict === 'deny'
      ? { run: false, reason: `PERSONA_TOOL_DENIED: ${verdict.because}` }
      : { run: true };
  };
}

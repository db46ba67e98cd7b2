import {
  AgentLoopState,
  agentTools,
  type ChildRecord,
  type ChildResult,
  type GrantChain,
  grants,
  type Persona,
  rootGrantChain,
} from '@assistant/agents';
import {
  defineTool,
  fenceUntrusted,
  findModelUnavailable,
  type HandlerContext,
  memoryPromptContext,
  memoryTools,
  noteTools,
  type Tool,
  UnrecoverableError,
  withCodeMode,
} from '@assistant/sdk';
import * as z from 'zod';

const payloadSchema = z.union([
  z.strictObject({
    prompt: z.string().min(1).max(20_000),
    profile: z.string().optional(),
    max_steps: z.int().min(1).max(200).optional(),
    /** Names under config.yaml's `mcp_servers:` whose tools the loop gets too (docs/mcp.md). */
    mcp_servers: z.array(z.string().min(1).max(100)).max(20).optional(),
    /** The persona the loop runs as (docs/agents.md, "Personas"). @default the default persona, `assistant` */
    persona: z.string().min(1).max(64).optional(),
  }),
  /** A sub-agent: the spawn record under data/agents/ says everything else. */
  z.strictObject({
    subagent: z.strictObject({ parent: z.string().min(1).max(200), id: z.string().min(1).max(64) }),
  }),
]);

/** The system prompt of a loop of the built-in default persona: unchanged from before personas existed. */
const defaultSystem =
  'You are Assistant, working for your owner on their notes. Use the tools to find facts; say plainly what you did not find. Answer briefly.';

/**
 * `system.agent`: a general steerable agent loop over the notes: `{prompt, persona?, profile?, max_steps?,
 * mcp_servers?}`, or a sub-agent `{subagent: {parent, id}}` that a parent spawned. It can search the notes, read one,
 * wait (for steering tests and for things that take time), use the tools of its MCP servers, and, when its persona
 * grants them, spawn and wait for sub-agents. Pause, interject, ask and stop it with `assistant steer`; watch it with
 * `assistant task watch`. A worker that dies mid-loop resumes it from its transcript note.
 */
export async function runAgentTask(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `system.agent expects {"prompt": "…"}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  if ('subagent' in checked.data) return runChild(context, checked.data.subagent);
  const { prompt, profile, max_steps: maxSteps, mcp_servers: mcpServers = [] } = checked.data;
  const agents = context.agents;
  const persona = agents === undefined ? undefined : await readPersona(agents, checked.data.persona);
  const chain = persona === undefined ? undefined : rootGrantChain(persona);
  const state = new AgentLoopState();
  const subagents =
    agents === undefined || persona === undefined || chain === undefined
      ? undefined
      : agents.subagents({ label: 'system.agent', persona, grants: chain });
  const tools = withCode(context, persona, chain, [
    ...baseTools(context),
    ...(await mcpToolsOf(context, [...new Set([...mcpServers, ...(persona?.mcpServers ?? [])])])),
    // The sub-agent tools are offered only when the persona grants them; the others are offered as they always were,
    // and the persona's gate refuses a call it does not grant, visibly (PERSONA_TOOL_DENIED), never silently.
    ...(subagents === undefined || chain === undefined
      ? []
      : agentTools({ subagents, state, child: false }).filter((tool) => grants(chain, tool.name))),
    ...agentMemoryTools(context, chain),
  ]);
  const handle = context.agent({
    system: await withMemory(
      context,
      persona === undefined || persona.source === 'built in' ? defaultSystem : persona.instructions,
      prompt,
    ),
    input: prompt,
    ...((profile ?? persona?.profile) ? { profile: (profile ?? persona?.profile) as string } : {}),
    // The persona's budget is the most its loop may spend: a payload may ask for fewer steps, never more.
    ...((maxSteps ?? persona?.budget.maxSteps)
      ? {
          maxSteps: Math.min(
            maxSteps ?? Number.POSITIVE_INFINITY,
            persona?.budget.maxSteps ?? Number.POSITIVE_INFINITY,
          ),
        }
      : {}),
    ...(persona?.budget.timeoutMs === undefined ? {} : { timeoutMs: persona.budget.timeoutMs }),
    ...(persona?.budget.tokens === undefined ? {} : { budget: { tokens: persona.budget.tokens } }),
    ...(chain === undefined ? {} : { grants: chain }),
    transcriptState: state,
    tools,
    onEvent: (event) => followSteps(event, state, context),
  });
  const result = await handle.result();
  // Stopped by the worker (shutdown, timeout), not by a person: let the queue retry or release the task.
  if (context.signal.aborted) throw context.signal.reason;
  // The model is unavailable: the task waits for it (the worker puts it back without spending an attempt) and the
  // loop resumes from its transcript, rather than ending `failed` with the outage as its answer.
  if (result.status === 'failed' && findModelUnavailable(result.error)) throw result.error;
  return {
    status: result.status,
    answer: result.answer ?? null,
    reason: result.reason ?? null,
    steps: result.steps,
    usage: result.usage,
    ...(persona === undefined ? {} : { persona: persona.name }),
  };
}

async function readPersona(agents: NonNullable<HandlerContext['agents']>, name: string | undefined): Promise<Persona> {
  try {
    return await agents.persona(name);
  } catch (error) {
    // A persona the owner has not written (or has broken) will not appear by retrying.
    throw new UnrecoverableError(`system.agent: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Counts the top loop's steps (spawns are keyed by them) and hands the task's steering on to its running children. */
function followSteps(
  event: { type: string; lineage: readonly string[]; action?: unknown; message?: unknown },
  state: AgentLoopState,
  context: HandlerContext,
): void {
  const agents = context.agents;
  if (event.lineage.length !== 1) return;
  if (event.type === 'step-started') state.step += 1;
  // A stop that is the worker shutting down (or the task timing out) is not a person's: the task goes back to pending
  // and resumes, and so do its children, which must not be stopped for good.
  if (event.type === 'steering-applied' && agents !== undefined && !context.signal.aborted) {
    const action = event.action;
    if (action === 'pause' || action === 'resume' || action === 'stop') {
      void agents
        .steerChildren({ action, ...(action === 'stop' ? { message: 'the agent that called you was stopped' } : {}) })
        .catch(() => {});
    }
  }
}

function baseTools(context: HandlerContext): Tool[] {
  return [
    ...noteTools(context.notes),
    defineTool({
      name: 'wait',
      description: 'Waits the given number of milliseconds (at most a minute), then says so.',
      codePath: false,
      input: z.object({ ms: z.int().min(0).max(60_000) }),
      tier: 'read_only',
      run: async ({ ms }, tool) => {
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(resolve, ms);
          tool.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              reject(tool.signal.reason);
            },
            { once: true },
          );
        });
        await tool.waitWhilePaused();
        return `waited ${ms} ms`;
      },
    }),
  ];
}

/** The loop's tools with code as action when its persona asks for it (see withCodeMode). */
function withCode(
  context: HandlerContext,
  persona: Persona | undefined,
  chain: GrantChain | undefined,
  tools: Tool[],
): Tool[] {
  return withCodeMode({ codeact: context.codeact, persona, chain, tools, warn: context.log.warn });
}

/**
 * Memory's tools (recall, remember, lookup_contact, add_task, list_tasks) for a loop whose persona grants them (the
 * built-in persona grants every tool). An agent's prompt may carry text from outside (a hook's event, a mail), so
 * what it remembers is `extracted`, never the owner's word, and the tasks it adds say `created_by: extraction`.
 */
function agentMemoryTools(context: HandlerContext, chain: GrantChain | undefined): Tool[] {
  if (context.memory === undefined) return [];
  return memoryTools({
    memory: context.memory,
    owner: false,
    source: `transcripts/${context.task.id}.md`,
    createdBy: 'extraction',
    timeZone: context.memory.timeZone,
  }).filter((tool) => chain === undefined || grants(chain, tool.name));
}

/**
 * The system prompt with what memory holds that bears on the task (docs/memory.md): the owner's guidance and the most
 * relevant facts, fenced by who stands behind them, as a chat turn gets them. Memory failing (an index that cannot
 * start) leaves the loop without it rather than failing the task.
 */
async function withMemory(context: HandlerContext, system: string, task: string): Promise<string> {
  if (context.memory === undefined) return system;
  try {
    const remembered = await memoryPromptContext({ memory: context.memory, texts: [task], signal: context.signal });
    return remembered === undefined ? system : `${system}\n\n${remembered}`;
  } catch (error) {
    context.log.warn('memory context left out', { error: error instanceof Error ? error.message : String(error) });
    return system;
  }
}

async function mcpToolsOf(context: HandlerContext, servers: readonly string[]): Promise<Tool[]> {
  if (servers.length === 0) return [];
  return context.mcpTools(servers).catch((error: unknown) => {
    // A name config does not define will not appear by retrying; a server that cannot start now may start later.
    if (error instanceof Error && 'code' in error && error.code === 'MCP_SERVER_UNKNOWN') {
      throw new UnrecoverableError(`system.agent: ${error.message}`);
    }
    throw error;
  });
}

/** What the child is told first: the task, and what of its caller's conversation it was given. */
function childInput(record: ChildRecord): string {
  const context = record.context;
  if (context.mode === 'isolated') return record.task;
  const given =
    context.mode === 'summary'
      ? { summary: context.summary }
      : {
          conversation: context.messages
            .map((message) => {
              if (message.role === 'tool') return `tool result: ${message.content.slice(0, 4_000)}`;
              if (message.role === 'assistant') {
                const calls = (message.toolCalls ?? []).map(
                  (call) => `[called ${call.name} ${call.arguments.slice(0, 500)}]`,
                );
                return `${record.parent_persona ?? 'caller'}: ${[message.content ?? '', ...calls].join(' ').trim()}`;
              }
              return `${message.role}: ${message.content}`;
            })
            .join('\n\n'),
        };
  const fenced = fenceUntrusted(given, { maxChars: 60_000 });
  return `${record.task}\n\nWhat your caller gave you of its work so far:\n${fenced.text}`;
}

/** The child's system prompt: its persona, then who called it and why. */
function childSystem(persona: Persona, record: ChildRecord): string {
  const caller = record.parent_persona === undefined ? 'a workflow' : `the agent ${record.parent_persona}`;
  return [
    persona.source === 'built in' ? defaultSystem : persona.instructions,
    '',
    `You are a sub-agent (${record.lineage.join(' › ')}, depth ${record.depth}). You were called by ${caller} to: ${record.purpose}`,
    'When you are done, answer with your result; it goes to your caller, who reads only that. You may also end at once with reply_to_caller.',
  ].join('\n');
}

async function runChild(context: HandlerContext, reference: { parent: string; id: string }) {
  const agents = context.agents;
  if (agents === undefined)
    throw new UnrecoverableError('system.agent: sub-agents need the builtin system integration');
  let record: ChildRecord | undefined;
  try {
    record = await agents.childRecord(reference);
  } catch (error) {
    throw new UnrecoverableError(`system.agent: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (record === undefined) {
    throw new UnrecoverableError(`system.agent: no sub-agent ${reference.id} of task ${reference.parent} was spawned`);
  }
  // This task ran before and delivered its result, then was cut short before it counted as done: nothing to redo.
  const delivered = await agents.childResult(record);
  if (delivered !== undefined && delivered.task_id === context.task.id) return delivered;
  if (delivered !== undefined) return { ...delivered, duplicate_of: delivered.task_id };
  // Two tasks for one child (a crash at its spawn): the first to start runs it, the other leaves it to that one.
  const owner = await agents.claimChild(record);
  if (owner !== context.task.id) return { id: record.id, status: 'duplicate', duplicate_of: owner };
  const finish = async (result: Omit<ChildResult, 'id' | 'task_id' | 'persona' | 'finished_at'>) => {
    const full: ChildResult = {
      id: (record as ChildRecord).id,
      task_id: context.task.id,
      persona: (record as ChildRecord).persona,
      ...result,
      finished_at: new Date().toISOString(),
    };
    await agents.deliver(record as ChildRecord, full);
    return (await agents.childResult(record as ChildRecord)) ?? full;
  };
  let persona: Persona;
  try {
    persona = await agents.persona(record.persona);
  } catch (error) {
    return finish({ status: 'failed', reason: error instanceof Error ? error.message : String(error), steps: 0 });
  }
  const state = new AgentLoopState();
  const subagents = agents.subagents({ label: persona.name, persona, record });
  const tools = withCode(context, persona, record.grants, [
    ...baseTools(context),
    ...(await mcpToolsOf(context, persona.mcpServers)),
    ...agentTools({
      subagents,
      state,
      child: true,
      ...(record.may_spawn === undefined ? {} : { mayspawn: record.may_spawn }),
    }).filter((tool) => tool.name === 'reply_to_caller' || grants((record as ChildRecord).grants, tool.name)),
  ]);
  const handle = context.agent({
    system: await withMemory(context, childSystem(persona, record), record.task),
    input: childInput(record),
    label: persona.name,
    // Named after the child, not the task: a second task for the same child resumes this transcript.
    transcriptName: record.id,
    maxSteps: record.budget.maxSteps,
    ...(record.budget.timeoutMs === undefined ? {} : { timeoutMs: record.budget.timeoutMs }),
    ...(record.budget.tokens === undefined ? {} : { budget: { tokens: record.budget.tokens } }),
    ...(persona.profile === undefined ? {} : { profile: persona.profile }),
    grants: record.grants,
    transcriptState: state,
    ancestry: {
      tasks: record.ancestors.concat(record.parent_task).filter((id, index, all) => all.indexOf(id) === index),
      lineage: record.lineage,
      child: record.id,
    },
    tools,
    onEvent: (event) => followSteps(event, state, context),
  });
  const result = await handle.result();
  if (context.signal.aborted) throw context.signal.reason;
  if (result.status === 'failed' && findModelUnavailable(result.error)) throw result.error;
  const reply = state.reply;
  return finish({
    status: reply === undefined ? result.status : 'completed',
    ...((reply?.answer ?? result.answer) === undefined ? {} : { answer: (reply?.answer ?? result.answer) as string }),
    ...(reply === undefined && result.reason !== undefined ? { reason: result.reason } : {}),
    ...(reply?.forwardedFrom === undefined ? {} : { reason: `forwarded verbatim from ${reply.forwardedFrom}` }),
    steps: result.steps,
    usage: result.usage,
  });
}

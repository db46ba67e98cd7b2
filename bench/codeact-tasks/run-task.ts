// Runs one owner task in one mode through the real agent loop (startAgent), the real sandbox executor and a
// FileCallLog in a temporary directory, with a scripted model that follows the task's policy for that mode, and
// measures what the protocol cost: model round trips, estimated input and output tokens, tool calls.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { estimateTokensByCharacters, startAgent, type Tool } from '@assistant/agent';
import { createScriptedModel, type ScriptedReply } from '@assistant/agent/testing';
import { type Executor, FileCallLog } from '@assistant/codeact';
import { codeTools } from '@assistant/integration-host';
import type { ChatRequest } from '@assistant/llm';
import { createWorld, type World } from './fixtures.ts';
import type { Call, JsonPlan, OwnerTask } from './tasks.ts';
import { fixtureTools } from './tools.ts';

/**
 * - `json`: the fixture tools as JSON tools, one call per tool use.
 * - `code-alongside`: the fixture tools and run_code (whose description declares them all) and search_tools, as a
 *   persona with `code_mode: alongside` has; the policy only uses run_code.
 * - `code-discovery`: only run_code and search_tools (`code_mode: discovery`); the policy finds its tools first.
 */
export const modes = ['json', 'code-alongside', 'code-discovery'] as const;
export type Mode = (typeof modes)[number];

export interface TaskCost {
  roundTrips: number;
  /** Characters / 4 of every request's messages (estimateTokensByCharacters, as the loop uses) plus its tool specs as JSON. */
  inputTokens: number;
  /** Characters / 4 of every reply's text and tool calls. */
  outputTokens: number;
  /** Calls of fixture tools, directly or from cells. */
  toolCalls: number;
}

export interface TaskRun {
  cost: TaskCost;
  /** What must be equal between modes: the world after the task and the model's answer. */
  outcome: { world: World; answer: string };
}

const characterTokens = (characters: number) => Math.ceil(characters / 4);

function inputTokensOf(request: ChatRequest): number {
  return estimateTokensByCharacters(request.messages) + characterTokens(JSON.stringify(request.tools ?? []).length);
}

function outputTokensOf(reply: ScriptedReply): number {
  if (typeof reply === 'string') return characterTokens(reply.length);
  let characters = reply.content?.length ?? 0;
  for (const call of reply.toolCalls ?? []) characters += call.name.length + JSON.stringify(call.arguments).length;
  return characterTokens(characters);
}

/** A tool result as the model reads it: the fence the loop put around it removed, then JSON. */
function resultOf(request: ChatRequest, call: Call & { id: string }): unknown {
  const message = request.messages.find((candidate) => candidate.role === 'tool' && candidate.toolCallId === call.id);
  if (message?.role !== 'tool') throw new Error(`no result for ${call.name} (${call.id}) in the transcript`);
  const lines = message.content.split('\n');
  const fenced = lines[0]?.startsWith('<<<UNTRUSTED-') === true;
  const text = fenced ? lines.slice(1, -1).join('\n') : message.content;
  // A policy is written to succeed; a failed call means the fixtures, tools or cell are wrong: stop loudly.
  if (text.startsWith('error:')) throw new Error(`${call.name} failed in the bench: ${text}`);
  return JSON.parse(text);
}

/** The code policy as a JSON plan over run_code (and, in discovery mode, search_tools first). */
function* codePlan(task: OwnerTask, discovery: boolean): JsonPlan {
  const plan = task.code();
  let step = plan.next();
  let discovered: Set<string> | undefined;
  if (discovery) {
    const found = (yield task.discover.map((query) => ({ name: 'search_tools', arguments: { query } }))) as {
      tools: { call: string }[];
    }[];
    discovered = new Set(found.flatMap((result) => result.tools.map((tool) => tool.call)));
  }
  while (step.done !== true) {
    const code = step.value;
    // A discovery-mode model can only call what search_tools showed it.
    for (const [used] of code.matchAll(/tools\.\w+\.\w+/g)) {
      if (discovered !== undefined && !discovered.has(used)) {
        throw new Error(
          `task ${task.name}: its cell calls ${used}, which search_tools did not find for ${task.discover.join(' / ')}`,
        );
      }
    }
    const [result] = (yield [{ name: 'run_code', arguments: { code } }]) as { value: unknown }[];
    step = plan.next(result?.value);
  }
  return step.value;
}

export async function runTask(options: {
  task: OwnerTask;
  mode: Mode;
  executor: Executor;
  /** Where the call logs go (a temporary directory of the caller's). */
  directory: string;
}): Promise<TaskRun> {
  const { task, mode } = options;
  const world = createWorld();
  let toolCalls = 0;
  const fixtures = fixtureTools(world).map(
    (tool): Tool => ({
      ...tool,
      run: (input, context) => {
        toolCalls += 1;
        return tool.run(input, context);
      },
    }),
  );
  // A log of its own per run: a run that found an earlier run's log would be answered from it and change nothing.
  const run = `${task.name}-${mode}-${randomUUID()}`;
  const code = codeTools({
    tools: fixtures,
    executor: options.executor,
    discovery: mode === 'code-discovery',
    callLog: ({ loop, callId, codeSha256 }) =>
      new FileCallLog(path.join(options.directory, 'codeact'), {
        task: run,
        loop,
        call_id: callId,
        code_sha256: codeSha256,
      }),
  });
  const tools = mode === 'json' ? fixtures : mode === 'code-alongside' ? [...fixtures, ...code] : code;

  const plan = mode === 'json' ? task.json() : codePlan(task, mode === 'code-discovery');
  let asked: (Call & { id: string })[] | undefined;
  let outputTokens = 0;
  const model = createScriptedModel({
    replies: (request, { index }) => {
      const step = asked === undefined ? plan.next([]) : plan.next(asked.map((call) => resultOf(request, call)));
      let reply: ScriptedReply;
      if (step.done) reply = step.value;
      else {
        asked = step.value.map((call, position) => ({ ...call, id: `call_${index + 1}_${position}` }));
        reply = { toolCalls: asked };
      }
      outputTokens += outputTokensOf(reply);
      return reply;
    },
  });
  // No gate: every call runs, as a persona allowed all of these tools would (none here is irreversible; labels,
  // drafts and draft notes are `soft`). The gate's own cost is the same in both modes and not what is measured.
  const result = await startAgent({
    model,
    system: "You are Sam's assistant. You work through tools; answer with a short summary of what you did.",
    input: task.prompt,
    tools,
    label: task.name,
    maxSteps: 20,
  }).result();
  if (result.status !== 'completed' || result.answer === undefined) {
    throw new Error(`task ${task.name} (${mode}) ended ${result.status}: ${result.reason ?? ''}`);
  }
  return {
    cost: {
      roundTrips: model.requests.length,
      inputTokens: model.requests.reduce((sum, request) => sum + inputTokensOf(request), 0),
      outputTokens,
      toolCalls,
    },
    outcome: { world, answer: result.answer },
  };
}

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defineTool, startAgent, type Tool } from '@assistant/agent';
import { type CallLogEntry, createExecutor, FileCallLog } from '@assistant/codeact';
import type { Classification } from '@assistant/config';
import { codeTools } from '@assistant/integration-host';
import {
  type ChatDelta,
  type ChatMessage,
  type ChatModel,
  type ChatResponse,
  type ProviderKind,
  type ToolSpec,
  timeAwareChatModel,
} from '@assistant/llm';
import { consolidateItem, HashingEmbedder, MemoryIndex, memoryStores } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { type MemoryContext, memoryTools } from '@assistant/sdk';
import * as z from 'zod';
import { classify } from '../../integrations/email/src/classify.ts';

/**
 * The scenarios of issue 32's suite: what Assistant does with a model, run through the real code paths (the email
 * classify stage, the agent loop) against any {@link ChatModel}. The suite replays them from the fixtures under
 * tests/fixtures/llm/<provider>/; `npm run fixtures:record` runs them against real providers to record those
 * fixtures; scripts/build-llm-fixtures.ts runs them against the fake servers to build the first fixtures from real
 * captures.
 *
 * Every input (prompts, tool results, ids the scenario makes) is fixed, so the same scenario asks the same
 * requests every time and a replay finds its recordings. What the model answers is checked by shape only (a
 * classification that validates, a tool call by name, a streamed answer), so a re-recording against a real model
 * passes too; the exact answers of the built fixtures are in {@link expectedAnswers} for the suite to compare.
 */
export const scenarioNames = [
  'email-classify',
  'chat-tool-stream',
  'agent-two-tools',
  'agent-code',
  'provider-switch',
  'memory-extract',
  'memory-recall',
] as const;
export type ScenarioName = (typeof scenarioNames)[number];

/** One thing a scenario checked, and what it saw. */
interface ScenarioCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** What {@link runScenario} returns: each check, and what the scenario observed for a caller to look at. */
export interface ScenarioOutcome {
  name: ScenarioName;
  provider: ProviderKind | undefined;
  /** Every check passed. */
  ok: boolean;
  checks: ScenarioCheck[];
  /** The model calls made, in order, with the provider that answered each. */
  calls: { provider: ProviderKind | undefined; streamed: boolean; response: ChatResponse }[];
  /** The scenario's final result: the classifications, or the final answer's text. */
  result: unknown;
  /** The pieces a streamed answer arrived in, per model call (empty for a call that was not streamed). */
  deltas: string[][];
}

export interface RunScenarioOptions {
  /**
   * `provider-switch` only: the model the third call goes to, with the whole history the first model built. Without
   * it the third call goes to the first model, and the check that the provider changed fails.
   */
  next?: ChatModel;
  signal?: AbortSignal;
}

/**
 * The provider each provider hands over to in `provider-switch`: every provider is both the one switched from and
 * the one switched to, so the three fixture sets together cover each adapter reading another's history.
 */
export const switchTargets: Record<
  'anthropic' | 'google' | 'openai-compatible',
  'anthropic' | 'google' | 'openai-compatible'
> = {
  anthropic: 'google',
  google: 'openai-compatible',
  'openai-compatible': 'anthropic',
};

/** Runs one scenario against `model`; it never throws for a wrong answer, it reports it in `checks`. */
export async function runScenario(
  name: ScenarioName,
  model: ChatModel,
  options: RunScenarioOptions = {},
): Promise<ScenarioOutcome> {
  const recorder = new CallRecorder();
  const checks: ScenarioCheck[] = [];
  const check = (checkName: string, ok: boolean, detail: string) => {
    checks.push({ name: checkName, ok, detail });
  };
  // Time awareness as a profile adds it (the line in the system prompt, message times), here, so the builder,
  // `fixtures:record` and the suite send the same requests from the adapters' bare models.
  const recorded = recorder.wrap(timeAwareChatModel(model, { timeZone: ownerTimeZone }));
  let result: unknown;
  switch (name) {
    case 'email-classify':
      result = await emailClassify(recorded, check, options.signal);
      break;
    case 'chat-tool-stream':
      result = await chatToolStream(recorded, recorder, check, options.signal);
      break;
    case 'agent-two-tools':
      result = await agentTwoTools(recorded, recorder, check, options.signal);
      break;
    case 'agent-code':
      result = await agentCode(recorded, recorder, check, options.signal);
      break;
    case 'memory-extract':
      result = await memoryExtract(recorded, check, options.signal);
      break;
    case 'memory-recall':
      result = await memoryRecall(recorded, recorder, check, options.signal);
      break;
    case 'provider-switch':
      result = await providerSwitch(
        recorded,
        recorder.wrap(timeAwareChatModel(options.next ?? model, { timeZone: ownerTimeZone })),
        recorder,
        check,
        options.signal,
      );
      break;
  }
  return {
    name,
    provider: model.provider,
    ok: checks.every((entry) => entry.ok),
    checks,
    calls: recorder.calls,
    result,
    deltas: recorder.deltas,
  };
}

// ---------------------------------------------------------------------------------------------- inputs

/** The owner's time zone (`owner.timezone`) the scenarios' requests are dated in. */
const ownerTimeZone = 'Europe/Lisbon';

/** The email platform's classifications as its manifest declares them (integrations/email/manifest.yaml). */
const emailClassifications: Record<string, Classification> = {
  human: {
    prompt:
      'Is this a personal message written by a real person to the owner (not a newsletter, notification or automated mail)?',
    type: 'confidence',
  },
  requires_response: { prompt: 'Does the sender expect the owner to answer?', type: 'boolean' },
  newsletter: { prompt: 'Is this a newsletter, mailing-list post or marketing mail?', type: 'boolean' },
  urgent: { prompt: "Does it need the owner's attention today?", type: 'boolean' },
};

/** The message `email-classify` classifies, as collect leaves it on its note. */
export const emailNote = {
  from: 'Ana Pereira <ana.pereira@example.org>',
  subject: 'Dinner on Thursday?',
  body_excerpt:
    'Hi! Are you free for dinner on Thursday at 8? There is a new place near the river. Let me know by Wednesday so I can book.\n\nAna',
  content_hash: 'scenario-email-classify-1',
};

const contact = { name: 'Ana Pereira', email: 'ana.pereira@example.org', phone: '+351 912 345 678' };

const lookupContact = defineTool({
  name: 'lookup_contact',
  description: "Finds a contact in the owner's address book by name; returns their email address and phone number.",
  input: z.object({ name: z.string().min(1) }),
  tier: 'read_only',
  // Where a run_code cell calls it (agent-code); not part of the JSON spec, so agent-two-tools asks the same.
  codePath: ['contacts', 'lookup'],
  run: async ({ name }) => (name.toLowerCase().includes('ana') ? contact : { error: `no contact named ${name}` }),
});

const nextMeeting = defineTool({
  name: 'next_meeting',
  description: "Finds the owner's next calendar event with a person, by their email address.",
  input: z.object({ email: z.string().min(3) }),
  tier: 'read_only',
  codePath: ['calendar', 'next_meeting'],
  run: async ({ email }) =>
    email === contact.email
      ? { title: 'Project review with Ana', starts_at: '2026-03-05T15:00:00+00:00', place: 'Video call' }
      : { error: `no meeting with ${email}` },
});

/** The answers the built fixtures hold, for the suite to compare exactly (a re-recording will differ). */
export const expectedAnswers = {
  'email-classify': { human: 0.97, requires_response: true, newsletter: false, urgent: false },
  'chat-tool-stream': "Ana Pereira's phone number is +351 912 345 678.",
  'agent-two-tools':
    'Your next meeting with Ana Pereira is the project review on 5 March 2026 at 15:00 (video call). Her email address is ana.pereira@example.org.',
  'agent-code':
    'Your next meeting with Ana Pereira is the project review on 5 March 2026 at 15:00 (video call). Her email address is ana.pereira@example.org.',
  'memory-extract': {
    contacts: { created: [], observed: ['dana-okafor'] },
    facts: ['Dana Okafor moved the owner’s dentist appointment to Friday 4 December 2026 at 10:30.'],
    superseded: ['The owner’s dentist appointment with Dana Okafor is on Tuesday 1 December 2026 at 09:00.'],
    tasks: ['Confirm the new dentist appointment time with Dana'],
  },
  'memory-recall': 'Your dentist appointment is on Friday 4 December 2026 at 10:30; it was moved from Tuesday.',
  'provider-switch': [
    'Tomorrow morning in Lisbon it will be 14 °C with light rain, so take a light jacket for your run.',
    'Yes: the afternoon forecast is dry at 19 °C, so a run after 3 pm avoids the rain.',
  ],
} as const;

// ---------------------------------------------------------------------------------------------- scenarios

type Check = (name: string, ok: boolean, detail: string) => void;

/** (a) The email classify stage, unchanged, over a note held in memory: one structured call. */
async function emailClassify(model: ChatModel, check: Check, signal: AbortSignal | undefined): Promise<unknown> {
  const notes = new Map<string, Record<string, unknown>>([['email/scenario.md', { ...emailNote }]]);
  const enqueued: unknown[] = [];
  const controller = new AbortController();
  // Only what classifyItemNote reaches; the cast is the price of not starting a worker for one stage.
  const context = {
    payload: { note: 'email/scenario.md' },
    platform: { name: 'inbox', enabled: true, settings: {}, classifications: emailClassifications, automations: [] },
    notes: {
      read: async (notePath: string) => {
        const data = notes.get(notePath);
        return data === undefined ? null : { path: notePath, data, content: '' };
      },
      update: async (notePath: string, change: { set: Record<string, unknown> }) => {
        notes.set(notePath, { ...notes.get(notePath), ...change.set });
      },
    },
    llm: () => model,
    enqueue: async (task: unknown) => {
      enqueued.push(task);
      return { enqueued: true };
    },
    signal: signal ?? controller.signal,
  } as unknown as Parameters<typeof classify>[0];
  const outcome = await classify(context);
  const answers = outcome.classifications as Record<string, unknown> | undefined;
  check(
    'the classifications validate',
    answers !== undefined &&
      typeof answers.human === 'number' &&
      typeof answers.requires_response === 'boolean' &&
      typeof answers.newsletter === 'boolean' &&
      typeof answers.urgent === 'boolean',
    JSON.stringify(answers),
  );
  check(
    'they are stored on the note',
    JSON.stringify(notes.get('email/scenario.md')?.classifications) === JSON.stringify(answers),
    JSON.stringify(notes.get('email/scenario.md')?.classifications),
  );
  check('evaluate is enqueued', enqueued.length === 1, JSON.stringify(enqueued));
  return answers;
}

/** The mail `memory-extract` consolidates: the dentist's practice moves an appointment memory already knows. */
const memoryMail = {
  from: 'Dana Okafor <dana@brightsmile.example>',
  subject: 'Your appointment next week',
  body: 'Hello,\n\nDr Reis is away on Tuesday, so we have moved your appointment from Tuesday 1 December at 09:00 to Friday 4 December at 10:30. Could you confirm the new time by Wednesday 2 December?\n\nBest regards,\nDana Okafor\nBright Smile Dental',
};

/** Where memory learnt the old appointment: the id of that fact is known from it (extracted ids are deterministic). */
export const memoryOldFactSource = 'email/work/2026/11/confirmation.md';

/** The model's answer the built fixtures hold (`{{old}}` stands for the id of the fact memory already has). */
export const memoryExtractAnswer = {
  people: [{ name: 'Dana Okafor', email: 'dana@brightsmile.example', organisation: 'Bright Smile Dental' }],
  facts: [
    {
      statement: expectedAnswers['memory-extract'].facts[0],
      about: ['Dana Okafor', 'dentist'],
      supersedes: ['{{old}}'],
      confidence: 0.95,
    },
  ],
  followups: [{ title: expectedAnswers['memory-extract'].tasks[0], due: '2026-12-02', about: 'Dana Okafor' }],
};

/**
 * (e) Consolidation of a mail into memory (packages/memory): one structured call over the fenced mail and the facts
 * memory already holds about its sender; the answer is applied to real notes in a temporary folder. Memory knows Dana
 * and the old appointment; the mail moves it, so the new fact supersedes the old one and a follow-up is made.
 */
async function memoryExtract(model: ChatModel, check: Check, signal: AbortSignal | undefined): Promise<unknown> {
  const root = await mkdtemp(path.join(tmpdir(), 'memory-extract-'));
  try {
    const stores = memoryStores({ notes: new FileNoteStore({ root: path.join(root, 'notes') }) });
    const dana = await stores.contacts.create(
      { name: 'Dana Okafor', emails: ['dana@brightsmile.example'], organisation: 'Bright Smile Dental' },
      { by: 'extraction' },
    );
    const old = await stores.facts.add({
      statement: expectedAnswers['memory-extract'].superseded[0],
      about: [`contact:${dana.slug}`, 'topic:dentist'],
      source: memoryOldFactSource,
      trust: 'extracted',
      observedAt: '2026-11-20T10:00:00.000Z',
      confidence: 0.9,
    });
    const outcome = await consolidateItem({
      stores,
      model,
      dataDir: path.join(root, 'data'),
      item: {
        source: 'email/work/2026/11/moved.md',
        kind: 'email',
        version: 'scenario-memory-extract-1',
        observedAt: '2026-11-26T08:30:00.000Z',
        people: [{ name: 'Dana Okafor', email: 'dana@brightsmile.example' }],
        fields: { from: memoryMail.from, subject: memoryMail.subject, body: memoryMail.body },
      },
      nowMs: Date.parse('2026-11-26T09:00:00.000Z'),
      ...(signal ? { signal } : {}),
    });
    const { facts } = await stores.facts.list({ includeSuperseded: true });
    const created = facts.filter((fact) => outcome.facts.created.includes(fact.id));
    const { tasks } = await stores.tasks.list();
    check('one fact is created', created.length === 1, JSON.stringify(outcome.facts));
    check(
      'it supersedes the old appointment',
      created[0]?.supersedes.includes(old.id) === true && outcome.facts.superseded.includes(old.id),
      JSON.stringify(created[0]?.supersedes),
    );
    check(
      'the sender is observed, not created again',
      outcome.contacts.created.length === 0 && outcome.contacts.observed.includes(dana.slug),
      JSON.stringify(outcome.contacts),
    );
    check(
      'the follow-up is a task made by extraction',
      tasks.length === 1 && tasks[0]?.created_by === 'extraction',
      JSON.stringify(tasks),
    );
    return {
      contacts: outcome.contacts,
      facts: created.map((fact) => fact.statement),
      superseded: facts.filter((fact) => outcome.facts.superseded.includes(fact.id)).map((fact) => fact.statement),
      tasks: tasks.map((task) => task.title),
    };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * (f) A chat turn with the memory tools over a real index (hashing embedder) of real notes: the model calls `recall`,
 * gets the moved appointment ranked above the one it supersedes, and streams its answer from it.
 */
async function memoryRecall(
  model: ChatModel,
  recorder: CallRecorder,
  check: Check,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const root = await mkdtemp(path.join(tmpdir(), 'memory-recall-'));
  const notes = new FileNoteStore({ root: path.join(root, 'notes') });
  const index = new MemoryIndex({ notes, dataDir: path.join(root, 'data'), embedder: new HashingEmbedder() });
  try {
    const stores = memoryStores({ notes });
    const old = await stores.facts.add({
      statement: expectedAnswers['memory-extract'].superseded[0],
      about: ['topic:dentist'],
      source: memoryOldFactSource,
      trust: 'extracted',
      observedAt: '2026-11-20T10:00:00.000Z',
    });
    const moved = await stores.facts.add({
      statement: expectedAnswers['memory-extract'].facts[0],
      about: ['topic:dentist'],
      source: 'email/work/2026/11/moved.md',
      trust: 'extracted',
      observedAt: '2026-11-26T08:30:00.000Z',
      supersedes: [old.id],
    });
    await index.start();
    const memory: MemoryContext = {
      consolidate: [],
      llm: 'default',
      timeZone: ownerTimeZone,
      context: { facts: 5, guidance: 2 },
      stores,
      index: async () => index,
    };
    const tokens: string[][] = [];
    const handle = startAgent({
      model,
      label: 'chat',
      system: 'You are Assistant, chatting with your owner. Use the tools to look things up; answer in one sentence.',
      input: 'When is my dentist appointment?',
      tools: memoryTools({ memory, owner: true, source: 'chats/scenario.md', timeZone: ownerTimeZone }),
      maxSteps: 4,
      ...(signal === undefined ? {} : { signal }),
      onEvent: (event) => {
        if (event.type !== 'token') return;
        const step = tokens[event.step - 1] ?? [];
        tokens[event.step - 1] = step;
        step.push(event.text);
      },
    });
    const result = await handle.result();
    checkToolCalls(recorder, check, 0, ['recall']);
    check('the turn completes', result.status === 'completed', `${result.status}: ${result.reason ?? ''}`);
    // What recall gave the model: the moved appointment first, the old one flagged as superseded.
    const toolMessage = JSON.stringify(recorder.requests[1]?.messages.at(-1) ?? '');
    const movedAt = toolMessage.indexOf(moved.id);
    const oldAt = toolMessage.indexOf(old.id);
    check('recall ranks the replacement first', movedAt !== -1 && (oldAt === -1 || movedAt < oldAt), toolMessage);
    const answer = result.answer ?? '';
    const pieces = tokens[1] ?? [];
    check('the answer arrives in pieces', pieces.length > 1, JSON.stringify(pieces));
    check('the answer uses the recalled fact', answer.includes('Friday 4 December'), answer);
    return answer;
  } finally {
    await index.close();
    await rm(root, { recursive: true, force: true });
  }
}

/** (b) A chat turn: the loop streams, the model calls a tool, gets its result, and streams its answer. */
async function chatToolStream(
  model: ChatModel,
  recorder: CallRecorder,
  check: Check,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const tokens: string[][] = [];
  const handle = startAgent({
    model,
    label: 'chat',
    system: 'You are Assistant, chatting with your owner. Use the tools to look things up; answer in one sentence.',
    input: "What is Ana's phone number?",
    tools: [lookupContact],
    maxSteps: 4,
    ...(signal === undefined ? {} : { signal }),
    onEvent: (event) => {
      if (event.type !== 'token') return;
      const step = tokens[event.step - 1] ?? [];
      tokens[event.step - 1] = step;
      step.push(event.text);
    },
  });
  const result = await handle.result();
  checkToolCalls(recorder, check, 0, ['lookup_contact']);
  const answer = result.answer ?? '';
  check('the turn completes', result.status === 'completed', `${result.status}: ${result.reason ?? ''}`);
  check('two model calls', result.steps === 2, String(result.steps));
  check(
    'every call streamed',
    recorder.calls.every((call) => call.streamed),
    '',
  );
  const pieces = tokens[1] ?? [];
  check('the answer arrives in pieces', pieces.length > 1, JSON.stringify(pieces));
  check('the pieces make the answer', pieces.join('') === answer, JSON.stringify(pieces.join('')));
  check('the answer uses the tool result', answer.includes('912 345 678'), answer);
  return answer;
}

/** (c) `system.agent`: a loop with two tool calls, one after the other, and a final answer. */
async function agentTwoTools(
  model: ChatModel,
  recorder: CallRecorder,
  check: Check,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const tools: Tool[] = [lookupContact as Tool, nextMeeting as Tool];
  const handle = startAgent({
    model,
    label: 'system.agent',
    // The system prompt of integrations/system/src/agent-task.ts.
    system:
      'You are Assistant, working for your owner on their notes. Use the tools to find facts; say plainly what you did not find. Answer briefly.',
    input:
      'When is my next meeting with Ana, and what is her email address? Look her up first, then find the meeting by her email address.',
    tools,
    maxSteps: 6,
    ...(signal === undefined ? {} : { signal }),
  });
  const result = await handle.result();
  check('the loop completes', result.status === 'completed', `${result.status}: ${result.reason ?? ''}`);
  check('three model calls', result.steps === 3, String(result.steps));
  checkToolCalls(recorder, check, 0, ['lookup_contact']);
  checkToolCalls(recorder, check, 1, ['next_meeting']);
  const answer = result.answer ?? '';
  check('the answer uses both results', answer.includes(contact.email) && /15[:.]00|3 ?pm/i.test(answer), answer);
  check('usage is summed', result.usage.totalTokens > 0, JSON.stringify(result.usage));
  return answer;
}

/**
 * The program the built fixtures' `run_code` call carries: both fixture tools, one after the other, in one cell.
 * (A re-recording's model writes its own; the checks look at what ran, not at the text.)
 */
export const agentCodeProgram = `const contact = await tools.contacts.lookup({ name: 'Ana' });
const meeting = await tools.calendar.next_meeting({ email: contact.email });
console.log('found', contact.name);
return { email: contact.email, meeting };`;

/**
 * (g) Code as action (issue 36): the agent-two-tools loop with the code tools (`run_code`, `search_tools` of
 * @assistant/integration-host over the real sandbox and a real call log on disk). The model writes one program that
 * calls both tools, the cell's value comes back fenced, and the model answers from it: two model calls, not three.
 */
async function agentCode(
  model: ChatModel,
  recorder: CallRecorder,
  check: Check,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const root = await mkdtemp(path.join(tmpdir(), 'agent-code-'));
  const executor = createExecutor({ timeoutMs: 30_000 });
  try {
    // Each fixture tool counts its runs and the call id it ran under (`<run_code call id>.<index>` from a cell).
    const ran: { tool: string; callId: string | undefined }[] = [];
    const counted = (tool: Tool): Tool => ({
      ...tool,
      run: async (input, context) => {
        ran.push({ tool: tool.name, callId: context.toolCallId });
        return tool.run(input, context);
      },
    });
    const fixtureTools = [counted(lookupContact as Tool), counted(nextMeeting as Tool)];
    const logs: FileCallLog[] = [];
    const tools = [
      ...fixtureTools,
      ...codeTools({
        tools: fixtureTools,
        executor,
        callLog: ({ loop, callId, codeSha256 }) => {
          const log = new FileCallLog(path.join(root, 'codeact'), {
            task: 'scenario-agent-code',
            loop,
            call_id: callId,
            code_sha256: codeSha256,
          });
          logs.push(log);
          return log;
        },
      }),
    ];
    const handle = startAgent({
      model,
      label: 'system.agent',
      // The system prompt of integrations/system/src/agent-task.ts, as in agent-two-tools.
      system:
        'You are Assistant, working for your owner on their notes. Use the tools to find facts; say plainly what you did not find. Answer briefly.',
      input:
        'When is my next meeting with Ana, and what is her email address? Write one program with run_code that looks her up, then finds the meeting by her email address.',
      tools,
      maxSteps: 6,
      ...(signal === undefined ? {} : { signal }),
    });
    const result = await handle.result();
    check('the loop completes', result.status === 'completed', `${result.status}: ${result.reason ?? ''}`);
    check('two model calls', result.steps === 2, String(result.steps));
    checkToolCalls(recorder, check, 0, ['run_code']);
    // The program is run_code's argument, as the provider's tool call carried it; nothing is read out of the text.
    const runCode = recorder.calls[0]?.response.message.toolCalls[0];
    const code = codeOf(runCode?.arguments);
    check(
      "the program is run_code's code argument",
      code?.includes('tools.contacts.lookup') === true && code.includes('tools.calendar.next_meeting'),
      runCode?.arguments ?? 'no call',
    );
    check(
      'both tools ran once, from the cell',
      JSON.stringify(ran.map((entry) => entry.tool)) === JSON.stringify(['lookup_contact', 'next_meeting']) &&
        ran.every((entry) => runCode?.id !== undefined && entry.callId?.startsWith(`${runCode.id}.`) === true),
      JSON.stringify(ran),
    );
    const logged: CallLogEntry[] = [];
    for (const log of logs) logged.push(...(await log.read()).values());
    check(
      'the call log holds both calls with their results',
      logged.length === 2 && logged.every((entry) => entry.outcome?.status === 'ok'),
      JSON.stringify(logged),
    );
    // What the model got back: the cell's value and logs, inside a fence of its own as untrusted data.
    const toolMessage = recorder.requests[1]?.messages.at(-1);
    const content = toolMessage?.role === 'tool' ? toolMessage.content : '';
    const fence = /^<<<(UNTRUSTED-[0-9a-f]+) run_code>>>\n([\s\S]*)\n<<<END \1 run_code>>>$/.exec(content);
    const cell = parseCell(fence?.[2]);
    check(
      "the cell's value reaches the model fenced as untrusted data",
      cell !== undefined &&
        cell.calls === 2 &&
        JSON.stringify(cell.value).includes(contact.email) &&
        JSON.stringify(cell.value).includes('2026-03-05T15:00'),
      content,
    );
    const answer = result.answer ?? '';
    check('the answer uses the cell value', answer.includes(contact.email) && /15[:.]00|3 ?pm/i.test(answer), answer);
    check('usage is summed', result.usage.totalTokens > 0, JSON.stringify(result.usage));
    return answer;
  } finally {
    await executor.close();
    await rm(root, { recursive: true, force: true });
  }
}

function codeOf(argumentsText: string | undefined): string | undefined {
  try {
    const parsed = JSON.parse(argumentsText ?? '') as { code?: unknown };
    return typeof parsed.code === 'string' ? parsed.code : undefined;
  } catch {
    return undefined;
  }
}

function parseCell(text: string | undefined): { value: unknown; logs: unknown; calls: unknown } | undefined {
  try {
    const parsed = JSON.parse(text ?? '') as Record<string, unknown>;
    return 'value' in parsed ? { value: parsed.value, logs: parsed.logs, calls: parsed.calls } : undefined;
  } catch {
    return undefined;
  }
}

const forecastTool: ToolSpec = {
  name: 'get_forecast',
  description: 'Gets the weather forecast for a city for tomorrow, by part of the day.',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
};

/**
 * (d) A conversation that switches provider: calls 1 and 2 on the first model (thinking, a tool call, its result,
 * an answer), then the owner's next question goes with the whole history to the second model.
 */
async function providerSwitch(
  first: ChatModel,
  second: ChatModel,
  recorder: CallRecorder,
  check: Check,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  // Streamed, as a chat turn is; the recorder keeps the pieces.
  const options = { onDelta: (_delta: ChatDelta) => {}, ...(signal === undefined ? {} : { signal }) };
  const messages: ChatMessage[] = [
    {
      role: 'system',
      content: 'You are Assistant, chatting with your owner. Think before you answer; use the tools for facts.',
    },
    // Message times, as chat history carries them: the model sees when each was said.
    {
      role: 'user',
      content: 'Will it rain in Lisbon tomorrow morning? I want to go for a run.',
      at: '2026-03-01T18:00:00Z',
    },
  ];
  // Thinking is asked for where a provider needs asking (docs/providers.md), so a real recording has some too.
  const thinking = thinkingParameters(first.provider);
  const firstCall = await first.chat({ messages: [...messages], tools: [forecastTool], ...thinking }, options);
  const toolCall = firstCall.message.toolCalls[0];
  check('call 1 asks for the forecast', toolCall?.name === 'get_forecast', JSON.stringify(firstCall.message.toolCalls));
  const thought = (firstCall.message.reasoning ?? []).some(
    (block) => block.text !== '' || block.redacted !== undefined,
  );
  // Chat completions have no standard field for thinking: DeepSeek, xAI and vLLM stream `reasoning_content`, which
  // the OpenAI adapter does not read (yet), so on openai-compatible the check only records what came back.
  check(
    "call 1 carries the first provider's thinking",
    thought || first.provider === 'openai-compatible',
    thought
      ? JSON.stringify(firstCall.message.reasoning)
      : `none returned${first.provider === 'openai-compatible' ? ' (reasoning_content is not read by the OpenAI adapter)' : ''}`,
  );
  messages.push({
    role: 'assistant',
    content: firstCall.message.content,
    toolCalls: firstCall.message.toolCalls,
    ...(firstCall.message.reasoning === undefined ? {} : { reasoning: firstCall.message.reasoning }),
  });
  for (const call of firstCall.message.toolCalls) {
    messages.push({
      role: 'tool',
      toolCallId: call.id,
      content: JSON.stringify({
        city: 'Lisbon',
        morning: { temperature_c: 14, sky: 'light rain' },
        afternoon: { temperature_c: 19, sky: 'dry, clouds clearing' },
      }),
    });
  }
  const secondCall = await first.chat({ messages: [...messages], tools: [forecastTool], ...thinking }, options);
  check('call 2 answers', (secondCall.message.content ?? '') !== '', secondCall.message.content ?? '');
  messages.push({
    role: 'assistant',
    content: secondCall.message.content,
    ...(secondCall.message.reasoning === undefined ? {} : { reasoning: secondCall.message.reasoning }),
  });
  messages.push({ role: 'user', content: 'Should I run in the afternoon instead?', at: '2026-03-01T18:05:00Z' });
  const thirdCall = await second.chat({ messages: [...messages], tools: [forecastTool] }, options);
  const third = recorder.calls[2];
  check(
    'call 3 goes to the second provider',
    third !== undefined && third.provider !== recorder.calls[0]?.provider,
    `${recorder.calls[0]?.provider} → ${third?.provider}`,
  );
  check(
    'the second provider answers from the history',
    (thirdCall.message.content ?? '') !== '' && thirdCall.message.toolCalls.length === 0,
    thirdCall.message.content ?? JSON.stringify(thirdCall.message.toolCalls),
  );
  return [secondCall.message.content, thirdCall.message.content];
}

// ---------------------------------------------------------------------------------------------- helpers

/** The request parameters that turn thinking on, per provider (docs/providers.md); none for chat completions. */
function thinkingParameters(provider: ProviderKind | undefined): { parameters?: Record<string, unknown> } {
  switch (provider) {
    case 'anthropic':
      return { parameters: { thinking: { type: 'enabled', budgetTokens: 1024 } } };
    case 'google':
      return { parameters: { thinkingConfig: { includeThoughts: true } } };
    default:
      return {};
  }
}

function checkToolCalls(recorder: CallRecorder, check: Check, callIndex: number, names: string[]): void {
  const call = recorder.calls[callIndex];
  const seen = call?.response.message.toolCalls.map((toolCall) => toolCall.name) ?? [];
  check(
    `call ${callIndex + 1} calls ${names.join(', ')}`,
    JSON.stringify(seen) === JSON.stringify(names),
    JSON.stringify(seen),
  );
  for (const toolCall of call?.response.message.toolCalls ?? []) {
    let valid = false;
    try {
      valid = typeof JSON.parse(toolCall.arguments) === 'object';
    } catch {
      valid = false;
    }
    check(`call ${callIndex + 1}: ${toolCall.name}'s arguments are a JSON object`, valid, toolCall.arguments);
  }
}

/** Remembers each call a scenario makes through the models it wraps, and the pieces each streamed reply came in. */
class CallRecorder {
  readonly calls: ScenarioOutcome['calls'] = [];
  readonly deltas: string[][] = [];
  /** What each call asked, in order. */
  readonly requests: Parameters<ChatModel['chat']>[0][] = [];

  wrap(model: ChatModel): ChatModel {
    const recorder = this;
    return {
      name: model.name,
      ...(model.model === undefined ? {} : { model: model.model }),
      ...(model.provider === undefined ? {} : { provider: model.provider }),
      contextWindow: model.contextWindow,
      // Structured output reads the capabilities to decide how it words its request, so they pass through.
      ...('capabilities' in model ? { capabilities: (model as { capabilities: unknown }).capabilities } : {}),
      async chat(request, options = {}) {
        const pieces: string[] = [];
        recorder.requests.push(request);
        const onDelta = options.onDelta;
        const response = await model.chat(
          request,
          onDelta === undefined
            ? options
            : {
                ...options,
                onDelta: (delta) => {
                  if (delta.restart === true) pieces.length = 0;
                  else pieces.push(delta.text);
                  onDelta(delta);
                },
              },
        );
        recorder.calls.push({ provider: model.provider, streamed: onDelta !== undefined, response });
        recorder.deltas.push(pieces);
        return response;
      },
    } as ChatModel;
  }
}

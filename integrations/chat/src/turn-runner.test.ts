import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { defineTool, startAgent } from '@assistant/agent';
import { createMemoryTranscriptStore, createScriptedModel, type MemoryTranscriptStore } from '@assistant/agent/testing';
import { type ChatEvent, ChatEventLog, ChatInbox, type ChatMode, ConversationStore, TurnStates } from '@assistant/chat';
import { type ChatRequest, LlmRequestError } from '@assistant/llm';
import { FileNoteStore } from '@assistant/notes';
import { DelayedError } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { type ChatTurnRunnerOptions, runChatTurns } from './turn-runner.ts';

let root: string;
let stores: ChatTurnRunnerOptions['stores'];
let transcripts: Map<string, MemoryTranscriptStore>;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-turns-'));
  const notes = new FileNoteStore({ root: path.join(root, 'notes') });
  const inbox = new ChatInbox({ directory: path.join(root, 'chat/inbox') });
  stores = {
    inbox,
    conversations: new ConversationStore({ notes, inbox }),
    events: new ChatEventLog({ directory: path.join(root, 'chat/events') }),
    turns: new TurnStates({ directory: path.join(root, 'chat/turns') }),
  };
  transcripts = new Map();
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A bounded poll for state another async path writes (the lease file, the inbox). */
async function waitFor<T>(check: () => Promise<T | undefined | false>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waited 10 s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const userTexts = (request: ChatRequest) =>
  request.messages.filter((message) => message.role === 'user').map((message) => message.content);

/** A model whose first call waits until `release` is called; every call answers with the user texts it saw. */
function heldFirstCall() {
  const gate = Promise.withResolvers<void>();
  const arrived = Promise.withResolvers<void>();
  const model = createScriptedModel({
    replies: async (request, call) => {
      if (call.index === 0) {
        arrived.resolve();
        await gate.promise;
      }
      return `saw: ${userTexts(request).join(' | ')}`;
    },
  });
  return { model, inFlight: arrived.promise, release: () => gate.resolve() };
}

function run(
  conversationId: string,
  messageId: string,
  taskId: string,
  model: ChatTurnRunnerOptions['model'],
  extra: Partial<ChatTurnRunnerOptions> = {},
) {
  return runChatTurns({
    conversationId,
    messageId,
    taskId,
    signal: new AbortController().signal,
    stores,
    settings: { mode: 'followup', collectWindowMs: 100, collectMax: 20, maxSteps: 5, persona: 'assistant' },
    model,
    startAgent: (options) => {
      let transcript = transcripts.get(options.transcriptName);
      if (!transcript) {
        transcript = createMemoryTranscriptStore();
        transcripts.set(options.transcriptName, transcript);
      }
      return startAgent({ ...options, transcript });
    },
    tools: () => [],
    pollMs: 20,
    ...extra,
  });
}

async function conversation(mode: ChatMode) {
  return (await stores.conversations.create({ mode, title: `${mode} test` })).id;
}

const send = async (conv: string, text: string, mode?: ChatMode) =>
  (await stores.inbox.accept(conv, { text, ...(mode ? { mode } : {}) })).id;

async function replies(conv: string) {
  return (await stores.conversations.get(conv)).messages.filter((message) => message.role === 'assistant');
}

async function eventTypes(conv: string): Promise<ChatEvent[]> {
  return (await stores.events.read(conv)).entries.map((entry) => entry.event);
}

/** Runs a task the way the queue would: again after each DelayedError, until it returns. */
async function runTask(conv: string, messageId: string, taskId: string, model: ChatTurnRunnerOptions['model']) {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    try {
      return await run(conv, messageId, taskId, model);
    } catch (error) {
      if (!(error instanceof DelayedError)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`task ${taskId} was delayed 100 times`);
}

/** Every accepted message is answered exactly once: reply_to covers each id once, and the inbox agrees. */
async function expectAnsweredOnce(conv: string, ids: string[]) {
  const all = (await replies(conv)).flatMap((reply) => reply.reply_to ?? []);
  expect([...all].sort()).toEqual([...ids].sort());
  expect(await stores.inbox.pending(conv)).toEqual([]);
}

describe('chat turns', () => {
  it('followup: three messages sent during a turn become three later turns, in order', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'one');
    const { model, inFlight, release } = heldFirstCall();
    const first = run(conv, m1, 't1', model);
    await inFlight;
    const later = [await send(conv, 'two'), await send(conv, 'three'), await send(conv, 'four')];
    // The turn holds the conversation: the tasks of the new messages come back later.
    await expect(run(conv, later[0] ?? '', 't2', model)).rejects.toBeInstanceOf(DelayedError);
    release();
    const done = await first;
    expect(done.turns).toBe(1);
    for (const [index, id] of later.entries()) await runTask(conv, id, `t${index + 2}`, model);

    const written = await replies(conv);
    expect(written.map((reply) => [reply.reply_to, reply.status])).toEqual([
      [[m1], 'complete'],
      [[later[0]], 'complete'],
      [[later[1]], 'complete'],
      [[later[2]], 'complete'],
    ]);
    expect(written[0]?.text).toBe('saw: one');
    // The second turn saw the conversation so far, then its own message.
    expect(written[1]?.text).toBe('saw: one | two');
    await expectAnsweredOnce(conv, [m1, ...later]);
    expect(await stores.turns.read(conv)).toBeUndefined();
    // A task whose message is answered returns at once.
    expect(await run(conv, m1, 't9', model)).toEqual({ answered_by: written[0]?.id, turns: 0 });
    const events = await eventTypes(conv);
    const types = events.map((event) => event.type).filter((type) => type !== 'token');
    expect(types.filter((type) => type === 'turn_done')).toHaveLength(4);
    expect(types.slice(0, 3)).toEqual(['turn_started', 'message', 'turn_done']);
    // The scripted model streams its reply: the tokens of the first turn, coalesced, are its text.
    const firstDone = events.findIndex((event) => event.type === 'turn_done');
    const streamed = events.slice(0, firstDone).filter((event) => event.type === 'token');
    expect(streamed[0]).toMatchObject({ turn: 't1' });
    expect(streamed.map((event) => event.text).join('')).toBe('saw: one');
  });

  it('collect: messages sent during a turn are answered together by the next one', async () => {
    const conv = await conversation('collect');
    const m1 = await send(conv, 'one');
    const { model, inFlight, release } = heldFirstCall();
    const first = run(conv, m1, 't1', model);
    await inFlight;
    const later = [await send(conv, 'two'), await send(conv, 'three'), await send(conv, 'four')];
    release();
    await first;
    await runTask(conv, later[1] ?? '', 't3', model);
    for (const [index, id] of later.entries()) {
      expect((await run(conv, id, `u${index}`, model)).turns).toBe(0);
    }
    const written = await replies(conv);
    expect(written.map((reply) => reply.reply_to)).toEqual([[m1], later]);
    expect(written[1]?.text).toBe('saw: one | two | three | four');
    await expectAnsweredOnce(conv, [m1, ...later]);
  });

  it('steer: messages sent during a turn reach the running loop and are answered by its reply', async () => {
    const conv = await conversation('steer');
    const m1 = await send(conv, 'one');
    const { model, inFlight, release } = heldFirstCall();
    const first = run(conv, m1, 't1', model);
    await inFlight;
    const later = [await send(conv, 'two'), await send(conv, 'three'), await send(conv, 'four')];
    // A steered message is interjected, then added to the lease's batch, then to the transcript.
    const userMessages = async () =>
      (await stores.conversations.get(conv)).messages.filter(
        (message) => message.role === 'user' && message.status !== 'pending',
      );
    await waitFor(async () => (await userMessages()).length === 4, 'the three messages to join the turn');
    expect((await stores.turns.read(conv))?.batch).toEqual([m1, ...later]);
    release();
    await first;
    const written = await replies(conv);
    expect(written.map((reply) => reply.reply_to)).toEqual([[m1, ...later]]);
    // The loop went on after its first answer: the model saw the interjections.
    expect(written[0]?.text).toBe('saw: one | [interjection] two | [interjection] three | [interjection] four');
    await expectAnsweredOnce(conv, [m1, ...later]);
    // The transcript holds the steered messages before the reply.
    const roles = (await stores.conversations.get(conv)).messages.map((message) => message.role);
    expect(roles).toEqual(['user', 'user', 'user', 'user', 'assistant']);
  });

  it('interrupt: the first message sent during a turn stops it (a partial reply); the next turn answers the rest', async () => {
    const conv = await conversation('interrupt');
    const m1 = await send(conv, 'one');
    const { model, inFlight } = heldFirstCall();
    const first = run(conv, m1, 't1', model);
    await inFlight;
    // The held call is never released: only the stop ends it.
    const later = [await send(conv, 'two'), await send(conv, 'three'), await send(conv, 'four')];
    await first;
    await runTask(conv, later[0] ?? '', 't2', model);
    const written = await replies(conv);
    expect(written.map((reply) => [reply.reply_to, reply.status])).toEqual([
      [[m1], 'partial'],
      [later, 'complete'],
    ]);
    expect(written[0]?.text).toContain('interrupted by a new message');
    await expectAnsweredOnce(conv, [m1, ...later]);
  });

  it('a clarification the model asks is answered by the next message, which joins the turn', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'pay the invoice');
    const model = createScriptedModel({
      replies: [
        { toolCalls: [{ name: 'ask_owner', arguments: { question: 'Which account?' } }] },
        'paid from the personal account',
      ],
    });
    const askOwner = defineTool({
      name: 'ask_owner',
      description: 'Asks the owner a question.',
      input: z.object({ question: z.string() }),
      run: async ({ question }, tool) => tool.askCaller(question),
    });
    const turn = run(conv, m1, 't1', model, { tools: () => [askOwner] });
    const asked = await waitFor(async () => (await stores.turns.read(conv))?.question, 'the question in the lease');
    expect(asked.text).toBe('Which account?');
    const m2 = await send(conv, 'the personal one');
    await turn;
    const written = await replies(conv);
    expect(written.map((reply) => [reply.reply_to, reply.text])).toEqual([
      [[m1, m2], 'paid from the personal account'],
    ]);
    expect(written[0]?.steps).toEqual([{ tool: 'ask_owner', summary: expect.stringContaining('Which account?') }]);
    // The tool got the owner's answer.
    const toolResult = model.requests[1]?.messages.find((message) => message.role === 'tool');
    expect(toolResult?.content).toContain('the personal one');
    expect((await eventTypes(conv)).find((event) => event.type === 'clarification')).toMatchObject({
      id: asked.id,
      question: 'Which account?',
    });
    await expectAnsweredOnce(conv, [m1, m2]);
  });

  it('repairs a crash between writing a reply and marking it: marked, not answered again', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'one');
    await stores.conversations.appendMessage(conv, { id: m1, role: 'user', text: 'one' });
    const reply = await stores.conversations.appendMessage(conv, {
      role: 'assistant',
      text: 'the answer',
      reply_to: [m1],
    });
    // The crashed worker's lease: a process that no longer exists.
    await stores.turns.acquire(conv, { task: 'crashed', batch: () => [m1] });
    const file = stores.turns.file(conv);
    const state = JSON.parse(await readFile(file, 'utf8'));
    await writeFile(file, JSON.stringify({ ...state, owner: { ...state.owner, pid: 2147483646 } }));

    const model = createScriptedModel({ replies: [] });
    expect(await run(conv, m1, 't2', model)).toEqual({ answered_by: reply.id, turns: 1 });
    expect(model.requests).toHaveLength(0);
    expect(await replies(conv)).toHaveLength(1);
    await expectAnsweredOnce(conv, [m1]);
    expect((await eventTypes(conv)).map((event) => event.type)).toEqual(['message', 'turn_done']);
  });

  it('a model that cannot be reached writes no reply: an error event, and the task waits it out', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'one');
    const outage = new LlmRequestError('LLM profile default failed after 3 attempts: 503 Service Unavailable', {
      status: 503,
    });
    const down = createScriptedModel({ replies: [{ error: outage }] });
    const before = Date.now();
    const error = await run(conv, m1, 't1', down).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(DelayedError);
    expect((error as DelayedError).untilMs).toBeGreaterThanOrEqual(before + 15_000);
    expect(await replies(conv)).toEqual([]);
    expect(await stores.inbox.pending(conv)).toHaveLength(1);
    expect((await eventTypes(conv)).at(-1)).toMatchObject({ type: 'error', code: 'LLM_REQUEST_FAILED' });

    // An error retrying cannot fix is said in a failed reply.
    const refused = createScriptedModel({
      replies: [{ error: new LlmRequestError('LLM profile default failed: 401 Unauthorized', { status: 401 }) }],
    });
    await run(conv, m1, 't1', refused);
    const written = await replies(conv);
    expect(written.map((reply) => reply.status)).toEqual(['failed']);
    expect(written[0]?.text).toContain('401 Unauthorized');
  });

  it('collect: waits for a quiet window before it starts, taking in what arrives meanwhile', async () => {
    const conv = await conversation('collect');
    const m1 = await send(conv, 'one');
    const model = createScriptedModel({ replies: (request) => `saw: ${userTexts(request).join(' | ')}` });
    const turn = run(conv, m1, 't1', model, {
      settings: { mode: 'followup', collectWindowMs: 1_000, collectMax: 20, maxSteps: 5, persona: 'assistant' },
    });
    await waitFor(() => stores.turns.read(conv), 'the turn to take the conversation');
    const m2 = await send(conv, 'two');
    await turn;
    expect((await replies(conv)).map((reply) => [reply.reply_to, reply.text])).toEqual([[[m1, m2], 'saw: one | two']]);
    expect(model.requests).toHaveLength(1);
  });

  it('forwards streamed tokens; a partial reply keeps the text streamed after the last restart', async () => {
    const conv = await conversation('interrupt');
    const m1 = await send(conv, 'tell me a story');
    let emit: ((event: unknown) => void) | undefined;
    const streamed = Promise.withResolvers<void>();
    const model = createScriptedModel({
      replies: async (_request, call) => {
        // What the streaming client will report: pieces, a retried request, pieces again; then it hangs.
        for (const piece of ['Once', ' upon']) emit?.({ type: 'token', step: 1, text: piece });
        emit?.({ type: 'token', step: 1, text: '', restart: true });
        for (const piece of ['Long', ' ago']) emit?.({ type: 'token', step: 1, text: piece });
        streamed.resolve();
        await new Promise((_resolve, reject) => call.signal?.addEventListener('abort', reject));
        return 'never';
      },
    });
    const turn = run(conv, m1, 't1', model, {
      startAgent: (options) => {
        emit = (event) => options.onEvent({ lineage: ['agent'], handleId: 'h', ...(event as object) } as never);
        return startAgent({ ...options, transcript: createMemoryTranscriptStore() });
      },
    });
    await streamed.promise;
    await send(conv, 'no, a poem');
    await turn;
    const [reply] = await replies(conv);
    expect(reply).toMatchObject({ reply_to: [m1], status: 'partial', text: 'Long ago' });
    const tokens = (await eventTypes(conv)).filter((event) => event.type === 'token');
    // The first piece goes out at once; later ones are coalesced; a restart is passed on.
    expect(tokens[0]).toMatchObject({ turn: 't1', text: 'Once' });
    const restart = tokens.findIndex((event) => event.restart === true);
    expect(restart).toBeGreaterThan(0);
    expect(
      tokens
        .slice(restart + 1)
        .map((event) => event.text)
        .join(''),
    ).toBe('Long ago');
    expect(tokens.map((event) => event.text).join('')).not.toContain('upon Long');
  });

  it('an aborted task keeps its lease and rethrows; run again, it resumes the same batch and loop', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'one');
    const controller = new AbortController();
    const arrived = Promise.withResolvers<void>();
    const model = createScriptedModel({
      replies: async (request, call) => {
        if (call.index === 0) {
          arrived.resolve();
          await new Promise((_resolve, reject) => call.signal?.addEventListener('abort', reject));
        }
        return `resumed with ${request.messages.length} messages`;
      },
    });
    const turn = run(conv, m1, 't1', model, { signal: controller.signal });
    await arrived.promise;
    controller.abort(new Error('worker shutting down'));
    await expect(turn).rejects.toThrow('worker shutting down');
    expect(await replies(conv)).toEqual([]);
    expect(await stores.turns.read(conv)).toMatchObject({ task: 't1', batch: [m1] });
    // Another task is told the turn is busy; the same task resumes it.
    await expect(run(conv, m1, 't2', model)).rejects.toBeInstanceOf(DelayedError);
    expect(await run(conv, m1, 't1', model)).toMatchObject({ turns: 1 });
    // The loop went on from its saved transcript (system, the message, the stop note), not from the start.
    const resumedFrom = model.requests[1]?.messages ?? [];
    expect(resumedFrom.map((message) => message.role)).toEqual(['system', 'user', 'user']);
    expect(resumedFrom[2]?.content).toContain('worker shutting down');
    expect((await replies(conv))[0]?.text).toBe('resumed with 3 messages');
    await expectAnsweredOnce(conv, [m1]);
  });

  it('an answer sent while the worker was down answers the question the resumed turn asks again', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'pay the invoice');
    const askOwner = defineTool({
      name: 'ask_owner',
      description: 'Asks the owner a question.',
      input: z.object({ question: z.string() }),
      run: async ({ question }, tool) => tool.askCaller(question),
    });
    // The resumed loop asks again only once the runner has looked at the inbox (its next `pending()` after the model
    // call began), so the answer found there is the one held for the question: an event, not a pause.
    let lookedAt: PromiseWithResolvers<void> | undefined;
    const inbox = stores.inbox;
    const pending = async (id: string) => {
      const found = await inbox.pending(id);
      lookedAt?.resolve();
      return found;
    };
    const watched = new Proxy(inbox, {
      get: (target, property) => {
        if (property === 'pending') return pending;
        const value = Reflect.get(target, property, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const model = createScriptedModel({
      // Asks until a tool result carries the owner's answer (a question cut by the stop has none).
      replies: async (request, call) => {
        const answer = request.messages.findLast(
          (message) => message.role === 'tool' && message.content.includes('personal'),
        );
        if (!answer && call.index > 0) {
          lookedAt = Promise.withResolvers<void>();
          await lookedAt.promise;
        }
        return answer
          ? `paid from ${answer.content}`
          : { toolCalls: [{ name: 'ask_owner', arguments: { question: 'Which account?' } }] };
      },
    });
    const controller = new AbortController();
    const first = run(conv, m1, 't1', model, { tools: () => [askOwner], signal: controller.signal });
    await waitFor(async () => (await stores.turns.read(conv))?.question, 'the question in the lease');
    // The worker stops while the turn waits; the owner answers meanwhile (the server says answered_question).
    controller.abort(new Error('worker shutting down'));
    await expect(first).rejects.toThrow('worker shutting down');
    const m2 = await send(conv, 'the personal one');
    // Run again, the loop asks again (its transcript was saved before the question); the answer waiting is taken.
    expect(
      await run(conv, m1, 't1', model, { tools: () => [askOwner], stores: { ...stores, inbox: watched } }),
    ).toMatchObject({ turns: 1 });
    const written = await replies(conv);
    expect(written.map((reply) => reply.reply_to)).toEqual([[m1, m2]]);
    expect(written[0]?.text).toContain('the personal one');
    await expectAnsweredOnce(conv, [m1, m2]);
  });

  it('gives the model the batch last, even when a message of it sits earlier in the transcript', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'first question');
    // A steered message the last turn took in after its final answer: in the transcript before that reply.
    await stores.conversations.appendMessage(conv, { id: m1, role: 'user', text: 'first question' });
    await stores.conversations.appendMessage(conv, { role: 'assistant', text: 'an earlier reply', reply_to: [] });
    const model = createScriptedModel({ replies: async (request) => `answered: ${request.messages.at(-1)?.content}` });
    await run(conv, m1, 't1', model);
    const sent = model.requests[0]?.messages ?? [];
    expect(sent.map((message) => [message.role, message.content])).toEqual([
      ['system', expect.any(String)],
      ['assistant', 'an earlier reply'],
      ['user', 'first question'],
    ]);
    await expectAnsweredOnce(conv, [m1]);
  });

  it('gives the model each message of the history with its time (`at`), as the conversation note has it', async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'first question');
    await stores.conversations.appendMessage(conv, { id: m1, role: 'user', text: 'first question' });
    await stores.conversations.appendMessage(conv, { role: 'assistant', text: 'an earlier reply', reply_to: [] });
    const model = createScriptedModel({ replies: async () => 'ok' });
    await run(conv, m1, 't1', model);
    const stored = (await stores.conversations.get(conv)).messages;
    const sent = (model.requests[0]?.messages ?? []).filter((message) => message.role !== 'system');
    const atOf = (role: string, text: string) =>
      stored.find((message) => message.role === role && message.text === text)?.at;
    expect(sent).toEqual([
      { role: 'assistant', content: 'an earlier reply', at: atOf('assistant', 'an earlier reply') },
      { role: 'user', content: 'first question', at: atOf('user', 'first question') },
    ]);
    expect(sent.every((message) => typeof message.at === 'string' && !Number.isNaN(Date.parse(message.at)))).toBe(true);
  });

  it("refuses the task's steering left over when a turn ends, so a late /stop does not stop the next turn", async () => {
    const conv = await conversation('followup');
    const m1 = await send(conv, 'one');
    const m2 = await send(conv, 'two');
    const discarded: string[] = [];
    const model = createScriptedModel({ replies: async (request) => `saw ${userTexts(request).at(-1)}` });
    const outcome = await run(conv, m2, 't1', model, {
      stores: {
        ...stores,
        discardSteering: async (reason) => {
          discarded.push(reason);
          return 1;
        },
      },
    });
    // Two turns in one task (m1, then m2): the requests left after each were refused before the next began.
    expect(outcome).toMatchObject({ turns: 2 });
    expect(discarded).toEqual(['the turn it was meant for had ended', 'the turn it was meant for had ended']);
    await expectAnsweredOnce(conv, [m1, m2]);
  });

  it('a turn taken over from a crashed worker interjects the batch messages its saved loop never saw', async () => {
    const conv = await conversation('steer');
    const m1 = await send(conv, 'one');
    const m2 = await send(conv, 'two');
    for (const [id, text] of [
      [m1, 'one'],
      [m2, 'two'],
    ] as const) {
      await stores.conversations.appendMessage(conv, { id, role: 'user', text });
    }
    // The crashed turn had steered m2 into its batch, but its loop saved its transcript before the interjection.
    await stores.turns.acquire(conv, { task: 'crashed', batch: () => [m1, m2] });
    const file = stores.turns.file(conv);
    const state = JSON.parse(await readFile(file, 'utf8'));
    await writeFile(file, JSON.stringify({ ...state, owner: { ...state.owner, pid: 2147483646 } }));
    transcripts.set(
      `chat-${conv}-${m1}`,
      createMemoryTranscriptStore([
        { role: 'system', content: 'You are Assistant.' },
        { role: 'user', content: 'one' },
      ]),
    );
    const model = createScriptedModel({ replies: (request) => `saw: ${userTexts(request).join(' | ')}` });
    expect(await run(conv, m2, 't2', model)).toMatchObject({ turns: 1 });
    const written = await replies(conv);
    expect(written.map((reply) => [reply.reply_to, reply.text])).toEqual([[[m1, m2], 'saw: one | [interjection] two']]);
    await expectAnsweredOnce(conv, [m1, m2]);
  });

  it("a fork's first turn sends the model the history up to the fork's message and nothing after it", async () => {
    const conv = await conversation('followup');
    const model = createScriptedModel({ replies: async (request) => `saw: ${userTexts(request).join(' | ')}` });
    for (const [index, text] of ['one', 'two', 'three'].entries()) {
      await runTask(conv, await send(conv, text), `o${index}`, model);
    }
    const said = (await stores.conversations.get(conv)).messages;
    expect(said.map((message) => message.text)).toEqual([
      'one',
      'saw: one',
      'two',
      'saw: one | two',
      'three',
      'saw: one | two | three',
    ]);
    const forkPoint = said[3]?.id ?? '';
    const fork = await stores.conversations.fork({ conversation: conv, message: forkPoint });

    const forkModel = createScriptedModel({ replies: async (request) => `saw: ${userTexts(request).join(' | ')}` });
    const next = await send(fork.id, 'four');
    await runTask(fork.id, next, 'f1', forkModel);
    expect(forkModel.requests).toHaveLength(1);
    const sent = (forkModel.requests[0]?.messages ?? []).filter((message) => message.role !== 'system');
    expect(sent.map((message) => [message.role, message.content])).toEqual([
      ['user', 'one'],
      ['assistant', 'saw: one'],
      ['user', 'two'],
      ['assistant', 'saw: one | two'],
      ['user', 'four'],
    ]);
    expect((await replies(fork.id)).at(-1)).toMatchObject({ reply_to: [next], text: 'saw: one | two | four' });
    expect(await stores.inbox.pending(fork.id)).toEqual([]);
    // The original goes on as it was: six messages, the last reply unchanged.
    expect((await stores.conversations.get(conv)).messages).toEqual(said);
  });

  it("runs the loop as the conversation's persona, else the instance's", async () => {
    const personas: string[] = [];
    const model = createScriptedModel({ replies: async () => 'ok' });
    const runAs = (conv: string, messageId: string, taskId: string) =>
      run(conv, messageId, taskId, model, {
        startAgent: (options) => {
          personas.push(options.persona);
          return startAgent({ ...options, transcript: createMemoryTranscriptStore() });
        },
      });
    const researcher = (await stores.conversations.create({ persona: 'researcher' })).id;
    await runAs(researcher, await send(researcher, 'hi'), 'p1');
    const unnamed = await conversation('followup');
    await runAs(unnamed, await send(unnamed, 'hi'), 'p2');
    expect(personas).toEqual(['researcher', 'assistant']);
  });

  it("speaks with the persona's instructions, model and tools, added to the chat's own", async () => {
    const instanceModel = createScriptedModel({ replies: async () => 'from the instance model' });
    const personaModel = createScriptedModel({ replies: async () => 'from the persona model' });
    const seen: { system: string; tools: string[] }[] = [];
    const tool = (name: string) =>
      defineTool({ name, description: name, input: z.object({}), tier: 'read_only', run: async () => 'ok' });
    const asked: string[] = [];
    const conv = (await stores.conversations.create({ persona: 'support' })).id;
    await run(conv, await send(conv, 'hi'), 'q1', instanceModel, {
      tools: () => [tool('list_queue'), tool('shared')],
      persona: async (name) => {
        asked.push(name);
        return {
          instructions: 'You answer customers of the bakery. Sign as Ana.',
          model: personaModel,
          tools: [tool('shared'), tool('crm__lookup')],
        };
      },
      startAgent: (options) => {
        seen.push({ system: options.system, tools: options.tools.map((each) => each.name) });
        return startAgent({ ...options, transcript: createMemoryTranscriptStore() });
      },
    });
    expect(asked).toEqual(['support']);
    // The chat's own rules stay first; the persona's words follow, named.
    expect(seen[0]?.system).toMatch(/^You are Assistant, a back office/);
    expect(seen[0]?.system).toContain(
      'You speak as the persona support. Its instructions, from the owner:\n\nYou answer customers of the bakery. Sign as Ana.',
    );
    expect(seen[0]?.tools).toEqual(['list_queue', 'shared', 'crm__lookup']);
    expect((await replies(conv)).map((message) => message.text)).toEqual(['from the persona model']);
  });
  it("adds memory's context for the batch's messages to the system prompt, and answers without it when memory fails", async () => {
    const model = createScriptedModel({ replies: async () => 'ok' });
    const seen: string[] = [];
    const asked: string[][] = [];
    const startAgentSeeing: ChatTurnRunnerOptions['startAgent'] = (options) => {
      seen.push(options.system);
      return startAgent({ ...options, transcript: createMemoryTranscriptStore() });
    };
    const conv = await conversation('followup');
    await run(conv, await send(conv, 'When is the dentist?'), 'm1', model, {
      startAgent: startAgentSeeing,
      memoryContext: async ({ texts }) => {
        asked.push([...texts]);
        return 'What you remember: <<<OWNER-x facts/f-1.md>>>The dentist moved to Friday<<<END OWNER-x facts/f-1.md>>>';
      },
    });
    expect(asked).toEqual([['When is the dentist?']]);
    expect(seen[0]).toMatch(/^You are Assistant, a back office/);
    expect(seen[0]).toContain('\n\nWhat you remember: <<<OWNER-x facts/f-1.md>>>The dentist moved to Friday');

    const warnings: string[] = [];
    await run(conv, await send(conv, 'And the vet?'), 'm2', model, {
      startAgent: startAgentSeeing,
      memoryContext: async () => {
        throw new Error('index unreadable');
      },
      warn: (message) => warnings.push(message),
    });
    expect(seen[1]).not.toContain('What you remember');
    expect(warnings).toEqual(['chat turn without memory: index unreadable']);
    expect((await replies(conv)).map((message) => message.text)).toEqual(['ok', 'ok']);
  });
});

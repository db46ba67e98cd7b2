// Chat turns through a real worker process: messages accepted into the inbox, one chat.turn task each (as the
// server enqueues them), a model that takes most of a second per call, and the worker SIGKILLed mid-turn and
// started again: every accepted message is answered exactly once, none lost.
import path from 'node:path';
import { ChatEventLog, ChatInbox, type ChatMode, ConversationStore, TurnStates } from '@assistant/chat';
import { loadRuntime } from '@assistant/integration-host';
import { type FakeChatRequest, FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

/** The user messages the model was given, after the last answer it saw. */
const newUserTexts = (request: FakeChatRequest) => {
  const messages = request.body.messages as { role: string; content: string | null }[];
  const last = messages.findLastIndex((message) => message.role === 'assistant');
  return messages
    .slice(last + 1)
    .filter((message) => message.role === 'user')
    .map((message) => message.content ?? '');
};

/** A data directory whose default model is `model`, and the stores the test reads, as the server would use them. */
async function chatWorld(model: FakeOpenAiServer, dir: TempDir) {
  const config = await dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
queue:
  claim_grace: 200ms
`,
  );
  const runtime = await loadRuntime({ installation, configPath: config, cwd: dir.path });
  const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
  const inbox = new ChatInbox({ directory: path.join(runtime.config.paths.dataDir, 'chat/inbox') });
  const conversations = new ConversationStore({
    notes: new FileNoteStore({ root: runtime.config.paths.notes }),
    inbox,
  });
  const turns = new TurnStates({ directory: path.join(runtime.config.paths.dataDir, 'chat/turns') });
  const sent = new Map<string, string[]>();
  // As the server does it: the message is stored, then its turn task is enqueued.
  const send = async (conversation: string, text: string) => {
    const { id } = await inbox.accept(conversation, { text });
    sent.get(conversation)?.push(id);
    const outcome = await queue.enqueue({
      type: 'chat.turn',
      payload: { conversation, message: id },
      priority: 1,
      source: 'api',
      integration: 'chat',
    });
    expect(outcome.status).toBe('enqueued');
  };
  const open = async (mode: ChatMode) => {
    const { id } = await conversations.create({ mode, title: mode });
    sent.set(id, []);
    return id;
  };
  return { config, runtime, queue, inbox, conversations, turns, sent, send, open };
}

describe('chat turns in a worker that is killed mid-turn', () => {
  it('answers every accepted message exactly once, in followup, collect and steer conversations', {
    timeout: 90_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({
      respond: (request) => ({ text: `answer to ${newUserTexts(request).join(' + ')}`, delayMs: 800 }),
    });
    await using dir = await tempDir();
    const { config, runtime, queue, inbox, conversations, turns, sent, send, open } = await chatWorld(model, dir);
    const followup = await open('followup');
    const collect = await open('collect');
    const steer = await open('steer');

    let worker: NodeProcess | undefined = startNode({ args: [cliMain, 'work', '--config', config] });
    try {
      await send(followup, 'f1');
      await send(collect, 'c1');
      await send(steer, 's1');
      await waitUntil(() => model.requests.length >= 1 || undefined, { what: 'the first model call' });
      for (const text of ['2', '3', '4']) {
        await send(followup, `f${text}`);
        await send(collect, `c${text}`);
        await send(steer, `s${text}`);
      }
      // Kill the worker while a model call is in flight: the turn is cut between its start and its reply.
      const before = model.requests.length;
      await waitUntil(() => model.requests.length > Math.max(before, 2) || undefined, {
        what: 'a model call after the first turns',
        timeoutMs: 40_000,
      });
      worker.child.kill('SIGKILL');
      await worker.exited;
      // The killed worker left messages unanswered and a turn holding its conversation.
      const pendingNow = async () =>
        (await inbox.pending(followup)).length +
        (await inbox.pending(collect)).length +
        (await inbox.pending(steer)).length;
      expect(await pendingNow()).toBeGreaterThan(0);
      const leases = [await turns.read(followup), await turns.read(collect), await turns.read(steer)].filter(
        (lease) => lease !== undefined,
      );
      expect(leases.length).toBeGreaterThan(0);

      worker = startNode({ args: [cliMain, 'work', '--config', config] });
      await waitUntil(
        async () => {
          const done = (await queue.list({ state: 'done', type: 'chat.turn' })).length;
          return (await pendingNow()) === 0 && done === 12;
        },
        { what: 'all 12 messages answered and their 12 tasks done', timeoutMs: 70_000 },
      );
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }

    for (const [conversation, ids] of sent) {
      const messages = (await conversations.get(conversation)).messages;
      const replies = messages.filter((message) => message.role === 'assistant');
      const answered = replies.flatMap((reply) => reply.reply_to ?? []);
      // Exactly once each, in order.
      expect(answered).toEqual(ids);
      expect(replies.every((reply) => reply.status === 'complete')).toBe(true);
      for (const id of ids) expect((await inbox.answeredBy(conversation, id))?.replyId).toBeDefined();
      // Each user message is in the transcript once.
      expect(messages.filter((message) => message.role === 'user').map((message) => message.id)).toEqual(ids);
    }
    const followupReplies = (await conversations.get(followup)).messages.filter((m) => m.role === 'assistant');
    expect(followupReplies.map((reply) => reply.reply_to?.length)).toEqual([1, 1, 1, 1]);
    const collectReplies = (await conversations.get(collect)).messages.filter((m) => m.role === 'assistant');
    expect(collectReplies.length).toBeLessThan(4);
    // Steered messages joined the running turn: fewer replies than messages.
    const steerReplies = (await conversations.get(steer)).messages.filter((m) => m.role === 'assistant');
    expect(steerReplies.length).toBeLessThan(4);
    expect(await queue.list({ state: 'failed' })).toEqual([]);
    // The replies streamed: token events in the conversation's event log, and every reply has its turn_done.
    const events = (
      await new ChatEventLog({ directory: path.join(runtime.config.paths.dataDir, 'chat/events') }).read(followup)
    ).entries.map((entry) => entry.event);
    expect(events.filter((event) => event.type === 'token').length).toBeGreaterThan(0);
    const done = events.filter((event) => event.type === 'turn_done').map((event) => event.reply);
    expect(done).toEqual(expect.arrayContaining(followupReplies.map((reply) => reply.id)));
  });
  it('stops the running turn for a message in interrupt mode, with a partial reply, and answers each message once across a SIGKILL', {
    timeout: 90_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({
      respond: (request) => ({ text: `answer to ${newUserTexts(request).join(' + ')}`, delayMs: 800 }),
    });
    await using dir = await tempDir();
    const { config, queue, inbox, conversations, sent, send, open } = await chatWorld(model, dir);
    const chat = await open('interrupt');
    let worker = startNode({ args: [cliMain, 'work', '--config', config] });
    try {
      await send(chat, 'i1');
      await waitUntil(() => model.requests.length >= 1 || undefined, { what: "the first turn's model call" });
      for (const text of ['i2', 'i3', 'i4']) await send(chat, text);
      const first = await waitUntil(
        async () => (await conversations.get(chat)).messages.find((message) => message.role === 'assistant'),
        { what: 'the reply of the interrupted turn' },
      );
      expect(first).toMatchObject({ status: 'partial', reply_to: [sent.get(chat)?.[0]] });
      // The next turn's model call is in flight: kill the worker there.
      await waitUntil(() => model.requests.length >= 2 || undefined, { what: "the next turn's model call" });
      worker.child.kill('SIGKILL');
      await worker.exited;
      expect((await inbox.pending(chat)).length).toBeGreaterThan(0);
      worker = startNode({ args: [cliMain, 'work', '--config', config] });
      await waitUntil(
        async () =>
          (await inbox.pending(chat)).length === 0 &&
          (await queue.list({ state: 'done', type: 'chat.turn' })).length === 4,
        { what: 'the four messages answered and their four tasks done', timeoutMs: 60_000 },
      );
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
    const replies = (await conversations.get(chat)).messages.filter((message) => message.role === 'assistant');
    // Each message answered once, in order; every turn but the last was cut by the message after it.
    expect(replies.flatMap((reply) => reply.reply_to ?? [])).toEqual(sent.get(chat));
    expect(replies.at(-1)?.status).toBe('complete');
    expect(replies.slice(0, -1).every((reply) => reply.status === 'partial')).toBe(true);
    expect(replies.length).toBeGreaterThanOrEqual(2);
    expect(await queue.list({ state: 'failed' })).toEqual([]);
  });
});

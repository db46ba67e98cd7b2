import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatService } from './chat-service.ts';

let root: string;
let queue: TaskQueue;
let chat: ChatService;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-service-'));
  queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
  chat = new ChatService({
    notes: new FileNoteStore({ root: path.join(root, 'data', 'notes') }),
    dataDir: path.join(root, 'data'),
    controlRoot: path.join(root, 'data', 'control'),
    queue,
    defaultMode: 'steer',
  });
});

afterEach(async () => {
  await queue.close();
  await rm(root, { recursive: true, force: true });
});

const turnTasks = async () => {
  const tasks = [];
  for (const entry of await queue.list({ type: 'chat.turn' })) {
    const record = entry.name ? await queue.get(entry.name.id) : undefined;
    if (record?.task) tasks.push({ payload: record.task.payload, priority: record.task.priority });
  }
  return tasks;
};

describe('ChatService', () => {
  it('stores a message, tells its delivery, writes its event and enqueues its turn at priority 1', async () => {
    const conversation = await chat.create({ title: 'Morning' });
    expect(conversation.mode).toBe('steer');
    const posted = await chat.post(conversation.id, { text: "what's urgent?", clientId: 'c-1' });
    expect(posted).toEqual({ id: expect.stringMatching(/^m/), delivery: 'started', duplicate: false });
    expect(await turnTasks()).toEqual([
      { payload: { conversation: conversation.id, message: posted.id }, priority: 1 },
    ]);
    const { entries } = await chat.events.read(conversation.id);
    expect(entries.map((entry) => entry.event)).toEqual([
      expect.objectContaining({
        type: 'message',
        message: expect.objectContaining({ id: posted.id, role: 'user', text: "what's urgent?", status: 'pending' }),
      }),
    ]);
    expect((await chat.get(conversation.id)).messages).toEqual([
      expect.objectContaining({ id: posted.id, role: 'user', status: 'pending' }),
    ]);

    // A resend is the same message: no new event, its turn enqueued again (a no-op once it is answered).
    const again = await chat.post(conversation.id, { text: "what's urgent?", clientId: 'c-1' });
    expect(again).toMatchObject({ id: posted.id, duplicate: true });
    expect((await chat.events.read(conversation.id)).entries).toHaveLength(1);
    expect(await turnTasks()).toHaveLength(2);
    await chat.inbox.markAnswered(conversation.id, { ids: [posted.id], replyId: 'm-reply' });
    await chat.post(conversation.id, { text: "what's urgent?", clientId: 'c-1' });
    expect(await turnTasks()).toHaveLength(2);
  });

  it('says how a message joins a running turn, by its mode, and answers a pending question first', async () => {
    const { id } = await chat.create({});
    const first = await chat.post(id, { text: 'one' });
    const acquired = await chat.turns.acquire(id, { task: '0'.repeat(26), batch: () => [first.id] });
    expect(acquired.status).toBe('acquired');
    expect((await chat.post(id, { text: 'two' })).delivery).toBe('steered');
    expect((await chat.post(id, { text: 'three', mode: 'followup' })).delivery).toBe('queued');
    expect((await chat.post(id, { text: 'four', mode: 'collect' })).delivery).toBe('collected');
    expect((await chat.post(id, { text: 'five', mode: 'interrupt' })).delivery).toBe('started');
    await chat.turns.update(id, '0'.repeat(26), (state) => ({
      ...state,
      question: { id: 'q1', text: 'Which invoice?', asked_at: new Date().toISOString() },
    }));
    expect((await chat.post(id, { text: 'the dentist' })).delivery).toBe('answered_question');

    // The worker can take the answer, and clear the question, before the server that stored it says how it went.
    await chat.turns.update(id, '0'.repeat(26), (state) => ({
      ...state,
      question: { id: 'q2', text: 'Which month?', asked_at: new Date().toISOString() },
    }));
    const accept = chat.inbox.accept.bind(chat.inbox);
    chat.inbox.accept = async (conversation, options) => {
      const accepted = await accept(conversation, options);
      await chat.turns.update(id, '0'.repeat(26), ({ question: _answered, ...state }) => ({
        ...state,
        answers: [...(state.answers ?? []), accepted.id],
      }));
      return accepted;
    };
    expect((await chat.post(id, { text: 'March', mode: 'followup' })).delivery).toBe('answered_question');
    chat.inbox.accept = accept;

    const stopped = await chat.stop(id);
    expect(stopped).toEqual({ task: '0'.repeat(26) });
    const requests = await new ControlFiles({
      root: path.join(root, 'data', 'control'),
      taskId: '0'.repeat(26),
    }).pending();
    expect(requests.map((entry) => entry.request?.action)).toEqual(['stop']);
    await chat.turns.release(id, '0'.repeat(26));
    expect(await chat.stop(id)).toEqual({});
  });

  it('enqueues a turn for every pending message on resume, and refuses a conversation that does not exist', async () => {
    const { id } = await chat.create({});
    await chat.inbox.accept(id, { text: 'stored, then the process died' });
    expect(await chat.resume()).toEqual({ enqueued: 1 });
    expect(await turnTasks()).toHaveLength(1);
    const refused = await chat.post('c-nothing', { text: 'hello' }).catch((error: unknown) => error);
    expect(isAssistantError(refused) && refused.code).toBe('CHAT_NOT_FOUND');
    const unsafe = await chat.post('../etc', { text: 'hello' }).catch((error: unknown) => error);
    expect(isAssistantError(unsafe) && unsafe.code).toBe('CHAT_INPUT_INVALID');
  });

  it('finds the conversation of a channel and peer, and starts another when asked', async () => {
    const first = await chat.conversationFor({ channel: 'telegram', peer: '42' });
    expect(await chat.conversationFor({ channel: 'telegram', peer: '42' })).toBe(first);
    expect(await chat.conversationFor({ channel: 'telegram', peer: '43' })).not.toBe(first);
    const fresh = await chat.conversationFor({ channel: 'telegram', peer: '42', fresh: true });
    expect(fresh).not.toBe(first);
    expect(await chat.conversationFor({ channel: 'telegram', peer: '42' })).toBe(fresh);
  });

  it('records the persona on a new conversation and forks one, never the notifications conversation', async () => {
    const conversation = await chat.create({ title: 'Morning' });
    expect(conversation.persona).toBe('assistant');
    await chat.conversations.appendMessage(conversation.id, { id: 'm1', role: 'user', text: 'hello' });
    const fork = await chat.fork({ conversation: conversation.id, message: 'm1', channel: 'api' });
    expect(fork).toMatchObject({ persona: 'assistant', channel: 'api', mode: 'steer' });
    expect(await turnTasks()).toEqual([]);

    const notifications = await chat.create({ id: 'notifications', channel: 'notifications', peer: 'owner' });
    await chat.conversations.appendMessage(notifications.id, { id: 'n1', role: 'assistant', text: 'a mail said…' });
    await expect(chat.fork({ conversation: 'notifications', message: 'n1' })).rejects.toSatisfy(
      (error) => isAssistantError(error, 'CHAT_INPUT_INVALID') && /cannot be forked/.test(error.message),
    );
  });
});

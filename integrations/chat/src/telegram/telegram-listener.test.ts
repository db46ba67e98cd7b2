import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { memo, memoTail, mustShow, toolCallApprovalId, writeSurfaceApprovals } from '@assistant/actions/testing';
import type { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { approvalRendering, describeApproval, type ListenerApprovals, type ListenerCondition } from '@assistant/sdk';
import { beforeEach, describe, expect, it } from 'vitest';
import type { ChatSettings } from '../settings.generated.ts';
import { answerAsWorker } from '../testing/answer-as-worker.ts';
import { channelTestBed, type RunningListener, until } from '../testing/channel-test-bed.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeTelegram } from '../testing/fake-telegram.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { runTelegram } from './telegram-listener.ts';

const owner = 4242;
const stranger = 9999;

const bed = channelTestBed({
  prefix: 'assistant-telegram-',
  start: () => FakeTelegram.start(),
  secrets: (fake) => [fake.token],
});
/** What the listener reported of the Bot API's condition, in order. */
let conditions: ListenerCondition[];

beforeEach(() => {
  conditions = [];
});

/** Runs the listener in this process against the fake, as the server's supervisor would. */
function startListener(
  chat: ChatService,
  options: { token?: string; apiRoot?: string; approvals?: ListenerApprovals; noToken?: boolean } = {},
): RunningListener {
  const settings = {
    ...chatSettingsDefaults,
    telegram: {
      ...(options.noToken ? {} : { token: bed.secret('telegram', options.token ?? bed.platform.token) }),
      allowed_users: [owner],
      api_root: options.apiRoot ?? bed.platform.apiRoot,
      poll_timeout: 2_000,
    },
  } satisfies ChatSettings;
  return bed.run((context) =>
    runTelegram(
      chatListenerContext({
        listener: 'telegram',
        settings,
        configDir: bed.root,
        chat,
        ...context,
        approvals: options.approvals,
        condition: (condition) => conditions.push(condition),
      }),
    ),
  );
}

async function conversationsOf(chat: ChatService, peer: number) {
  return (await chat.list()).filter((one) => one.channel === 'telegram' && one.peer === String(peer));
}

async function firstConversation(chat: ChatService, peer: number) {
  return (await conversationsOf(chat, peer))[0];
}

async function storedTexts(chat: ChatService, conversation: string): Promise<string[]> {
  return (await chat.inbox.messages(conversation)).map((message) => message.text);
}

function textsTo(chatId: number): string[] {
  return bed.platform.messagesTo(chatId).map((message) => message.text);
}

describe('the Telegram listener', () => {
  it('takes an allowed user’s message and streams the reply: sent on the first token, edited, then final', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'what is urgent?' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the message stored');
    expect(await storedTexts(chat, id)).toEqual(['what is urgent?']);
    expect((await chat.inbox.messages(id))[0]?.clientId).toMatch(/^tg-\d+$/);
    // Its turn is enqueued right after the message is stored.
    await until(async () => (await bed.queue.list({ type: 'chat.turn' })).length === 1, 'the turn enqueued');

    await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'The dentist' });
    await until(() => bed.platform.messagesTo(owner).some((one) => one.text === 'The dentist'), 'the first token sent');
    await chat.events.append(id, { type: 'token', step: 0, text: ' invoice is due' });
    await until(() => textsTo(owner).includes('The dentist invoice is due'), 'the streamed text edited in');
    await answerAsWorker(chat, id, 'The dentist invoice is due tomorrow.');
    await until(() => textsTo(owner).includes('The dentist invoice is due tomorrow.'), 'the final text');

    // One Telegram message, edited: the first token, the text so far, the final reply.
    expect(bed.platform.messagesTo(owner)).toHaveLength(1);
    expect(bed.platform.messagesTo(owner)[0]?.texts).toEqual([
      'The dentist',
      'The dentist invoice is due',
      'The dentist invoice is due tomorrow.',
    ]);
    expect(bed.logs.join('\n')).not.toContain(bed.platform.token);
  });

  it('ignores a stranger: nothing stored, nothing sent, one log line with the user id and not the text', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: stranger, text: 'my bank password is hunter2' });
    bed.platform.send({ from: owner, text: 'hello' });
    // Updates are handled in order: once the owner's message is stored, the stranger's was dealt with.
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    await until(async () => (await storedTexts(chat, conversation.id)).length === 1, 'the owner’s message');
    expect(await conversationsOf(chat, stranger)).toEqual([]);
    expect(bed.platform.messagesTo(stranger)).toEqual([]);
    expect(bed.platform.callsOf('sendChatAction').every((call) => Number(call.params.chat_id) === owner)).toBe(true);
    expect(bed.logs.filter((line) => line.includes(String(stranger)))).toEqual([
      `info ignored a Telegram message from user ${stranger}: not in telegram.allowed_users`,
    ]);
    expect(bed.logs.join('\n')).not.toContain('hunter2');
  });

  it('stores an update Telegram delivers twice once: again after it was confirmed, or after a crash before', async () => {
    const chat = bed.chatService();
    const first = startListener(chat);
    const once = bed.platform.send({ from: owner, text: 'once' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the first message stored');
    // Delivered again after the listener confirmed it: skipped.
    bed.platform.redeliver(once);
    bed.platform.send({ from: owner, text: 'next' });
    await until(async () => (await storedTexts(chat, id)).length >= 2, 'the next message stored');
    await first.stop();

    // As if the server died after storing "next" and before saving the offset past it: Telegram hands it out
    // again, and its client id (tg-<update id>) makes it the message already stored.
    const stateFile = path.join(bed.root, 'data', 'chat', 'telegram', 'chat.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8'));
    state.offset = once + 1;
    await writeFile(stateFile, JSON.stringify(state));
    startListener(chat);
    bed.platform.send({ from: owner, text: 'last' });
    await until(async () => (await storedTexts(chat, id)).length >= 3, 'the last message stored');
    expect(await storedTexts(chat, id)).toEqual(['once', 'next', 'last']);
    // The `message` event is appended just after the inbox accepted the message.
    const userEvents = async () =>
      (await chat.events.read(id)).entries.filter(
        (entry) => entry.event.type === 'message' && (entry.event.message as { role: string }).role === 'user',
      );
    await until(async () => (await userEvents()).length >= 3, 'the last message’s event');
    expect(await userEvents()).toHaveLength(3);
  });

  it('resumes after a restart from the stored offset: nothing repeated, nothing skipped, no reply sent twice', async () => {
    const chat = bed.chatService();
    const first = startListener(chat);
    bed.platform.send({ from: owner, text: 'first' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the first message stored');
    await answerAsWorker(chat, id, 'First answer.');
    await until(() => textsTo(owner).includes('First answer.'), 'the first answer sent');
    await first.stop();

    const stateFile = path.join(bed.root, 'data', 'chat', 'telegram', 'chat.json');
    const state = JSON.parse(await readFile(stateFile, 'utf8'));
    const second = bed.platform.send({ from: owner, text: 'second' });
    expect(state.offset).toBe(second);
    // As if the server died after recording the reply as sent but before storing how far it read the events: the
    // restarted listener reads them again, and the record of sent replies keeps the first answer from going twice.
    state.conversations[id].events = 0;
    await writeFile(stateFile, JSON.stringify(state));
    // Written while the listener was down: sent once it is back.
    await answerAsWorker(chat, id, 'An answer written while the server was down.');

    startListener(chat);
    await until(async () => (await storedTexts(chat, id)).length === 2, 'the second message stored');
    await until(
      () => textsTo(owner).includes('An answer written while the server was down.'),
      'the answer written while down',
    );
    expect(Number(bed.platform.callsOf('getUpdates').at(-1)?.params.offset)).toBeGreaterThanOrEqual(second);
    expect(await storedTexts(chat, id)).toEqual(['first', 'second']);
    expect(textsTo(owner)).toEqual(['First answer.', 'An answer written while the server was down.']);
  });

  it('keeps the conversation a state written before conversations were per thread records for the user', async () => {
    const chat = bed.chatService();
    const recorded = await chat.conversationFor({ channel: 'telegram', peer: String(owner), title: 'Telegram' });
    // A newer conversation of the user, which the chat service would hand out first.
    await chat.conversationFor({ channel: 'telegram', peer: String(owner), fresh: true, title: 'Telegram' });
    const stateFile = path.join(bed.root, 'data', 'chat', 'telegram', 'chat.json');
    await mkdir(path.dirname(stateFile), { recursive: true });
    await writeFile(
      stateFile,
      JSON.stringify({
        version: 1,
        offset: 0,
        peers: { [String(owner)]: recorded },
        conversations: { [recorded]: { chat: String(owner), events: 0 } },
        sent: {},
        notified: {},
        notifications: 0,
      }),
    );
    startListener(chat);
    bed.platform.send({ from: owner, text: 'still here' });
    await until(async () => (await storedTexts(chat, recorded)).length === 1, 'stored in the recorded conversation');
    const state = JSON.parse(await readFile(stateFile, 'utf8'));
    expect(state.threads).toEqual({ [`${owner} ${owner}`]: recorded });
  });

  it('goes on editing the streamed message after a restart mid-reply', async () => {
    const chat = bed.chatService();
    const first = startListener(chat);
    bed.platform.send({ from: owner, text: 'tell me' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    await until(async () => (await storedTexts(chat, conversation.id)).length === 1, 'the message stored');
    await chat.events.append(conversation.id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(conversation.id, { type: 'token', step: 0, text: 'Once upon' });
    await until(() => textsTo(owner).includes('Once upon'), 'the first token sent');
    // Telegram shows the message a moment before the runner has its id and records what it streams into: stopped in
    // between, the restarted runner would rightly send a new message (what the conformance suite waits for too).
    await until(async () => {
      const stateFile = path.join(bed.root, 'data', 'chat', 'telegram', 'chat.json');
      const state = JSON.parse(await readFile(stateFile, 'utf8').catch(() => '{}')) as {
        conversations?: Record<string, { preview?: unknown }>;
      };
      return state.conversations?.[conversation.id]?.preview !== undefined;
    }, 'the streamed message recorded');
    await first.stop();
    await chat.events.append(conversation.id, { type: 'token', step: 0, text: ' a time' });

    startListener(chat);
    await until(() => textsTo(owner).includes('Once upon a time'), 'the streamed text, whole, edited in');
    await answerAsWorker(chat, conversation.id, 'Once upon a time, the end.');
    await until(() => textsTo(owner).includes('Once upon a time, the end.'), 'the final text');
    expect(bed.platform.messagesTo(owner)).toHaveLength(1);
    expect(bed.platform.messagesTo(owner)[0]?.texts).toEqual([
      'Once upon',
      'Once upon a time',
      'Once upon a time, the end.',
    ]);
  });

  it('re-reads the whole streamed text after a restart even when a message came in the middle of the turn', async () => {
    const chat = bed.chatService();
    const stateFile = path.join(bed.root, 'data', 'chat', 'telegram', 'chat.json');
    const first = startListener(chat);
    bed.platform.send({ from: owner, text: 'tell me' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the message stored');
    await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'Once upon' });
    await until(() => textsTo(owner).includes('Once upon'), 'the first token sent');
    // A follow-up while the reply streams: its `message` event lands in the middle of the turn.
    bed.platform.send({ from: owner, text: 'and then?' });
    await until(async () => (await storedTexts(chat, id)).length === 2, 'the follow-up stored');
    // An error said in the middle of the turn is said once, restart or not.
    await chat.events.append(id, { type: 'error', message: 'The calendar is unreachable.', code: 'X' });
    await until(() => textsTo(owner).includes('⚠️ The calendar is unreachable.'), 'the error said');
    await chat.events.append(id, { type: 'token', step: 0, text: ' a time' });
    // Events are handled in order: once this is edited in, the follow-up's event was handled before it.
    await until(() => textsTo(owner).includes('Once upon a time'), 'the token after the follow-up edited in');
    // One more update, so that the poll loop saves the state after the follow-up's event was handled.
    const help = bed.platform.send({ from: owner, text: '/help' });
    await until(async () => JSON.parse(await readFile(stateFile, 'utf8')).offset > help, 'the state saved');
    await first.stop();
    await chat.events.append(id, { type: 'token', step: 0, text: ' there was' });

    startListener(chat);
    const after = await until(
      () => bed.platform.messagesTo(owner)[0]?.texts.find((text) => text.includes('there was')),
      'the streamed text edited after the restart',
    );
    expect(after).toBe('Once upon a time there was');
    await answerAsWorker(chat, id, 'Once upon a time there was an end.');
    await until(() => textsTo(owner).includes('Once upon a time there was an end.'), 'the final text');
    expect(bed.platform.messagesTo(owner)[0]?.texts).toEqual([
      'Once upon',
      'Once upon a time',
      'Once upon a time there was',
      'Once upon a time there was an end.',
    ]);
    expect(textsTo(owner).filter((text) => text.includes('calendar'))).toHaveLength(1);
  });

  it('sends a reply the turn runner wrote twice once, and a repeat does not cut the next streamed reply', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'one' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the first message stored');
    await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'First' });
    await until(() => textsTo(owner).includes('First'), 'the first token sent');
    const reply = await answerAsWorker(chat, id, 'First answer.');
    const done = { type: 'turn_done' as const, turn: 't1', reply, reply_to: [], status: 'complete' };
    await chat.events.append(id, done);
    await until(() => textsTo(owner).includes('First answer.'), 'the first answer');
    // After a crash the turn runner writes the reply's `message` and `turn_done` again (its repair step).
    const repeated = (await chat.events.read(id)).entries.find(
      (entry) => (entry.event.message as { id?: string } | undefined)?.id === reply,
    )?.event;
    expect(repeated).toBeDefined();
    await chat.events.append(id, { ...(repeated as { type: 'message' }) });
    await chat.events.append(id, done);

    bed.platform.send({ from: owner, text: 'two' });
    await until(async () => (await storedTexts(chat, id)).length === 2, 'the second message stored');
    await chat.events.append(id, { type: 'turn_started', turn: 't2', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'Second' });
    await until(() => textsTo(owner).includes('Second'), 'the second reply’s first token sent');
    // A repeat of the first reply in the middle of the second turn is dropped: the second reply streams on.
    await chat.events.append(id, { ...(repeated as { type: 'message' }) });
    await chat.events.append(id, done);
    await chat.events.append(id, { type: 'token', step: 0, text: ' answer' });
    await until(() => textsTo(owner).some((text) => text.endsWith('answer')), 'the second reply’s next token');
    await answerAsWorker(chat, id, 'Second answer, done.');
    await until(() => textsTo(owner).includes('Second answer, done.'), 'the second final text');

    expect(bed.platform.messagesTo(owner).map((message) => message.texts)).toEqual([
      ['First', 'First answer.'],
      ['Second', 'Second answer', 'Second answer, done.'],
    ]);
  });

  it("sends a message posted into the conversation (a workflow run's answer) on its own, while a reply streams on", async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'run the article workflow' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the message stored');
    await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'Starting' });
    await until(() => textsTo(owner).includes('Starting'), 'the first token sent');
    // What chat.notify appends: the message, marked as a notification (here the answer of a run started earlier).
    const posted = {
      type: 'message' as const,
      message: {
        id: 'wf-run-20261128-abcd',
        role: 'assistant',
        text: 'Workflow `article` (pipeline), run run-20261128-abcd: done.',
        at: new Date().toISOString(),
        status: 'complete',
      },
      notification: { kind: 'workflow', run: 'run-20261128-abcd' },
    };
    await chat.events.append(id, posted);
    // Its markdown is formatted: the code span is code, the text shows without the backticks.
    const shown = 'Workflow article (pipeline), run run-20261128-abcd: done.';
    await until(() => textsTo(owner).includes(shown), 'the posted message sent');
    expect(bed.platform.messagesTo(owner).find((one) => one.text === shown)?.markup).toEqual([
      'Workflow <code>article</code> (pipeline), run run-20261128-abcd: done.',
    ]);
    await chat.events.append(id, { type: 'token', step: 0, text: ' it' });
    await until(() => textsTo(owner).includes('Starting it'), 'the reply streaming on');
    await answerAsWorker(chat, id, 'Starting it now.');
    await until(() => textsTo(owner).includes('Starting it now.'), 'the final text');
    // Posted again (chat.notify run twice after a crash): not sent again.
    await chat.events.append(id, posted);
    bed.platform.send({ from: owner, text: '/help' });
    await until(() => textsTo(owner).some((text) => text.includes('/new')), 'the help after the repeat');
    expect(bed.platform.messagesTo(owner).map((message) => message.texts)).toEqual([
      ['Starting', 'Starting it', 'Starting it now.'],
      [shown],
      [expect.stringContaining('/new')],
    ]);
  });

  it('starts a new conversation on /new and keeps talking in it', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'old topic' });
    const old = await until(() => firstConversation(chat, owner), 'the first conversation');
    await until(async () => (await storedTexts(chat, old.id)).length === 1, 'the first message');
    bed.platform.send({ from: owner, text: '/new' });
    await until(() => textsTo(owner).some((text) => text.startsWith('A new conversation')), 'the /new answer');
    bed.platform.send({ from: owner, text: 'new topic' });
    const fresh = await until(async () => {
      const all = await conversationsOf(chat, owner);
      return all.find((one) => one.id !== old.id);
    }, 'a second conversation');
    await until(async () => (await storedTexts(chat, fresh.id)).length === 1, 'the message in the new conversation');
    expect(await storedTexts(chat, fresh.id)).toEqual(['new topic']);
    expect(await storedTexts(chat, old.id)).toEqual(['old topic']);
    // The reply of the new conversation reaches the owner too.
    await answerAsWorker(chat, fresh.id, 'On the new topic.');
    await until(() => textsTo(owner).includes('On the new topic.'), 'the reply in the new conversation');
  });

  it('tells the user when a message is refused, and says an error event', async () => {
    const chat = bed.chatService({ maxPending: 1, maxTextBytes: 64 });
    startListener(chat);
    bed.platform.send({ from: owner, text: 'one' });
    bed.platform.send({ from: owner, text: 'two' });
    await until(() => textsTo(owner).some((text) => text.includes('not accepted')), 'the refusal said');
    expect(textsTo(owner).find((text) => text.includes('not accepted'))).toMatch(/not yet answered/);
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    expect(await storedTexts(chat, id)).toEqual(['one']);

    await chat.events.append(id, { type: 'error', message: 'The model is unreachable.', code: 'LLM_UNAVAILABLE' });
    await until(() => textsTo(owner).includes('⚠️ The model is unreachable.'), 'the error said');
  });

  it('logs a refused token once, without the token, and keeps the listener up', async () => {
    const chat = bed.chatService();
    const wrong = '999:wrong-token-value';
    startListener(chat, { token: wrong });
    await until(() => bed.logs.some((line) => line.includes('refused the bot token')), 'the bad-token log line');
    expect(bed.platform.unauthorized).toBe(1);
    expect(bed.logs.filter((line) => line.includes('refused the bot token'))).toHaveLength(1);
    expect(bed.logs.join('\n')).not.toContain('wrong-token-value');
  });

  it('reports refused credentials as its condition, with how it waits and without the token', async () => {
    startListener(bed.chatService(), { token: '999:wrong-token-value' });
    const refused = await until(
      () => conditions.find((one) => one.state === 'credentials_refused'),
      'the credentials_refused condition',
    );
    expect(refused.detail).toBe(
      'Telegram refused the bot token (401 Unauthorized): check telegram.token; trying again every 60 s',
    );
    expect(conditions.map((one) => one.state)).toEqual(['credentials_refused']);
    expect(JSON.stringify(conditions)).not.toContain('wrong-token-value');
  });

  it('reports an outage while the Bot API is down, with the next try, and ok once a poll works again', async () => {
    bed.platform.down = true;
    startListener(bed.chatService());
    const outage = await until(() => conditions.find((one) => one.state === 'outage'), 'the outage condition');
    expect(outage.detail).toMatch(
      /^Telegram getUpdates failed: 502 Bad Gateway; next try at \d{4}-\d\d-\d\dT[\d:.]+Z$/,
    );
    bed.platform.down = false;
    await until(() => conditions.at(-1)?.state === 'ok', 'the ok condition after the outage');
    // One `ok` after the outage, however often the outage was reported (each failed poll, with its next try).
    expect([...new Set(conditions.map((one) => one.state))]).toEqual(['outage', 'ok']);
    expect(conditions.filter((one) => one.state === 'ok')).toHaveLength(1);
    expect(JSON.stringify(conditions)).not.toContain(bed.platform.token);
    // A message sent after the outage is taken in.
    bed.platform.send({ from: owner, text: 'back again' });
    await until(() => firstConversation(bed.chatService(), owner), 'the owner’s conversation after the outage');
  });

  it('retries a failing Bot API with backoff and sends the reply once it answers', async () => {
    const chat = bed.chatService();
    bed.platform.fail('getUpdates', { status: 500, description: 'Internal Server Error' });
    bed.platform.fail('sendMessage', { status: 502, description: 'Bad Gateway' }, { status: 429, retryAfter: 1 });
    startListener(chat);
    bed.platform.send({ from: owner, text: 'hi' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    await until(async () => (await storedTexts(chat, conversation.id)).length === 1, 'the message stored');
    await answerAsWorker(chat, conversation.id, 'Hello.');
    await until(() => textsTo(owner).includes('Hello.'), 'the reply after two failed sends');
    expect(bed.platform.callsOf('sendMessage')).toHaveLength(3);
    expect(textsTo(owner)).toEqual(['Hello.']);
    expect(bed.logs.filter((line) => line.startsWith('warn')).map((line) => line.replace(/\d+ ms/, 'N ms'))).toEqual([
      'warn Telegram getUpdates failed: 500 Internal Server Error; trying again in N ms',
      'warn Telegram sendMessage failed: 502 Bad Gateway; trying again in N ms',
      'warn Telegram sendMessage failed: 429 fake error 429; trying again in N ms',
    ]);
    expect(bed.logs.join('\n')).not.toContain(bed.platform.token);
  });

  it('says an unreachable Bot API without its URL (which holds the token)', async () => {
    const gone = await FakeTelegram.start();
    await gone.close();
    startListener(bed.chatService(), { apiRoot: gone.apiRoot });
    const line = await until(() => bed.logs.find((one) => one.includes('did not answer')), 'the unreachable line');
    expect(line).toMatch(/^warn Telegram getUpdates did not answer: ECONNREFUSED; trying again in 1000 ms$/);
    expect(bed.logs.join('\n')).not.toContain(bed.platform.token);
  });

  it('idles without a token until the signal aborts', async () => {
    const chat = bed.chatService();
    const listener = startListener(chat, { noToken: true });
    await until(() => bed.logs.some((line) => line.includes('no telegram.token')), 'the idle line');
    await listener.stop();
    expect(bed.platform.calls).toEqual([]);
  });

  it('pushes a new approval request once and decides it with /approve', async () => {
    const chat = bed.chatService();
    const decided: string[] = [];
    const approvals: ListenerApprovals = {
      pending: async () =>
        decided.length > 0
          ? []
          : [
              {
                id: 'ap-0123456789ab',
                title: 'Invoice from the dentist',
                actions: 'send_reply',
                rule: 'answer invoices',
                reason: 'an invoice',
                expiresAt: '2026-12-01T00:00:00.000Z',
                rendering: 'action: send_reply',
                bound: true,
              },
            ],
      decide: async (id, decision, by) => {
        decided.push(`${decision} ${id} by ${by}`);
        return id === 'ap-0123456789ab'
          ? {
              status: 'approved',
              kind: 'action',
              tasks: ['t1'],
              actions: 'send_reply',
              title: 'Invoice from the dentist',
            }
          : {
              status: 'approved',
              kind: 'tool_call',
              tasks: [],
              actions: 'call fs__write {}',
              title: 'task 01x (agent)',
            };
      },
    };
    const first = startListener(chat, { approvals });
    await until(() => textsTo(owner).some((text) => text.includes('ap-0123456789ab')), 'the approval pushed');
    await first.stop();
    startListener(chat, { approvals });
    bed.platform.send({ from: owner, text: '/approve ap-0123456789ab' });
    await until(() => textsTo(owner).some((text) => text.startsWith('Approved ap-0123456789ab')), 'the decision');
    expect(textsTo(owner)).toContain('Approved ap-0123456789ab: send_reply for Invoice from the dentist.');
    // A tool call's approval enqueues nothing: the loop that waits runs it, which is not "taken already".
    bed.platform.send({ from: owner, text: '/approve ap-00000000cafe' });
    await until(() => textsTo(owner).some((text) => text.startsWith('Approved ap-00000000cafe')), 'the tool call');
    expect(textsTo(owner)).toContain('Approved ap-00000000cafe: the waiting agent loop runs call fs__write {}.');
    expect(decided).toEqual([
      `approve ap-0123456789ab by telegram:${owner}`,
      `approve ap-00000000cafe by telegram:${owner}`,
    ]);
    expect(textsTo(owner).filter((text) => text.startsWith('Approval needed'))).toHaveLength(1);
  });
  it("pushes what an approval will do in full: a 5,000-character argument to its last line, a service's inputs (issue 30)", async () => {
    const chat = bed.chatService();
    const notes = new FileNoteStore({ root: path.join(bed.root, 'data', 'notes') });
    const written = await writeSurfaceApprovals(notes);
    // As `listenerApprovals` summarises them.
    const approvals: ListenerApprovals = {
      pending: async () =>
        [written.toolCall, written.service].map((request) => ({
          id: request.id,
          title: request.title,
          actions: describeApproval(request),
          ...approvalRendering(request),
          rule: request.rule,
          reason: request.reason,
          expiresAt: request.expires_at,
        })),
      decide: async () => ({ status: 'expired' }) as never,
    };
    startListener(chat, { approvals });
    await until(() => textsTo(owner).some((text) => text.includes('/approve ap-0000000000b2')), 'both pushed');
    await until(() => textsTo(owner).some((text) => text.includes(`/approve ${toolCallApprovalId}`)), 'the call');
    const all = textsTo(owner).join('');
    for (const line of mustShow) expect(all).toContain(line);
    // The long call goes over more than one message, whole: its argument to the last line, nothing left out.
    expect(all).toContain(JSON.stringify(memo));
    expect(all).toContain(memoTail);
    // Only the one-line heading says how much of the arguments it leaves out; what will happen is whole.
    expect(all).not.toMatch(/\n…\n\d+ more characters: open the request/);
    for (const text of textsTo(owner)) expect(Array.from(text).length).toBeLessThanOrEqual(4_096);
  });

  it('pushes the start of an approval too long for its messages and says plainly how much more, with where to read it', async () => {
    const chat = bed.chatService();
    const rendering = `${'x'.repeat(30_000)}\nthe last line`;
    const approvals: ListenerApprovals = {
      pending: async () => [
        {
          id: 'ap-0123456789ab',
          title: 'A long one',
          actions: 'call fs__write',
          rendering,
          bound: true,
          rule: 'tool gate',
          reason: 'irreversible',
          expiresAt: '2026-12-01T00:00:00.000Z',
        },
      ],
      decide: async () => ({ status: 'expired' }) as never,
    };
    startListener(chat, { approvals });
    await until(() => textsTo(owner).some((text) => text.includes('/approve ap-0123456789ab')), 'the push');
    const all = textsTo(owner).join('');
    expect(all).toMatch(
      /\n…\n\d+ more characters: open the request \(`assistant approvals show ap-0123456789ab` or \/approvals\/ap-0123456789ab on the dashboard\)/,
    );
    expect(all).not.toContain('the last line');
    for (const text of textsTo(owner)) expect(Array.from(text).length).toBeLessThanOrEqual(4_096);
  });

  it('sends a reply as Telegram HTML the Bot API parses: markup, escaped HTML, a long code block in valid pieces', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'show me' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    await until(async () => (await storedTexts(chat, conversation.id)).length === 1, 'the message stored');
    const code = Array.from({ length: 250 }, (_, line) => `row(${line}) < limit && "quoted" & more`).join('\n');
    const reply = `**Done**: see [the report](https://example.org/r?a=1&b=2) <script>x</script>\n\n\`\`\`ts\n${code}\n\`\`\`\n\n- one\n- *two*`;
    await answerAsWorker(chat, conversation.id, reply);
    await until(() => textsTo(owner).some((text) => text.endsWith('• two')), 'the last piece');
    const sent = bed.platform.messagesTo(owner);
    expect(sent.length).toBeGreaterThanOrEqual(3);
    // Every piece went with parse_mode HTML and was parsed (the fake refuses what Telegram would), within 4096.
    for (const message of sent) {
      expect(message.markup[0]).toBeTypeOf('string');
      expect(message.text.length).toBeLessThanOrEqual(4096);
    }
    expect(sent[0]?.markup[0]).toMatch(
      /^<b>Done<\/b>: see <a href="https:\/\/example.org\/r\?a=1&amp;b=2">the report<\/a> &lt;script&gt;x&lt;\/script&gt;\n\n<pre><code class="language-ts">row\(0\) &lt; limit &amp;&amp; "quoted" &amp; more\n/,
    );
    expect(sent[1]?.markup[0]).toMatch(/^<pre><code class="language-ts">row\(\d+\)/);
    expect(sent.at(-1)?.markup[0]).toMatch(/<\/code><\/pre>\n\n• one\n• <i>two<\/i>$/);
    expect(sent.map((message) => message.text).join('')).toBe(
      `Done: see the report <script>x</script>\n\n${code}\n\n• one\n• two`,
    );
    expect(bed.platform.calls.filter((call) => call.method === 'sendMessage')).toHaveLength(sent.length);
  });

  it('sends the text plain when Telegram cannot parse its markup, a message and an edit, rather than lose it', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'go' });
    const conversation = await until(() => firstConversation(chat, owner), 'the owner’s conversation');
    const id = conversation.id;
    await until(async () => (await storedTexts(chat, id)).length === 1, 'the message stored');
    // As Telegram answers markup it will not take (the fake itself parses ours).
    const refusal = {
      status: 400,
      description: "Bad Request: can't parse entities: Unsupported start tag at byte offset 0",
    };
    bed.platform.fail('sendMessage', refusal);
    bed.platform.fail('editMessageText', refusal);
    await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'A **bold** start' });
    await until(() => textsTo(owner).includes('A bold start'), 'the first token, plain');
    await answerAsWorker(chat, id, 'A **bold** start & `an end`.');
    await until(() => textsTo(owner).includes('A bold start & an end.'), 'the final text, plain');
    const [message] = bed.platform.messagesTo(owner);
    expect(message?.texts).toEqual(['A bold start', 'A bold start & an end.']);
    // Sent plain after the refusal, without parse_mode: what it shows is the text, nothing lost.
    expect(message?.markup).toEqual([undefined, undefined]);
    const sends = bed.platform.callsOf('sendMessage').map((call) => [call.params.parse_mode, call.params.text]);
    expect(sends).toEqual([
      ['HTML', 'A <b>bold</b> start'],
      [undefined, 'A bold start'],
    ]);
    // The next message goes as HTML again.
    bed.platform.send({ from: owner, text: '/help' });
    await until(() => textsTo(owner).some((text) => text.includes('/new')), 'the help');
    expect(bed.platform.messagesTo(owner).at(-1)?.markup[0]).toContain('/new');
  });

  it('pushes an approval with what it will do exactly, in a code block, its title escaped, never formatted', async () => {
    const chat = bed.chatService();
    const rendering = 'send_reply to a@example.org:\n<b>not markup</b> & **not bold** `not code`';
    const approvals: ListenerApprovals = {
      pending: async () => [
        {
          id: 'ap-0123456789ab',
          title: 'Pay <Smith & Co>',
          actions: 'send_reply',
          rendering,
          bound: true,
          rule: 'answer invoices',
          reason: 'an *invoice*',
          expiresAt: '2026-12-01T00:00:00.000Z',
        },
      ],
      decide: async () => ({ status: 'expired' }) as never,
    };
    startListener(chat, { approvals });
    await until(
      () => bed.platform.messagesTo(owner).some((one) => one.buttons.length === 2),
      'the push with its buttons',
    );
    const message = bed.platform.messagesTo(owner).find((one) => one.buttons.length === 2);
    expect(message?.text).toContain(`What will happen:\n${rendering}\n\n/approve ap-0123456789ab`);
    expect(message?.text).toContain('for Pay <Smith & Co>');
    expect(message?.text).toContain('an *invoice*');
    expect(message?.markup[0]).toContain(
      '<pre>send_reply to a@example.org:\n&lt;b&gt;not markup&lt;/b&gt; &amp; **not bold** `not code`</pre>',
    );
  });

  it("forwards the notifier's questions and failures once, and not its other messages", async () => {
    const chat = bed.chatService();
    const approvals: ListenerApprovals = {
      pending: async () => [],
      decide: async () => ({ status: 'expired' }) as never,
    };
    const notify = (id: string, kind: string, text: string) =>
      chat.events.append('notifications', {
        type: 'message',
        message: { id, role: 'assistant', text, at: new Date().toISOString(), status: 'complete' },
        notification: { kind },
      });
    await notify('n-1', 'failure', 'Task email.inbox.check (01abc) failed after 3 attempt(s): the server said no.');
    await notify('n-2', 'approval', 'Approval needed: pushed from the request itself, not from here.');
    const first = startListener(chat, { approvals });
    await until(() => textsTo(owner).some((text) => text.includes('failed after 3 attempt(s)')), 'the failure pushed');
    await first.stop();
    await notify('n-3', 'clarification', 'Task system.agent (01abd) asks: which year?');
    startListener(chat, { approvals });
    await until(() => textsTo(owner).some((text) => text.includes('which year?')), 'the question pushed');
    expect(textsTo(owner).filter((text) => text.includes('failed after 3 attempt(s)'))).toHaveLength(1);
    expect(textsTo(owner).some((text) => text.includes('pushed from the request itself'))).toBe(false);
  });
});

import path from 'node:path';
import type { ChatService } from '@assistant/chat';
import type { ListenerApprovals } from '@assistant/sdk';
import { describe, expect, it } from 'vitest';
import type { ChatSettings } from '../settings.generated.ts';
import { answerAsWorker } from '../testing/answer-as-worker.ts';
import { channelTestBed, type RunningListener, until } from '../testing/channel-test-bed.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeMatrix } from '../testing/fake-matrix.ts';
import { inboxTexts } from '../testing/inbox-texts.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { MatrixApiError, MatrixClientApi, MatrixNetworkError } from './client-api.ts';
import { encryptedNotice, MatrixAdapter } from './matrix-adapter.ts';
import { runMatrix } from './matrix-listener.ts';

const owner = '@owner:fake.test';
const stranger = '@stranger:fake.test';

const bed = channelTestBed({
  prefix: 'assistant-matrix-',
  start: () => FakeMatrix.start(),
  secrets: (fake) => [fake.token],
});

function startListener(
  chat: ChatService,
  options: { noToken?: boolean; approvals?: ListenerApprovals } = {},
): RunningListener {
  const settings = {
    ...chatSettingsDefaults,
    matrix: {
      homeserver: bed.platform.homeserver,
      ...(options.noToken ? {} : { access_token: bed.secret('matrix', bed.platform.token) }),
      allowed_users: [owner],
      poll_timeout: 2_000,
    },
  } satisfies ChatSettings;
  return bed.run((context) =>
    runMatrix(
      chatListenerContext({
        listener: 'matrix',
        settings,
        configDir: bed.root,
        chat,
        ...context,
        approvals: options.approvals,
      }),
    ),
  );
}

const storedTexts = (chat: ChatService) => inboxTexts(chat, { channel: 'matrix' });

describe('the Matrix listener', () => {
  it('joins an allowed user’s invite and answers there; a stranger’s invite is ignored, logged by user id only', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.invite({ from: stranger, room: '!theirs:bed.platform.test' });
    bed.platform.invite({ from: owner, room: '!work:bed.platform.test' });
    await until(() => bed.platform.joined.includes('!work:bed.platform.test'), 'the owner’s room joined');
    bed.platform.send({ from: owner, room: '!work:bed.platform.test', text: 'in the work room' });
    await until(async () => (await storedTexts(chat)).includes('in the work room'), 'the message stored');
    await until(() => bed.platform.typings >= 1, '“typing…” shown');
    const conversation = (await chat.list()).find((one) => one.channel === 'matrix');
    expect(conversation?.peer).toBe(owner);
    expect(bed.platform.joined).toEqual(['!work:bed.platform.test']);
    expect(bed.logs.filter((line) => line.includes(stranger))).toEqual([
      `info ignored a Matrix invite from user ${stranger}: not in matrix.allowed_users`,
    ]);
  });

  it('logs and skips an invite whose join is refused, and goes on with the next events', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.refusedJoins.add('!gone:bed.platform.test');
    bed.platform.invite({ from: owner, room: '!gone:bed.platform.test' });
    bed.platform.invite({ from: owner, room: '!work:bed.platform.test' });
    bed.platform.send({ from: owner, room: '!work:bed.platform.test', text: 'still here' });
    await until(async () => (await storedTexts(chat)).includes('still here'), 'the next message stored');
    expect(bed.platform.joined).toEqual(['!work:bed.platform.test']);
    expect(bed.logs.filter((line) => line.includes('!gone:bed.platform.test'))).toEqual([
      expect.stringMatching(/^warn could not join the Matrix room !gone:bed.platform.test: .*403 M_FORBIDDEN/),
    ]);
  });

  it('refuses an encrypted room: one plain notice, a log line, nothing it says stored', async () => {
    const chat = bed.chatService();
    startListener(chat);
    const room = bed.platform.dmRoom(owner);
    bed.platform.encrypt(room, owner);
    bed.platform.send({ from: owner, text: 'a secret' });
    bed.platform.send({ from: owner, text: 'another secret' });
    bed.platform.send({ from: owner, room: '!plain:bed.platform.test', text: 'in the clear' });
    await until(async () => (await storedTexts(chat)).includes('in the clear'), 'the plain room’s message stored');
    expect(bed.platform.messagesIn(room).map((message) => [message.msgtype, message.texts])).toEqual([
      ['m.notice', [encryptedNotice]],
    ]);
    expect(await storedTexts(chat)).toEqual(['in the clear']);
    expect(bed.logs.filter((line) => line.includes('encrypted') && line.includes(room))).toHaveLength(1);
  });

  it('refuses a room invited to with encryption on, after joining it, and a stranger there gets no notice', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.invite({ from: owner, room: '!secret:bed.platform.test', encrypted: true });
    await until(() => bed.platform.joined.includes('!secret:bed.platform.test'), 'the room joined');
    bed.platform.send({ from: stranger, room: '!secret:bed.platform.test' });
    bed.platform.send({ from: owner, room: '!plain:bed.platform.test', text: 'done' });
    await until(async () => (await storedTexts(chat)).includes('done'), 'the plain message stored');
    expect(bed.platform.messagesIn('!secret:bed.platform.test')).toEqual([]);
    bed.platform.send({ from: owner, room: '!secret:bed.platform.test' });
    await until(() => bed.platform.messagesIn('!secret:bed.platform.test').length === 1, 'the notice');
    expect(bed.platform.messagesIn('!secret:bed.platform.test')[0]?.texts).toEqual([encryptedNotice]);
  });

  it('gives one message when a send’s answer is lost: the retry reuses the transaction id', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.loseSendAnswers = 1;
    bed.platform.send({ from: owner, text: '/help' });
    await until(() => bed.platform.loseSendAnswers === 0, 'the first answer lost');
    bed.platform.send({ from: owner, text: 'after' });
    await until(async () => (await storedTexts(chat)).includes('after'), 'the next message stored');
    expect(bed.platform.messagesIn(bed.platform.dmRoom(owner)).map((message) => message.texts.at(-1))).toEqual([
      expect.stringContaining('/new'),
    ]);
  });

  it('reads every message that came while it was away, more than a homeserver’s default timeline of 10', async () => {
    const chat = bed.chatService();
    const texts = Array.from({ length: 30 }, (_, index) => `message ${index}`);
    for (const text of texts) bed.platform.send({ from: owner, text });
    startListener(chat);
    await until(async () => (await storedTexts(chat)).length === texts.length, 'all 30 stored');
    expect(await storedTexts(chat)).toEqual(texts);
    expect(bed.logs.filter((line) => line.includes('more new events'))).toEqual([]);
  });

  it('waits out a homeserver that is down and goes on where it was', async () => {
    const chat = bed.chatService();
    bed.platform.down = true;
    startListener(chat);
    bed.platform.send({ from: owner, text: 'while it was down' });
    await until(() => bed.logs.some((line) => line.startsWith('warn ') && line.includes('502')), 'the outage logged');
    bed.platform.down = false;
    await until(async () => (await storedTexts(chat)).includes('while it was down'), 'the message stored');
  });

  it('keeps a user’s rooms apart: a conversation per room, each answered in its own room', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.invite({ from: owner, room: '!work:bed.platform.test' });
    await until(() => bed.platform.joined.includes('!work:bed.platform.test'), 'the work room joined');
    bed.platform.send({ from: owner, text: 'in the direct room' });
    bed.platform.send({ from: owner, room: '!work:bed.platform.test', text: 'in the work room' });
    await until(async () => (await storedTexts(chat)).length === 2, 'both stored');
    const conversations = (await chat.list()).filter((one) => one.channel === 'matrix');
    expect(conversations).toHaveLength(2);
    const of = async (text: string) => {
      for (const conversation of conversations) {
        const texts = (await chat.inbox.messages(conversation.id)).map((message) => message.text);
        if (texts.includes(text)) return { id: conversation.id, texts };
      }
      throw new Error(`no conversation holds ${text}`);
    };
    const direct = await of('in the direct room');
    const work = await of('in the work room');
    expect([direct.texts, work.texts]).toEqual([['in the direct room'], ['in the work room']]);
    await answerAsWorker(chat, work.id, 'Answered in the work room.');
    await answerAsWorker(chat, direct.id, 'Answered in the direct room.');
    await until(() => bed.platform.messagesIn('!work:bed.platform.test').length === 1, 'the work room’s answer');
    await until(() => bed.platform.messagesIn(bed.platform.dmRoom(owner)).length === 1, 'the direct room’s answer');
    expect(bed.platform.messagesIn('!work:bed.platform.test')[0]?.texts).toEqual(['Answered in the work room.']);
    expect(bed.platform.messagesIn(bed.platform.dmRoom(owner))[0]?.texts).toEqual(['Answered in the direct room.']);
    // The next message in a room goes on in that room's conversation.
    bed.platform.send({ from: owner, room: '!work:bed.platform.test', text: 'again in the work room' });
    await until(async () => (await of('again in the work room')).id === work.id, 'stored in the work conversation');
  });

  it('sends markdown as formatted_body with body the text it shows, edits carrying both, all of it clean HTML', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'format it' });
    await until(async () => (await storedTexts(chat)).length === 1, 'stored');
    const id = (await chat.list()).find((one) => one.channel === 'matrix')?.id ?? '';
    await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
    await chat.events.append(id, { type: 'token', step: 0, text: 'Here **is** `code`' });
    await until(() => bed.platform.messagesIn(bed.platform.dmRoom(owner)).length === 1, 'the first token sent');
    const reply = [
      '**Bold** and *italic* <script>alert(1)</script> & [a link](https://example.org/?a=1&b=2) [no](javascript:alert(1))',
      '',
      '- one',
      '- two',
      '',
      '```ts',
      'const a = "<b>" && 1;',
      '```',
    ].join('\n');
    await answerAsWorker(chat, id, reply);
    const message = () => bed.platform.messagesIn(bed.platform.dmRoom(owner))[0];
    await until(
      () => (message()?.texts.length ?? 0) >= 2 && message()?.texts.at(-1)?.includes('const a') === true,
      'the final edit',
    );
    const sent = message();
    expect(sent?.formatted[0]).toBe('Here <b>is</b> <code>code</code>');
    expect(sent?.texts[0]).toBe('Here is code');
    expect(sent?.formatted.at(-1)).toBe(
      '<b>Bold</b> and <i>italic</i> &lt;script&gt;alert(1)&lt;/script&gt; &amp; <a href="https://example.org/?a=1&amp;b=2">a link</a> [no](javascript:alert(1))<br><ul><li>one</li><li>two</li></ul><pre><code class="language-ts">const a = "&lt;b&gt;" &amp;&amp; 1;</code></pre>',
    );
    expect(sent?.texts.at(-1)).toBe(
      'Bold and italic <script>alert(1)</script> & a link [no](javascript:alert(1))\n• one\n• two\nconst a = "<b>" && 1;',
    );
    // The fake refused nothing: every formatted_body passed its sanitiser check.
    expect(bed.logs.filter((line) => line.includes('M_BAD_JSON'))).toEqual([]);
  });

  it('takes a reaction on an approval request as its button: data read back from the message, after a restart too', async () => {
    const chat = bed.chatService();
    bed.platform.direct(owner);
    const decided: string[] = [];
    const request = {
      id: 'ap-0000000000c1',
      title: 'Pay <the> invoice & more',
      actions: 'send_reply',
      rule: 'answer invoices',
      reason: 'an invoice',
      expiresAt: '2026-12-01T00:00:00.000Z',
      rendering: 'send_reply to a@example.org:\n<b>not bold</b> & **not bold either**',
      bound: true,
    };
    const approvals: ListenerApprovals = {
      pending: async () => (decided.length > 0 ? [] : [request]),
      decide: async (id, decision, by) => {
        decided.push(`${decision} ${id} by ${by}`);
        return { status: 'rejected' } as never;
      },
    };
    const first = startListener(chat, { approvals });
    const room = bed.platform.dmRoom(owner);
    const withReactions = () => bed.platform.messagesIn(room).find((one) => one.reactions.length === 2);
    await until(() => withReactions() !== undefined, 'the request with its reactions');
    const message = withReactions();
    if (!message) throw new Error('unreachable');
    expect(message.reactions.map((one) => [one.sender, one.key])).toEqual([
      [bed.platform.userId, '✅'],
      [bed.platform.userId, '❌'],
    ]);
    // The rendering is shown exactly, in a code block, never formatted; the title escaped.
    expect(message.texts[0]).toContain(request.rendering);
    expect(message.formatted[0]).toContain(
      '<pre><code>send_reply to a@example.org:\n&lt;b&gt;not bold&lt;/b&gt; &amp; **not bold either**</code></pre>',
    );
    expect(message.formatted[0]).toContain('Pay &lt;the&gt; invoice &amp; more');
    await first.stop();
    // A reaction of another key, and one on a message without buttons, press nothing.
    bed.platform.react({ from: owner, room, event: message.event_id, key: '👍' });
    // After a restart (nothing in memory), the owner's ❌ (as clients send it, with a variation selector) decides.
    startListener(chat, { approvals });
    bed.platform.react({ from: owner, room, event: message.event_id, key: '❌\uFE0F' });
    await until(() => decided.length === 1, 'the reaction decided');
    expect(decided).toEqual([`reject ${request.id} by matrix:${owner}`]);
  });

  it('idles without an access token', async () => {
    startListener(bed.chatService(), { noToken: true });
    await until(() => bed.logs.some((line) => line.includes('the Matrix bot is off')), 'the idle line');
    expect(bed.platform.unauthorized).toBe(0);
  });
});

describe('the Matrix sync position', () => {
  it('moves only when the last event of a batch is acknowledged: a restart mid-batch gets the batch again', async () => {
    const file = path.join(bed.root, 'data', 'chat', 'matrix', 'chat.sync.json');
    const open = () =>
      MatrixAdapter.open({
        api: new MatrixClientApi({ homeserver: bed.platform.homeserver, accessToken: bed.platform.token }),
        pollTimeoutMs: 0,
        allowedUsers: [owner],
        logger: bed.logger,
        file,
      });
    const signal = new AbortController().signal;
    const first = bed.platform.send({ from: owner, text: 'one' });
    const second = bed.platform.send({ from: owner, text: 'two' });
    const adapter = await open();
    const batch = await adapter.receive({ cursor: 0, signal });
    expect(batch.map((delivery) => delivery.event.id)).toEqual([`mx-${first}`, `mx-${second}`]);
    await adapter.acknowledge(batch[0] as (typeof batch)[number]);

    const again = await (await open()).receive({ cursor: 0, signal });
    expect(again.map((delivery) => delivery.event.id)).toEqual([`mx-${first}`, `mx-${second}`]);
    const restarted = await open();
    const last = await restarted.receive({ cursor: 0, signal });
    for (const delivery of last) await restarted.acknowledge(delivery);
    expect(await (await open()).receive({ cursor: 0, signal })).toEqual([]);
  });
});

describe('MatrixAdapter.classify', () => {
  it('takes 401 and M_UNKNOWN_TOKEN as refused credentials, 5xx, 429 and the network as an outage, other 4xx as refused', async () => {
    const adapter = await MatrixAdapter.open({
      api: new MatrixClientApi({ homeserver: bed.platform.homeserver, accessToken: bed.platform.token }),
      pollTimeoutMs: 0,
      allowedUsers: [],
      logger: bed.logger,
      file: path.join(bed.root, 'sync.json'),
    });
    const error = (status: number, errcode: string, retryAfterMs?: number) =>
      new MatrixApiError({ endpoint: 'send', status, errcode, error: 'x', ...(retryAfterMs ? { retryAfterMs } : {}) });
    expect(adapter.classify(error(401, 'M_UNKNOWN_TOKEN')).kind).toBe('bad_credentials');
    expect(adapter.classify(error(403, 'M_UNKNOWN_TOKEN')).kind).toBe('bad_credentials');
    expect(adapter.classify(error(429, 'M_LIMIT_EXCEEDED', 2500))).toEqual({ kind: 'transient', retryAfterMs: 2500 });
    expect(adapter.classify(error(502, 'M_UNKNOWN'))).toEqual({ kind: 'transient' });
    expect(adapter.classify(new MatrixNetworkError('sync', 'ECONNREFUSED'))).toEqual({ kind: 'transient' });
    expect(adapter.classify(error(413, 'M_TOO_LARGE'))).toEqual({ kind: 'refused' });
    expect(adapter.classify(error(403, 'M_FORBIDDEN'))).toEqual({ kind: 'refused' });
  });
});

import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { ChatService } from '@assistant/chat';
import { WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import type { ChatSettings } from '../settings.generated.ts';
import { answerAsWorker } from '../testing/answer-as-worker.ts';
import { channelTestBed, type RunningListener, until } from '../testing/channel-test-bed.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeSlack } from '../testing/fake-slack.ts';
import { inboxTexts } from '../testing/inbox-texts.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { classifySlackError } from './slack-adapter.ts';
import { receiveSlackEvents } from './slack-events-webhook.ts';
import { runSlack } from './slack-listener.ts';
import { spoolFolder } from './slack-spool.ts';

const owner = 'UOWNER1';
const stranger = 'USTRANGER';
const channel = 'CTEAM1';

const bed = channelTestBed({
  prefix: 'assistant-slack-',
  start: () => FakeSlack.start(),
  secrets: (fake) => [fake.botToken, fake.appToken, fake.signingSecret],
});

function settings(mode: 'socket' | 'events' = 'socket', options: { noAppToken?: boolean } = {}): ChatSettings {
  const fake = bed.platform;
  return {
    ...chatSettingsDefaults,
    slack: {
      mode,
      bot_token: bed.secret('slack', fake.botToken),
      ...(options.noAppToken ? {} : { app_token: bed.secret('slack', fake.appToken) }),
      signing_secret: bed.secret('slack', fake.signingSecret),
      allowed_users: [owner],
      channel_id: channel,
      api_url: fake.apiUrl,
    },
  } satisfies ChatSettings;
}

function startListener(chat: ChatService, slack = settings()): RunningListener {
  return bed.run((context) =>
    runSlack(
      chatListenerContext({
        listener: 'slack',
        settings: slack,
        chat,
        ...context,
      }),
    ),
  );
}

/** The messages stored from a peer, in every conversation of theirs (one per place they write in). */
const storedOf = (chat: ChatService, peer: string) => inboxTexts(chat, { channel: 'slack', peer });

/** Answers a peer's conversation (the one holding a message `containing`, when given) as a turn would. */
async function answer(chat: ChatService, peer: string, text: string, containing?: string): Promise<void> {
  let conversation: { id: string } | undefined;
  for (const one of (await chat.list()).filter(
    (candidate) => candidate.channel === 'slack' && candidate.peer === peer,
  )) {
    const texts = (await chat.inbox.messages(one.id)).map((message) => message.text);
    if (containing === undefined || texts.some((stored) => stored.includes(containing))) conversation = one;
  }
  if (!conversation) throw new Error('no conversation');
  await answerAsWorker(chat, conversation.id, text);
}

describe('the Slack listener', () => {
  it('takes a post in the configured channel once, whether Slack sends it as message, app_mention or both', async () => {
    const chat = bed.chatService();
    startListener(chat);
    await until(() => bed.platform.connections === 1, 'the Socket Mode connection');
    const mention = bed.platform.deliver({ from: owner, text: 'what is due?', channel, mention: true });
    // The same post's `message` event (another event_id, the same channel and ts), as an app subscribed to both
    // `app_mention` and `message.channels` gets it.
    const { ts } = bed.platform.payloadOf(mention).event as { ts: string };
    bed.platform.deliverEvent({
      type: 'message',
      channel_type: 'channel',
      channel,
      user: owner,
      text: `<@${bed.platform.botUserId}> what is due?`,
      ts,
    });
    bed.platform.deliver({ from: owner, text: 'and tomorrow?' });
    await until(async () => (await storedOf(chat, owner)).length === 2, 'two messages stored');
    expect((await storedOf(chat, owner)).sort()).toEqual(['and tomorrow?', 'what is due?']);
    // The channel's post and the direct message are two conversations (one per place, decision 0075): the
    // channel's reply goes to the channel.
    await answer(chat, owner, 'The *rent*.', 'what is due?');
    await until(() => bed.platform.messagesIn(channel).length === 1, 'the reply in the channel');
    expect(bed.platform.messagesIn(channel)[0]?.texts).toEqual(['The _rent_.']);
  });

  it('ignores edits, bots, its own messages and other channels; a stranger is logged by id only', async () => {
    const chat = bed.chatService();
    startListener(chat);
    await until(() => bed.platform.connections === 1, 'the Socket Mode connection');
    const dm = bed.platform.dmChannel(owner);
    bed.platform.deliverEvent({
      type: 'message',
      subtype: 'message_changed',
      channel: dm,
      channel_type: 'im',
      ts: '1.1',
      message: { text: 'edited' },
    });
    bed.platform.deliverEvent({
      type: 'message',
      bot_id: 'BOTHER',
      user: 'UOTHERBOT',
      channel: dm,
      channel_type: 'im',
      text: 'beep',
      ts: '1.2',
    });
    bed.platform.deliverEvent({
      type: 'message',
      user: bed.platform.botUserId,
      channel: dm,
      channel_type: 'im',
      text: 'my own',
      ts: '1.3',
    });
    bed.platform.deliver({ from: owner, text: 'elsewhere', channel: 'COTHER' });
    bed.platform.deliver({ from: stranger, text: 'secret words' });
    bed.platform.deliver({ from: owner, text: 'hello' });
    await until(async () => (await storedOf(chat, owner)).length === 1, 'the owner’s message stored');
    expect(await storedOf(chat, owner)).toEqual(['hello']);
    expect(bed.logs.filter((line) => line.includes('COTHER') || line.includes('in a channel chat'))).toHaveLength(1);
    expect(bed.logs.filter((line) => line.includes(stranger))).toHaveLength(1);
    expect(bed.logs.join('\n')).not.toContain('secret words');
    expect(bed.platform.sent).toEqual([]);
  });

  it('answers a message written in a thread in that thread', async () => {
    const chat = bed.chatService();
    startListener(chat);
    await until(() => bed.platform.connections === 1, 'the Socket Mode connection');
    bed.platform.deliver({ from: owner, text: 'in a thread', threadTs: '1700000000.000042' });
    await until(async () => (await storedOf(chat, owner)).length === 1, 'stored');
    await answer(chat, owner, 'Here.');
    const reply = await until(() => bed.platform.messagesIn(bed.platform.dmChannel(owner))[0], 'the reply');
    expect(reply).toMatchObject({ thread_ts: '1700000000.000042', texts: ['Here.'] });
  });

  it('loses nothing delivered while it was away: Slack hands unacknowledged envelopes to the next connection', async () => {
    const chat = bed.chatService();
    // No connection yet: Slack keeps the envelope until an app acknowledges it.
    const early = bed.platform.deliver({ from: owner, text: 'while you were away' });
    expect(bed.platform.acknowledged(early)).toBe(false);
    startListener(chat);
    await until(async () => (await storedOf(chat, owner)).length === 1, 'the early message stored');
    await until(() => bed.platform.acknowledged(early), 'the envelope acknowledged after it was stored');
    // A retry after the acknowledgement (retry_attempt 2) is the same message.
    bed.platform.redeliver(early);
    bed.platform.deliver({ from: owner, text: 'now' });
    await until(async () => (await storedOf(chat, owner)).length === 2, 'the next message stored');
    expect(await storedOf(chat, owner)).toEqual(['while you were away', 'now']);
  });

  it('stops at once while a Socket Mode handshake hangs (no hello)', async () => {
    bed.platform.withholdHello = true;
    const chat = bed.chatService();
    const listener = startListener(chat);
    await until(() => bed.platform.connections === 1, 'the connection opened');
    // Aborts, then waits for the listener: without the abort reaching the handshake this never settles (the test
    // times out).
    await listener.stop();
    expect(await storedOf(chat, owner)).toEqual([]);
  });

  it('idles without the app token in socket mode, saying which setting is missing', async () => {
    const chat = bed.chatService();
    startListener(chat, settings('socket', { noAppToken: true }));
    await until(() => bed.logs.some((line) => line.includes('slack.app_token')), 'the idle line');
    expect(bed.platform.connections).toBe(0);
    expect(bed.platform.calls).toEqual([]);
  });
});

describe('the Slack events webhook', () => {
  function context(body: string, headers: Record<string, string>, mode: 'socket' | 'events' = 'events') {
    return {
      request: { method: 'POST', headers, query: {}, body: Buffer.from(body) },
      instance: { name: 'chat', domain: 'chat', settings: settings(mode) },
      webhook: 'slack_events',
      logger: bed.logger,
      enqueue: async () => {
        throw new Error('not used');
      },
      signal: new AbortController().signal,
      configDir: path.join(bed.root, 'data'),
      dataDir: path.join(bed.root, 'data'),
    } as Parameters<typeof receiveSlackEvents>[0];
  }

  it('spools a button press (a payload= form) and refuses what is not Slack’s, and is off in socket mode', async () => {
    const press = JSON.stringify({
      type: 'block_actions',
      user: { id: owner },
      channel: { id: 'DUOWNER1' },
      actions: [{ action_id: 'assistant-0', value: 'ap:a:ap-1:0123456789ab', action_ts: '1700000001.1' }],
    });
    const form = new URLSearchParams({ payload: press }).toString();
    const type = { 'content-type': 'application/x-www-form-urlencoded' };
    expect(await receiveSlackEvents(context(form, type))).toEqual({ status: 200 });
    expect(await receiveSlackEvents(context(form, { ...type, 'x-slack-retry-num': '1' }))).toEqual({ status: 200 });
    expect(await readdir(spoolFolder(path.join(bed.root, 'data'), 'chat'))).toHaveLength(1);
    expect((await receiveSlackEvents(context('not json', { 'content-type': 'application/json' }))).status).toBe(400);
    expect((await receiveSlackEvents(context(form, type, 'socket'))).status).toBe(404);
  });
});

describe('classifying Slack failures (the real WebClient against the fake)', () => {
  function client(token = bed.platform.botToken): WebClient {
    return new WebClient(token, {
      slackApiUrl: bed.platform.apiUrl,
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
    });
  }
  const failureOf = async (call: Promise<unknown>) =>
    classifySlackError(
      await call.then(
        () => new Error('no failure'),
        (error: unknown) => error,
      ),
    );

  it('bad tokens, rate limits with Retry-After, outages, refusals', async () => {
    const wrong = await failureOf(client('xoxb-wrong').auth.test());
    expect(wrong).toMatchObject({ kind: 'bad_credentials' });
    expect(JSON.stringify(wrong)).not.toContain('xoxb-wrong');
    bed.platform.fail('chat.postMessage', { status: 429, retryAfter: 7 });
    expect(await failureOf(client().chat.postMessage({ channel: owner, text: 'x' }))).toEqual({
      kind: 'transient',
      retryAfterMs: 7000,
    });
    bed.platform.fail('chat.postMessage', { error: 'channel_not_found' });
    expect(await failureOf(client().chat.postMessage({ channel: owner, text: 'x' }))).toEqual({ kind: 'refused' });
    bed.platform.setDown(true);
    expect(await failureOf(client().chat.postMessage({ channel: owner, text: 'x' }))).toEqual({ kind: 'transient' });
    bed.platform.setDown(false);
    await bed.platform.close();
    expect(await failureOf(client().auth.test())).toEqual({ kind: 'transient' });
  });
});

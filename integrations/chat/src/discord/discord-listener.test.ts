import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatService } from '@assistant/chat';
import type { ListenerApprovals, ListenerCondition } from '@assistant/sdk';
import { beforeEach, describe, expect, it } from 'vitest';
import { answerAsWorker } from '../testing/answer-as-worker.ts';
import { channelTestBed, type RunningListener, until } from '../testing/channel-test-bed.ts';
import { discordSettings, FakeDiscord } from '../testing/fake-discord.ts';
import { inboxTexts } from '../testing/inbox-texts.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { discordIntents } from './discord-adapter.ts';
import { runDiscord } from './discord-listener.ts';

const owner = '300000000000000001';
const stranger = '300000000000000009';

const bed = channelTestBed({
  prefix: 'assistant-discord-',
  start: () => FakeDiscord.start({ heartbeatIntervalMs: 100 }),
  secrets: (fake) => [fake.token],
});
let conditions: ListenerCondition[];

beforeEach(() => {
  conditions = [];
});

function startListener(chat: ChatService, options: { approvals?: ListenerApprovals } = {}): RunningListener {
  return bed.run((context) =>
    runDiscord(
      chatListenerContext({
        listener: 'discord',
        settings: discordSettings({
          token: bed.secret('discord', bed.platform.token),
          allowed_users: [owner],
          channel_id: bed.platform.guildChannel,
          api_root: bed.platform.apiRoot,
        }),
        chat,
        ...context,
        condition: (condition) => conditions.push(condition),
        ...options,
      }),
    ),
  );
}

const storedTexts = (chat: ChatService) => inboxTexts(chat, { channel: 'discord' });

/** What the turn runner writes for a reply. */
async function answer(chat: ChatService, text: string): Promise<void> {
  const conversation = (await chat.list()).find((one) => one.channel === 'discord');
  if (!conversation) throw new Error('no Discord conversation');
  await answerAsWorker(chat, conversation.id, text);
}

/** Runs the listener until the owner's "hello" in the DM and the DM's position (gateway state) are stored. */
async function helloThenStop(chat: ChatService): Promise<void> {
  const listener = startListener(chat);
  bed.platform.send({ from: owner, text: 'hello' });
  await until(async () => (await storedTexts(chat)).includes('hello'), 'the first message stored');
  await until(async () => {
    const file = path.join(bed.root, 'data', 'chat', 'discord', 'chat.gateway.json');
    const data = JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as { channels?: object };
    return Object.keys(data.channels ?? {}).length === 1;
  }, 'the DM’s position stored');
  await listener.stop();
}

describe('the Discord listener', () => {
  it('identifies with the four intents and heartbeats; reads the configured guild channel and answers there', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, channel: bed.platform.guildChannel, text: 'in the guild channel' });
    await until(async () => (await storedTexts(chat)).includes('in the guild channel'), 'the message stored');
    expect(bed.platform.intents).toBe(discordIntents);
    // GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT.
    expect(discordIntents).toBe(1 + 512 + 4096 + 32768);
    await until(() => bed.platform.heartbeats >= 2, 'heartbeats');
    await until(() => bed.platform.typings >= 1, '“typing…” shown');
    await answer(chat, 'Answered **here**, @everyone.');
    await until(
      () => bed.platform.messagesIn(bed.platform.guildChannel).length === 1,
      'the answer in the guild channel',
    );
    const [sent] = bed.platform.messagesIn(bed.platform.guildChannel);
    expect(sent?.texts).toEqual(['Answered **here**, @everyone.']);
    // Nobody is pinged by what the model writes.
    expect(sent?.allowed_mentions).toEqual({ parse: [] });
    expect(bed.platform.messagesIn(bed.platform.dmChannel(owner))).toEqual([]);
  });

  it('ignores other guild channels, bots and the bot’s own messages; a stranger in the guild channel is logged by id only', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, channel: bed.platform.otherGuildChannel, text: 'elsewhere' });
    bed.platform.send({ from: '300000000000000077', bot: true, text: 'a bot in a DM' });
    bed.platform.send({ from: stranger, channel: bed.platform.guildChannel, text: 'my password is hunter2' });
    bed.platform.send({ from: owner, text: 'in the DM' });
    // Dispatches are handled in order: once the last one is stored, the others were dealt with.
    await until(async () => (await storedTexts(chat)).includes('in the DM'), 'the DM stored');
    expect(await storedTexts(chat)).toEqual(['in the DM']);
    expect(bed.logs.filter((line) => line.includes(stranger))).toEqual([
      `info ignored a Discord message from user ${stranger}: not in discord.allowed_users`,
    ]);
    expect(bed.logs.join('\n')).not.toMatch(/hunter2|elsewhere|a bot in a DM/);
    await answer(chat, 'Noted.');
    await until(() => bed.platform.messagesIn(bed.platform.dmChannel(owner)).length === 1, 'the answer');
    // The bot's own message came back as MESSAGE_CREATE and was not taken for a message.
    expect(await storedTexts(chat)).toEqual(['in the DM']);
    expect(bed.platform.messagesIn(bed.platform.otherGuildChannel)).toEqual([]);
  });

  it('resumes a dropped gateway session: what was dispatched meanwhile is replayed and stored once', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'before the drop' });
    await until(async () => (await storedTexts(chat)).includes('before the drop'), 'the first message stored');
    bed.platform.dropConnections();
    bed.platform.send({ from: owner, text: 'while dropped' });
    await until(async () => (await storedTexts(chat)).includes('while dropped'), 'the replayed message stored');
    expect(bed.platform.resumes).toBeGreaterThanOrEqual(1);
    expect(bed.platform.identifies).toBe(1);
    expect(await storedTexts(chat)).toEqual(['before the drop', 'while dropped']);
  });

  it('catches up by REST after a restart: a message written while the bot was away is read, once', async () => {
    const chat = bed.chatService();
    await helloThenStop(chat);
    // Discord dispatches nothing to a bot that is not connected: only REST has it.
    bed.platform.sendUnseen({ from: owner, text: 'while you were away' });
    startListener(chat);
    await until(async () => (await storedTexts(chat)).includes('while you were away'), 'the missed message stored');
    bed.platform.send({ from: owner, text: 'after' });
    await until(async () => (await storedTexts(chat)).includes('after'), 'the next message stored');
    expect(await storedTexts(chat)).toEqual(['hello', 'while you were away', 'after']);
    expect(bed.logs).toContain('info read 1 Discord message(s) written while disconnected');
  });

  it('hands out what the catch-up finds before the live dispatches that came meanwhile', async () => {
    const chat = bed.chatService();
    await helloThenStop(chat);
    bed.platform.sendUnseen({ from: owner, text: 'written while away' });
    const release = bed.platform.holdListings();
    startListener(chat);
    // The new session is ready and its catch-up under way: a message written now is dispatched live.
    await until(() => bed.platform.listings >= 1, 'the catch-up asked');
    bed.platform.send({ from: owner, text: 'written now' });
    release();
    await until(async () => (await storedTexts(chat)).includes('written now'), 'the live message stored');
    // In the order written: were the live one stored (and its position acknowledged) first, a crash before the
    // missed one was stored would skip it for good.
    expect(await storedTexts(chat)).toEqual(['hello', 'written while away', 'written now']);
  });

  it('reports a gateway that stays down as an outage, reconnects by itself, and reads by REST what came meanwhile', async () => {
    const chat = bed.chatService();
    startListener(chat);
    bed.platform.send({ from: owner, text: 'before the outage' });
    await until(async () => (await storedTexts(chat)).includes('before the outage'), 'the first message stored');
    await until(() => conditions.at(-1)?.state === 'ok', 'ok reported');
    bed.platform.down = true;
    // Written during the outage: the session it was dispatched to is gone when the bot gets through again.
    bed.platform.send({ from: owner, text: 'during the outage' });
    await until(() => conditions.at(-1)?.state === 'outage', 'the outage reported');
    expect(conditions.at(-1)?.detail).toMatch(/no connection to the gateway/);
    bed.platform.down = false;
    await until(async () => (await storedTexts(chat)).includes('during the outage'), 'the missed message stored');
    await until(() => conditions.at(-1)?.state === 'ok', 'ok reported again');
    expect(bed.platform.identifies).toBe(2);
    expect(await storedTexts(chat)).toEqual(['before the outage', 'during the outage']);
  });

  it('takes a gateway close 4004 for refused credentials, without the token, and keeps trying', async () => {
    bed.platform.refuseIdentify = true;
    const chat = bed.chatService();
    startListener(chat);
    await until(() => conditions.length >= 1, 'the condition reported');
    expect(conditions.map((one) => one.state)).toEqual(['credentials_refused']);
    expect(conditions[0]?.detail).toMatch(/^Discord refused the bot token \(gateway 4004\): check discord\.token/);
    expect(bed.logs.filter((line) => line.startsWith('error '))).toHaveLength(1);
  });

  it('sends approvals with green and red buttons and answers a press ephemerally, a stranger’s too (deciding nothing)', async () => {
    let pending = [
      {
        id: 'ap-00000000000a',
        title: 'Invoice',
        actions: 'send_reply',
        rule: 'invoices',
        reason: 'an invoice',
        expiresAt: '2026-12-01T00:00:00.000Z',
        rendering: 'send_reply to dentist@example.com: paid.',
        bound: true,
      },
    ];
    const decided: string[] = [];
    const approvals: ListenerApprovals = {
      pending: async () => pending,
      decide: async (id, decision, by) => {
        decided.push(`${decision} ${id} by ${by}`);
        pending = [];
        return { status: 'approved', kind: 'action', tasks: ['t1'], actions: 'send_reply', title: 'Invoice' };
      },
    };
    const chat = bed.chatService();
    startListener(chat, { approvals });
    const withButtons = () =>
      bed.platform.messagesIn(bed.platform.dmChannel(owner)).find((message) => message.buttons.length > 0);
    await until(() => withButtons() !== undefined, 'the request with its buttons');
    const message = withButtons();
    if (!message) throw new Error('unreachable');
    expect(message.buttons.map((button) => [button.label, button.style])).toEqual([
      ['✅ Approve', 3],
      ['❌ Reject', 4],
    ]);
    for (const button of message.buttons) expect(button.custom_id.length).toBeLessThanOrEqual(100);
    // A stranger's press decides nothing, and is answered so that only they see it (Discord would otherwise tell
    // them the interaction failed).
    bed.platform.press({ from: stranger, message, button: '✅ Approve' });
    await until(() => bed.platform.callbacks.length === 1, 'the stranger’s press answered');
    expect(bed.platform.callbacks[0]).toMatchObject({
      type: 4,
      content: expect.stringMatching(/^Only the people/),
      flags: 64,
    });
    bed.platform.press({ from: owner, message, button: '✅ Approve' });
    await until(() => decided.length === 1, 'decided');
    expect(decided).toEqual([`approve ap-00000000000a by discord:${owner}`]);
    await until(() => bed.platform.callbacks.length === 2, 'the press answered');
    expect(bed.platform.callbacks[1]).toMatchObject({ type: 4, content: 'Approving…', flags: 64 });
  });
});

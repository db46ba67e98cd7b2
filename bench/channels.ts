// A chat channel's own latency, in process: the Telegram (or, with `--channel matrix|discord|slack|email`, the Matrix,
// Discord, Slack Socket Mode or email) adapter and the channel runner against the local fake Bot API (or fake homeserver, fake gateway and REST, fake Slack, a private Dovecot and an SMTP sink), over the real chat stores in a temporary directory. The bench stands in for a zero-latency model: as soon as a
// message is in the inbox it writes the turn's first token, then the reply. Per trial it measures the time from the
// platform delivering a message to the message being in the inbox (durable), from the token being written to it
// showing on the platform, and both together (message to first visible token, without the worker's pick-up, which
// `bench:chat` measures). `npm run bench:channels [-- --trials 100 --json --channel matrix]`; `--channel webhook` runs
// bench/webhook-channel.ts instead (the signed-webhook channel through `assistant start`). It prints figures; it never fails for
// being slow, and exits non-zero only when something broke.
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ChatService } from '@assistant/chat';
import { chatSettingsDefaults } from '@assistant/integration-chat/testing';
import { imapClient } from '@assistant/mail';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import type { ListenerContext, Secret } from '@assistant/sdk';
import { runDiscord } from '../integrations/chat/src/discord/discord-listener.ts';
import { runEmail } from '../integrations/chat/src/email/email-listener.ts';
import { runMatrix } from '../integrations/chat/src/matrix/matrix-listener.ts';
import { runSlack } from '../integrations/chat/src/slack/slack-listener.ts';
import { runTelegram } from '../integrations/chat/src/telegram/telegram-listener.ts';
import { FakeDiscord } from '../integrations/chat/src/testing/fake-discord.ts';
import { FakeEmail } from '../integrations/chat/src/testing/fake-email.ts';
import { FakeMatrix } from '../integrations/chat/src/testing/fake-matrix.ts';
import { FakeSlack } from '../integrations/chat/src/testing/fake-slack.ts';
import { FakeTelegram } from '../integrations/chat/src/testing/fake-telegram.ts';
import { startDovecot } from '../tests/helpers/dovecot.ts';
import { benchWebhookChannel } from './webhook-channel.ts';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '50' },
    json: { type: 'boolean', default: false },
    channel: { type: 'string', default: 'telegram' },
  },
});
const trials = Number(values.trials);
if (!Number.isInteger(trials) || trials < 1)
  throw new Error(`--trials expects a whole number ≥ 1, got ${values.trials}`);

const channel = values.channel;
if (channel === 'webhook') {
  // Not an adapter of the runner: measured through `assistant start` (bench/webhook-channel.ts, decision 0074).
  await benchWebhookChannel({ trials, json: values.json });
  process.exit(0);
}
if (!['telegram', 'matrix', 'discord', 'slack', 'email'].includes(channel))
  throw new Error(`--channel expects telegram, matrix, discord, slack, email or webhook, got ${channel}`);
const owner = 4242;
const matrixOwner = '@owner:fake.test';
const discordOwner = '300000000000000001';
const root = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-channels-'));
const queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
const fake = channel === 'telegram' ? await FakeTelegram.start() : undefined;
const fakeMatrix = channel === 'matrix' ? await FakeMatrix.start() : undefined;
const fakeDiscord = channel === 'discord' ? await FakeDiscord.start() : undefined;
// Slack: Socket Mode (the envelope over the fake's WebSocket, replies by the Web API).
const fakeSlack = channel === 'slack' ? await FakeSlack.start() : undefined;
const slackOwner = 'UOWNER1';
// Email's platform is a real private Dovecot (mail delivered by IMAP APPEND) and an SMTP sink: root and Dovecot needed.
const dovecot = channel === 'email' ? await startDovecot() : undefined;
const fakeEmail = dovecot ? await FakeEmail.start({ imap: dovecot }) : undefined;
const emailOwner = 'owner@fake.test';
/** The texts each message the bot sent showed, in order (the last one current). */
const sentTexts = () =>
  fakeEmail
    ? fakeEmail.sent.map((mail) => [mail.text])
    : (fake ? fake.sent : fakeDiscord ? fakeDiscord.sent : fakeSlack ? fakeSlack.sent : (fakeMatrix?.sent ?? [])).map(
        (message) => message.texts,
      );
const deliver = (text: string) => {
  if (fake) fake.send({ from: owner, text });
  else if (fakeDiscord) fakeDiscord.send({ from: discordOwner, text });
  else if (fakeSlack) fakeSlack.deliver({ from: slackOwner, text });
  else if (fakeMatrix) fakeMatrix.send({ from: matrixOwner, text });
  else fakeEmail?.deliver({ from: emailOwner, text });
};
const chat = new ChatService({
  notes: new FileNoteStore({ root: path.join(root, 'data', 'notes') }),
  dataDir: path.join(root, 'data'),
  controlRoot: path.join(root, 'data', 'control'),
  queue,
});
const quiet = () => {};
const logger = { info: quiet, warn: quiet, error: quiet, debug: quiet } as unknown as ListenerContext['logger'];
const token = {
  name: channel,
  isSet: true,
  reveal: () =>
    fake?.token ?? fakeMatrix?.token ?? fakeDiscord?.token ?? fakeSlack?.botToken ?? dovecot?.password ?? '',
} as unknown as Secret;
const appToken = { name: 'slack', isSet: true, reveal: () => fakeSlack?.appToken ?? '' } as unknown as Secret;
const controller = new AbortController();
const listeners = { telegram: runTelegram, matrix: runMatrix, discord: runDiscord, slack: runSlack, email: runEmail };
const listening = listeners[channel as keyof typeof listeners]({
  instance: {
    name: 'chat',
    domain: 'chat',
    settings: {
      ...chatSettingsDefaults,
      telegram: fake
        ? { token, allowed_users: [owner], api_root: fake.apiRoot, poll_timeout: 30_000 }
        : { allowed_users: [], api_root: 'https://api.telegram.org', poll_timeout: 30_000 },
      matrix: fakeMatrix
        ? { homeserver: fakeMatrix.homeserver, access_token: token, allowed_users: [matrixOwner], poll_timeout: 30_000 }
        : { homeserver: 'https://matrix.org', allowed_users: [], poll_timeout: 30_000 },
      discord: fakeDiscord
        ? { token, allowed_users: [discordOwner], api_root: fakeDiscord.apiRoot }
        : { allowed_users: [], api_root: 'https://discord.com/api' },
      ...(fakeSlack
        ? {
            slack: {
              mode: 'socket' as const,
              bot_token: token,
              app_token: appToken,
              allowed_users: [slackOwner],
              api_url: fakeSlack.apiUrl,
            },
          }
        : {}),
      ...(dovecot && fakeEmail
        ? {
            email: {
              imap_server: fakeEmail.imapAddress.host,
              port: fakeEmail.imapAddress.port,
              tls: false,
              username: dovecot.user,
              password: token,
              folder: 'INBOX',
              allowed_users: [emailOwner],
              authserv_ids: [fakeEmail.authservId],
              smtp: { ...fakeEmail.smtp, tls: false },
              poll_interval: 10_000,
              connect_timeout: 30_000,
            },
          }
        : {}),
    },
  },
  listener: channel,
  logger,
  enqueue: async () => {
    throw new Error('not used');
  },
  signal: controller.signal,
  configDir: root,
  dataDir: path.join(root, 'data'),
  chat,
});

/** Waits (polling every millisecond: this is a bench, not a test) until `check` holds; fails after 10 s. */
async function until(check: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (!(await check())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what} (${accepted.length} trials done)`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const accepted: number[] = [];
const shown: number[] = [];
const total: number[] = [];
/** Email: the IMAP server's delay from an APPEND to the EXISTS it tells an IDLE client, measured alone. */
const pushDelay: number[] = [];
/** Email: the SMTP server's wait before its greeting, measured alone. */
const greetingDelay: number[] = [];
let conversation: string | undefined;
try {
  for (let trial = 0; trial < trials; trial += 1) {
    const text = `message ${trial}`;
    const start = performance.now();
    deliver(text);
    await until(async () => {
      conversation ??= (await chat.list()).find((one) => one.channel === channel)?.id;
      if (conversation === undefined) return false;
      return (await chat.inbox.pending(conversation)).some((message) => message.text === text);
    }, 'the message in the inbox');
    const stored = performance.now();
    const id = conversation as string;
    const turn = `t${trial}`;
    const first = `Answer ${trial}`;
    await chat.events.append(id, { type: 'turn_started', turn, reply_to: [] });
    // Email cannot edit: its first visible text is the reply, sent once when it is written (below).
    const written = performance.now();
    if (!fakeEmail) {
      await chat.events.append(id, { type: 'token', step: 0, text: first });
      await until(() => sentTexts().some((texts) => texts[0] === first), 'the first token on the platform');
    }
    let visible = performance.now();
    accepted.push(stored - start);
    shown.push(visible - written);
    total.push(stored - start + (visible - written));
    // The reply, so that the next trial is a turn of its own.
    const pending = await chat.inbox.pending(id);
    const ids = pending.map((message) => message.id);
    const reply = await chat.conversations.appendMessage(id, {
      role: 'assistant',
      text: `${first}.`,
      reply_to: ids,
      status: 'complete',
    });
    await chat.inbox.markAnswered(id, { ids, replyId: reply.id });
    await chat.events.append(id, {
      type: 'message',
      message: { id: reply.id, role: 'assistant', text: `${first}.`, reply_to: ids, status: 'complete', at: '' },
    });
    await until(() => sentTexts().some((texts) => texts.at(-1) === `${first}.`), 'the final text');
    if (fakeEmail) {
      visible = performance.now();
      shown[shown.length - 1] = visible - written;
      total[total.length - 1] = stored - start + (visible - written);
    }
  }
  // The IMAP server's own push delay, with no code of ours in it (decision 0081): a plain IMAP client IDLEs on the
  // mailbox while a mail from someone the channel ignores is APPENDed, timed from the APPEND to the `EXISTS`.
  if (dovecot && fakeEmail) {
    const client = imapClient({
      host: fakeEmail.imapAddress.host,
      port: fakeEmail.imapAddress.port,
      tls: false,
      username: dovecot.user,
      password: dovecot.password,
      connectTimeoutMs: 30_000,
    });
    await client.connect();
    const lock = await client.getMailboxLock('INBOX');
    try {
      let seen = 0;
      client.on('exists', () => {
        seen += 1;
      });
      for (let probe = 0; probe < Math.min(trials, 20); probe += 1) {
        const before = seen;
        const idling = client.idle();
        const started = performance.now();
        fakeEmail.deliver({ from: 'probe@elsewhere.test', text: `probe ${probe}`, newThread: true });
        await until(() => seen > before, 'the IMAP server’s EXISTS');
        pushDelay.push(performance.now() - started);
        await client.noop();
        await idling.catch(() => {});
      }
    } finally {
      lock.release();
      await client.logout().catch(() => {});
    }
    // The SMTP server's own wait before its greeting (smtp-server holds every connection 100 ms to catch clients that
    // talk too soon, as real servers do, often for longer): from the TCP connection to the `220`, with no client code.
    for (let probe = 0; probe < Math.min(trials, 20); probe += 1) {
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect(fakeEmail.smtp.port, fakeEmail.smtp.host);
        socket.once('data', () => {
          greetingDelay.push(performance.now() - started);
          socket.destroy();
          resolve();
        });
        socket.once('error', reject);
      });
    }
  }
} finally {
  controller.abort();
  await listening;
  await fake?.close();
  await fakeMatrix?.close();
  await fakeDiscord?.close();
  await fakeSlack?.close();
  await fakeEmail?.close();
  await dovecot?.[Symbol.asyncDispose]();
  await queue.close();
  await rm(root, { recursive: true, force: true });
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
};
const figures = Object.fromEntries(
  Object.entries({ accepted, shown, total, ...(pushDelay.length > 0 ? { pushDelay, greetingDelay } : {}) }).map(
    ([name, list]) => [name, { p50: percentile(list, 50), p95: percentile(list, 95), max: Math.max(...list) }],
  ),
);
if (values.json) {
  process.stdout.write(`${JSON.stringify({ channel, trials, ...figures })}\n`);
} else {
  const line = (name: string, what: string) => {
    const figure = figures[name] as { p50: number; p95: number; max: number };
    process.stdout.write(
      `${what.padEnd(44)} p50 ${figure.p50.toFixed(1)} ms  p95 ${figure.p95.toFixed(1)} ms  max ${figure.max.toFixed(1)} ms\n`,
    );
  };
  process.stdout.write(
    `${{ telegram: 'Telegram', discord: 'Discord', slack: 'Slack (Socket Mode)', matrix: 'Matrix', email: 'Email (Dovecot + SMTP sink)' }[channel]} through its fake, ${trials} trials (node ${process.version}, ${os.cpus().length} cores)\n`,
  );
  line('accepted', 'delivered → in the inbox');
  line('shown', 'first token written → shown on the platform');
  line('total', 'message → first visible token (no worker)');
  if (pushDelay.length > 0) {
    line('pushDelay', 'the IMAP server alone: APPEND → IDLE EXISTS');
    line('greetingDelay', 'the SMTP server alone: connect → 220');
    const own = (figures.total?.p50 ?? 0) - (figures.pushDelay?.p50 ?? 0) - (figures.greetingDelay?.p50 ?? 0);
    process.stdout.write(
      `Assistant's share (p50 message → reply less the two servers' p50 waits; decision 0081): ${own.toFixed(1)} ms\n`,
    );
  }
}

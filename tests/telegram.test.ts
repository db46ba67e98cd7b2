import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { ChatEventLog } from '@assistant/chat';
import { FakeTelegram } from '@assistant/integration-chat/testing';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { repoRoot, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const serverMain = path.join(repoRoot, 'apps/server/src/main.ts');
const owner = 4242;
const stranger = 9999;

/** The conversation notes: id and text. */
async function chatNotes(dataDir: string): Promise<{ id: string; text: string }[]> {
  const directory = path.join(dataDir, 'notes/chats');
  // The server's own notifications conversation is not the bot's.
  const names = (await readdir(directory).catch(() => [] as string[])).filter(
    (name) => name.endsWith('.md') && name !== 'notifications.md',
  );
  return Promise.all(
    names.map(async (name) => ({
      id: name.replace(/\.md$/, ''),
      text: await readFile(path.join(directory, name), 'utf8'),
    })),
  );
}

/** A config with the chat instance's Telegram bot against the fake, the token from secrets.yaml. */
async function telegramConfig(
  dir: { write: (name: string, text: string, mode?: number) => Promise<string> },
  options: { token: string; apiRoot: string; port: number },
): Promise<string> {
  await dir.write('secrets.yaml', `telegram_bot: "${options.token}"\n`, 0o600);
  return dir.write(
    'config.yaml',
    `data_dir: ./data
server: {host: 127.0.0.1, port: ${options.port}}
integrations:
  - type: chat
    name: chat
    telegram:
      token: !secret telegram_bot
      allowed_users: [${owner}]
      api_root: ${JSON.stringify(options.apiRoot)}
      poll_timeout: 1s
`,
  );
}

interface ListenerHealth {
  id: string;
  state: string;
  condition?: string;
  since?: string;
  detail?: string;
}

describe('the Telegram bot in the real server process', () => {
  it('stores an allowed user’s message with its turn, ignores a stranger, and sends the reply the worker writes', async () => {
    await using fake = await FakeTelegram.start();
    await using dir = await tempDir();
    const port = await freePort();
    const config = await telegramConfig(dir, { token: fake.token, apiRoot: fake.apiRoot, port });
    const dataDir = path.join(dir.path, 'data');
    const server = startNode({ args: [serverMain, '--config', config] });
    try {
      await server.waitForOutput(/listening on http:\/\/127\.0\.0\.1:\d+/);
      fake.send({ from: stranger, text: 'a stranger’s private words' });
      fake.send({ from: owner, text: 'hello from Telegram' });

      const note = await waitUntil(
        async () =>
          (await chatNotes(dataDir)).find((one) => new RegExp(`^peer: ["']?${owner}["']?$`, 'm').test(one.text)),
        { what: 'the owner’s conversation note' },
      );
      expect(note.text).toContain('channel: telegram');
      const turns = await waitUntil(
        async () => {
          const names = await readdir(path.join(dataDir, 'queue/pending')).catch(() => [] as string[]);
          const found = names.filter((name) => name.endsWith('--chat.turn.yaml'));
          return found.length > 0 ? found : undefined;
        },
        { what: 'the turn task of the message' },
      );
      expect(turns).toHaveLength(1);
      expect(await chatNotes(dataDir)).toHaveLength(1);

      // The worker's part, written from this process: the reply in the conversation's event log.
      const events = new ChatEventLog({ directory: path.join(dataDir, 'chat/events') });
      await events.append(note.id, { type: 'token', step: 0, text: 'Hello' });
      await events.append(note.id, {
        type: 'message',
        message: { id: 'm-reply-1', role: 'assistant', text: 'Hello, owner.', status: 'complete', reply_to: [] },
      });
      await waitUntil(async () => fake.messagesTo(owner).find((message) => message.text === 'Hello, owner.'), {
        what: 'the reply in the owner’s Telegram chat',
      });
      expect(fake.messagesTo(owner)).toHaveLength(1);
      expect(fake.messagesTo(stranger)).toEqual([]);
      await server.waitForOutput(new RegExp(`ignored a Telegram message from user ${stranger}`));
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
    }
    const run = await server.exited;
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('listener chat/telegram stopped');
    const output = run.stdout + run.stderr;
    expect(output).not.toContain(fake.token);
    expect(output).not.toContain('private words');
    // The offset and the sent reply are on disk for the next start.
    const state = JSON.parse(await readFile(path.join(dataDir, 'chat/telegram/chat.json'), 'utf8'));
    expect(state.offset).toBeGreaterThan(0);
    expect(Object.keys(state.sent)).toEqual(['m-reply-1']);
  });

  it('shows a refused token as credentials_refused in /health and on the dashboard, without the token', async () => {
    await using fake = await FakeTelegram.start();
    await using dir = await tempDir();
    const port = await freePort();
    const wrong = '777000:planted-wrong-token-value';
    const config = await telegramConfig(dir, { token: wrong, apiRoot: fake.apiRoot, port });
    const dataDir = path.join(dir.path, 'data');
    const server = startNode({ args: [serverMain, '--config', config] });
    try {
      await server.waitForOutput(/listening on http:\/\/127\.0\.0\.1:\d+/);
      const authorized = fetchWithToken(await readApiToken(dataDir));
      const api = `http://127.0.0.1:${port}`;
      const { body, listener } = await waitUntil(
        async () => {
          const text = await (await authorized(`${api}/health`)).text();
          const found = (JSON.parse(text).listeners as ListenerHealth[]).find((one) => one.id === 'chat/telegram');
          return found?.condition === 'credentials_refused' ? { body: text, listener: found } : undefined;
        },
        { what: 'chat/telegram credentials_refused in /health' },
      );
      // Still running (it waits and retries), and /health's status stays ok, as for an open breaker.
      expect(JSON.parse(body).status).toBe('ok');
      expect(listener).toMatchObject({ state: 'running', since: expect.any(String) });
      expect(listener.detail).toContain('Telegram refused the bot token');
      expect(listener.detail).toContain('trying again every 60 s');
      expect(body).not.toContain(wrong);
      const page = await (await authorized(`${api}/`)).text();
      expect(page).toContain('<span class="badge bad">credentials refused</span>');
      expect(page).not.toContain(wrong);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
    }
    const run = await server.exited;
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(wrong);
    expect(fake.unauthorized).toBeGreaterThan(0);
  });

  it('shows outage in /health while Telegram is down, then ok once it answers again', async () => {
    await using fake = await FakeTelegram.start();
    await using dir = await tempDir();
    const port = await freePort();
    const config = await telegramConfig(dir, { token: fake.token, apiRoot: fake.apiRoot, port });
    const dataDir = path.join(dir.path, 'data');
    fake.down = true;
    const server = startNode({ args: [serverMain, '--config', config] });
    try {
      await server.waitForOutput(/listening on http:\/\/127\.0\.0\.1:\d+/);
      const authorized = fetchWithToken(await readApiToken(dataDir));
      const api = `http://127.0.0.1:${port}`;
      const telegram = async () => {
        const text = await (await authorized(`${api}/health`)).text();
        expect(text).not.toContain(fake.token);
        const found = (JSON.parse(text).listeners as ListenerHealth[]).find((one) => one.id === 'chat/telegram');
        return { status: JSON.parse(text).status as string, listener: found };
      };
      const down = await waitUntil(
        async () => {
          const health = await telegram();
          return health.listener?.condition === 'outage' ? health : undefined;
        },
        { what: 'chat/telegram outage in /health' },
      );
      expect(down.status).toBe('ok');
      expect(down.listener).toMatchObject({ state: 'running', since: expect.any(String) });
      expect(down.listener?.detail).toMatch(/502 Bad Gateway; next try at /);
      expect(await (await authorized(`${api}/`)).text()).toContain('<span class="badge bad">outage</span>');

      fake.down = false;
      const back = await waitUntil(
        async () => {
          const health = await telegram();
          return health.listener?.condition === 'ok' ? health : undefined;
        },
        { what: 'chat/telegram ok in /health after the outage' },
      );
      expect(back.listener).toMatchObject({ state: 'running', restarts: 0 });
      expect(back.listener?.detail).toBeUndefined();
      expect(Date.parse(back.listener?.since ?? '')).toBeGreaterThanOrEqual(Date.parse(down.listener?.since ?? ''));
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGTERM');
    }
    const run = await server.exited;
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(fake.token);
  });
});

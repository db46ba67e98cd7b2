import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { AssistantError, clearSecretValues, registerSecretValue } from '@assistant/errors';
import { HttpHumanLog, HttpNoteStore, NoteConflictError, NotePathError } from '@assistant/notes';
import { describeNoteStoreContract } from '@assistant/notes/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-remote-store-0123456789';

interface Running {
  app: AssistantServer;
  url: string;
  dataDir: string;
  notesRoot: string;
  outside: string;
  close(): Promise<void>;
}

/** The whole server, in this process, listening on a loopback port: the HTTP store talks to it as a worker would. */
async function startServer(): Promise<Running> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-remote-store-'));
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const config = (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
  const app = createServer({ config, token });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('the server has no port');
  const outside = path.join(dir, 'outside');
  await mkdir(outside);
  return {
    app,
    url: `http://127.0.0.1:${address.port}`,
    dataDir: config.paths.dataDir,
    notesRoot: config.paths.notes,
    outside,
    close: async () => {
      await app.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

describeNoteStoreContract('HttpNoteStore against the server', async () => {
  const running = await startServer();
  return {
    store: new HttpNoteStore({ serverUrl: running.url, token }),
    root: running.notesRoot,
    outside: running.outside,
    cleanup: () => running.close(),
  };
});

describe('HttpNoteStore and HttpHumanLog', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    clearSecretValues();
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });
  async function running(): Promise<Running> {
    const started = await startServer();
    cleanups.push(() => started.close());
    return started;
  }

  it('writes human log lines into the server’s daily file', async () => {
    const server = await running();
    const log = new HttpHumanLog({ serverUrl: `${server.url}/`, token });
    const at = new Date(2026, 10, 22, 14, 3, 22);
    await log.write({ source: 'email/inbox', message: 'archived "Digest"\nfrom news', reason: 'rule x', at });
    await log.write({ source: 'worker', message: 'second', link: 'notes/a b.md', at });
    expect(await readFile(path.join(server.dataDir, 'logs', '2026-11-22.md'), 'utf8')).toBe(
      '- 14:03:22 **email/inbox** archived "Digest" from news (rule x)\n- 14:03:22 **worker** second [→](notes/a%20b.md)\n',
    );
  });

  it('refuses a wrong token with a clear error that names the server and never the token', async () => {
    const server = await running();
    const wrong = 'not-the-token-but-a-long-guess-0123456789';
    for (const call of [
      () => new HttpNoteStore({ serverUrl: server.url, token: wrong }).read('a.md'),
      () => new HttpHumanLog({ serverUrl: server.url, token: wrong }).write({ source: 'x', message: 'y' }),
      () => new HttpNoteStore({ serverUrl: server.url }).list(),
    ]) {
      const error = await call().catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(AssistantError);
      expect(error).toMatchObject({ code: 'UNAUTHORIZED' });
      expect((error as Error).message).toContain(server.url);
      expect((error as Error).message).toContain('401');
      expect(JSON.stringify(error)).not.toContain(wrong);
      expect((error as Error).message).not.toContain(wrong);
    }
    expect(await readdir(path.join(server.dataDir, 'logs')).catch(() => [])).toEqual([]);
  });

  it('names the URL when the server cannot be reached, without the token or a password in it', async () => {
    const server = await running();
    const url = server.url;
    await server.close();
    cleanups.length = 0;
    const withPassword = url.replace('http://', 'http://owner:hunter2hunter2@');
    const error = await new HttpNoteStore({ serverUrl: withPassword, token })
      .read('a.md')
      .catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'UNAVAILABLE' });
    expect((error as Error).message).toContain(`cannot reach the Assistant server at ${url}`);
    expect((error as Error).message).not.toContain('hunter2');
    expect((error as Error).message).not.toContain(token);
  });

  it('gives up a change after its attempts when the note keeps changing under it, naming the keys', async () => {
    const server = await running();
    let saves = 0;
    // A person saves the file between every read and the write based on it: no write is ever of the current version.
    const personSavesFirst: typeof fetch = async (input, init) => {
      if (String(input).includes('/api/store/notes/update')) {
        saves += 1;
        await writeFile(path.join(server.notesRoot, 'busy.md'), `---\ncount: ${saves * 10}\n---\n`);
      }
      return fetch(input, init);
    };
    const store = new HttpNoteStore({ serverUrl: server.url, token, maxChangeAttempts: 3, fetch: personSavesFirst });
    await store.create('busy.md', { data: { count: 0 } });
    let runs = 0;
    const error = await store
      .update('busy.md', {
        change: (current) => {
          runs += 1;
          return { set: { count: Number(current.data.count) + 1 } };
        },
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(NoteConflictError);
    expect(error).toMatchObject({ path: 'busy.md', keys: ['count'] });
    expect(runs).toBe(3);
    expect(await readFile(path.join(server.notesRoot, 'busy.md'), 'utf8')).toBe('---\ncount: 30\n---\n');
  });

  it('refuses `..`, absolute and NUL paths before the disk, even ones the file store would resolve inside', async () => {
    const server = await running();
    const store = new HttpNoteStore({ serverUrl: server.url, token });
    await store.create('a.md', { data: {} });
    for (const notePath of ['sub/../a.md', '/a.md', 'a\0.md', '..\\a.md']) {
      await expect(store.read(notePath), JSON.stringify(notePath)).rejects.toBeInstanceOf(NotePathError);
    }
    await expect(store.create('x/../b.md', { data: {} })).rejects.toBeInstanceOf(NotePathError);
    expect(await store.list()).toEqual(['a.md']);
  });

  it("scrubs this worker's secrets from what it sends, before the server sees them", async () => {
    const server = await running();
    const secret = 'worker-only-secret-abcdef123456';
    registerSecretValue(secret);
    // The server runs in this process and shares its secret registry, so what left the client is checked on the wire.
    const sent: string[] = [];
    const recording: typeof fetch = async (input, init) => {
      sent.push(String(init?.body ?? ''));
      return fetch(input, init);
    };
    const store = new HttpNoteStore({ serverUrl: server.url, token, fetch: recording });
    await store.create('t.md', { data: { error: `401 for ${secret}` }, body: `said ${secret}\n` });
    await store.update('t.md', { set: { again: secret } });
    await new HttpHumanLog({ serverUrl: server.url, token, fetch: recording }).write({
      source: 'w',
      message: `token ${secret}`,
    });
    expect(sent).toHaveLength(3);
    for (const body of sent) expect(body).not.toContain(secret);
    const note = await readFile(path.join(server.notesRoot, 't.md'), 'utf8');
    expect(note).not.toContain(secret);
    expect(note).toContain('[secret]');
    const [logFile] = await readdir(path.join(server.dataDir, 'logs'));
    expect(await readFile(path.join(server.dataDir, 'logs', logFile ?? ''), 'utf8')).toContain('token [secret]');
  });
});

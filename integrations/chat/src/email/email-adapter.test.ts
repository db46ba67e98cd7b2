import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmailAdapter } from './email-adapter.ts';

const password = 'imap-secret-value';
const logger = {
  info: () => {},
  warn: () => {},
  error: () => {},
  debug: () => {},
} as unknown as ListenerContext['logger'];

describe('EmailAdapter', () => {
  let root: string;
  let adapter: EmailAdapter;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'assistant-email-adapter-'));
    adapter = await EmailAdapter.open({
      account: {
        imap: {
          host: 'imap.example.test',
          port: 993,
          tls: true,
          username: 'assistant@example.test',
          password,
          folder: 'INBOX',
        },
        smtp: { host: 'smtp.example.test', port: 587, tls: false, username: 'assistant@example.test', password },
        address: 'assistant@example.test',
        owners: ['owner@example.test'],
        authservIds: ['mx.example.test'],
        pollIntervalMs: 10_000,
        connectTimeoutMs: 1_000,
      },
      logger,
      file: path.join(root, 'chat', 'email', 'chat.mailbox.json'),
    });
  });

  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('classifies a refused login as bad credentials without the password, outages as transient, 5xx as refused', () => {
    const imapLogin = Object.assign(new Error('Command failed'), { authenticationFailed: true });
    const smtpLogin = Object.assign(new Error('Invalid login: 535'), { code: 'EAUTH', responseCode: 535 });
    for (const error of [imapLogin, smtpLogin]) {
      const failure = adapter.classify(error);
      expect(failure.kind).toBe('bad_credentials');
      expect(JSON.stringify(failure)).not.toContain(password);
    }
    expect(adapter.classify(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toEqual({
      kind: 'transient',
    });
    expect(adapter.classify(Object.assign(new Error('try later'), { responseCode: 451 }))).toEqual({
      kind: 'transient',
    });
    expect(
      adapter.classify(Object.assign(new Error('no such user'), { code: 'EENVELOPE', responseCode: 550 })),
    ).toEqual({
      kind: 'refused',
    });
    expect(adapter.classify(undefined)).toEqual({ kind: 'transient' });
  });

  it('cannot edit (refused, so a runner sends anew), and says it does not stream (each mail thread is a conversation: the runner keeps one per peer and thread)', async () => {
    expect(adapter.streaming).toBe(false);
    const refused = await adapter.edit().catch((error: unknown) => adapter.classify(error));
    expect(refused).toEqual({ kind: 'refused' });
    expect(adapter.directThread('owner@example.test')).toBe('direct:owner@example.test');
  });

  it('refuses to send to a thread it knows no address for', async () => {
    const failure = await adapter
      .send({ thread: '<unknown@example.test>', text: 'hi', signal: new AbortController().signal })
      .catch((error: unknown) => adapter.classify(error));
    expect(failure).toEqual({ kind: 'refused' });
  });

  it('keeps its state beside the runner’s: the first read’s time, no thread yet', async () => {
    const state = JSON.parse(await readFile(path.join(root, 'chat', 'email', 'chat.mailbox.json'), 'utf8'));
    expect(state).toMatchObject({ version: 1, generation: 0, threads: {} });
    expect(Date.parse(state.since)).not.toBeNaN();
  });
});

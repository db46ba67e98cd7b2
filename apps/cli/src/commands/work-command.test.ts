import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { workCommand } from './work-command.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-work-command-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `assistant work` with options that must be refused before any worker starts. */
async function refused(config: string, options: { types?: string; server?: string }, env: NodeJS.ProcessEnv = {}) {
  await writeFile(path.join(dir, 'config.yaml'), config);
  const context: CliContext = {
    stdout: { write: () => true },
    stderr: { write: () => true },
    env,
    cwd: dir,
  };
  const error = await workCommand({
    globals: { configPath: path.join(dir, 'config.yaml'), dataDir: undefined },
    context,
    ...options,
  }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, 'the command should have been refused').toBeDefined();
  return error as { code: string; message: string; hint?: string };
}

const redisConfig = 'data_dir: ./data\nqueue: {backend: redis, redis: {url: "redis://127.0.0.1:1"}}\n';

describe('assistant work', () => {
  it('refuses --types that are not task types or patterns', async () => {
    for (const types of ['', ' , ', 'Email.Inbox', 'email..classify', 'email/inbox']) {
      expect(await refused('data_dir: ./data\n', { types })).toMatchObject({
        code: 'USAGE',
        message: expect.stringMatching(/^--types takes task types or patterns/),
      });
    }
  });

  it('refuses --server without Redis, without a token, or with a URL that is not http(s) or holds credentials', async () => {
    const url = 'http://10.0.0.5:6767';
    expect(await refused('data_dir: ./data\n', { server: url }, { ASSISTANT_TOKEN: 't' })).toMatchObject({
      code: 'USAGE',
      message: expect.stringMatching(/claims from Redis/),
      hint: expect.stringMatching(/queue.backend: redis/),
    });
    expect(await refused(redisConfig, { server: url })).toMatchObject({
      code: 'USAGE',
      message: expect.stringMatching(/needs the install's API token/),
      hint: expect.stringMatching(/ASSISTANT_TOKEN/),
    });
    for (const server of ['ftp://10.0.0.5', 'not a url', 'http://user:secret@10.0.0.5:6767']) {
      const error = await refused(redisConfig, { server }, { ASSISTANT_TOKEN: 't' });
      expect(error.code).toBe('USAGE');
      expect(error.message).not.toContain('secret@');
    }
  });
});

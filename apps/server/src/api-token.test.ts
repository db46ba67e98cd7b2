import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { configuredApiToken, resolveApiToken } from './api-token.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-token-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function config(extra = '') {
  await writeFile(path.join(dir, 'config.yaml'), `data_dir: ./data\n${extra}`);
  return (await loadConfig({ configPath: path.join(dir, 'config.yaml') })).config;
}

describe('resolveApiToken', () => {
  it('hole 2: creates data/api-token once (32 random bytes, base64url, 0600 in a 0700 data directory) and reuses it', async () => {
    const loaded = await config();
    const [first, second] = await Promise.all([
      resolveApiToken({ config: loaded }),
      resolveApiToken({ config: loaded }),
    ]);
    expect(first.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(second.value).toBe(first.value);
    expect([first.created, second.created].filter(Boolean)).toHaveLength(1);
    const file = path.join(dir, 'data/api-token');
    expect(first.file).toBe(file);
    expect((await readFile(file, 'utf8')).trim()).toBe(first.value);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(path.join(dir, 'data'))).mode & 0o777).toBe(0o700);
    const again = await resolveApiToken({ config: loaded });
    expect(again).toMatchObject({ value: first.value, created: false, source: 'file' });
  });

  it('prefers server.token from secrets.yaml, and refuses a token file that holds no token', async () => {
    await writeFile(path.join(dir, 'secrets.yaml'), 'server_token: "configured-token-0123456789"\n');
    await chmod(path.join(dir, 'secrets.yaml'), 0o600);
    const configured = await config('server:\n  token: !secret server_token\n');
    expect(await resolveApiToken({ config: configured })).toMatchObject({
      value: 'configured-token-0123456789',
      source: 'config',
    });
    const loaded = await config();
    await resolveApiToken({ config: loaded });
    await writeFile(path.join(dir, 'data/api-token'), '\n');
    await expect(resolveApiToken({ config: loaded })).rejects.toThrow(/api-token does not hold a token/);
    await rm(path.join(dir, 'data/api-token'));
    await expect(resolveApiToken({ config: loaded, create: false })).rejects.toThrow(/does not exist yet/);
  });

  it('refuses a blank server.token rather than run open', async () => {
    await writeFile(path.join(dir, 'secrets.yaml'), 'server_token: "  "\n');
    await chmod(path.join(dir, 'secrets.yaml'), 0o600);
    const configured = await config('server:\n  token: !secret server_token\n');
    await expect(resolveApiToken({ config: configured })).rejects.toThrow(
      /server\.token is configured but its secret `server_token` is blank/,
    );
    expect(() => configuredApiToken(configured)).toThrow(/is blank/);
  });
});

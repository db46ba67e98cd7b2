// A new user's second `assistant start` (or a port another program holds): one line that says what to do, exit 1,
// no stack trace, and with `start` no child process started at all.
import net from 'node:net';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { repoRoot, runCli, runNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

let holder: net.Server;
let port: number;
let dir: TempDir;

beforeEach(async () => {
  holder = net.createServer();
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen(0, '127.0.0.1', () => resolve());
  });
  const address = holder.address();
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  port = address.port;
  dir = await tempDir();
  await dir.write('config.yaml', `data_dir: ./data\nserver:\n  port: ${port}\n`);
});

afterEach(async () => {
  await new Promise<void>((resolve) => holder.close(() => resolve()));
  await dir[Symbol.asyncDispose]();
});

describe('a port that is already in use', () => {
  for (const command of ['serve', 'start'] as const) {
    it(`assistant ${command} says so in one line and exits 1`, async () => {
      const run = await runCli([command], { cwd: dir.path });
      expect(run.stderr).toBe(
        `assistant: port ${port} is in use: change server.port or stop the other instance\n` +
          `hint: another process listens on 127.0.0.1:${port}; \`ss -ltnp\` names it\n`,
      );
      expect(run.stdout).not.toMatch(/EADDRINUSE|\bat .+:\d+:\d+/);
      if (command === 'start') expect(run.stdout).not.toContain('started');
      expect(run.code).toBe(1);
    });
  }

  it('the server process (as `assistant start` runs it) logs the same line, with no stack, and exits 1', async () => {
    const run = await runNode({
      args: [path.join(repoRoot, 'apps/server/src/main.ts'), '--config', path.join(dir.path, 'config.yaml')],
      cwd: dir.path,
      env: { ASSISTANT_LOG_FORMAT: 'json' },
    });
    const fatal = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; code?: string; err?: unknown })
      .filter((entry) => entry.level === 60);
    expect(fatal).toEqual([
      expect.objectContaining({
        code: 'PORT_IN_USE',
        msg: `port ${port} is in use: change server.port or stop the other instance\nhint: another process listens on 127.0.0.1:${port}; \`ss -ltnp\` names it`,
      }),
    ]);
    expect(fatal[0]?.err).toBeUndefined();
    expect(run.code).toBe(1);
  });
});

// A new user's second `assistant start` (or a port another program holds): one line that says what to do, exit 1,
// no stack trace, and with `start` no child process started at all.
import net from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
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
});

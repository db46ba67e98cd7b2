// `assistant chat --once` with the model down, against a real worker: it says the model is down as soon as the
// worker's turn finds it unreachable, not "no reply … is the worker running?" once its timeout ran out (issue 31).
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('assistant chat --once with the model down', () => {
  it('says the model is down, well before its own timeout, and that the message is kept', {
    timeout: 120_000,
  }, async () => {
    await using dir = await tempDir();
    // Nothing listens there: every connection is refused, as when the model server is stopped.
    const modelPort = await freePort();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:${modelPort}/v1", model: fake-model, max_retries: 0}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
`,
    );
    const worker = startNode({ args: [cliMain, 'work', '--config', configPath], cwd: dir.path });
    try {
      await worker.waitForOutput(/worker ready/, { timeoutMs: 90_000 });
      // A timeout of an hour: only the model-down report can end the command within this test's time.
      const chat = spawn(process.execPath, [cliMain, 'chat', '--once', '--timeout', '1h', '--config', configPath], {
        cwd: dir.path,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      chat.stdout.setEncoding('utf8').on('data', (text: string) => (stdout += text));
      chat.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
      chat.stdin.end('are you there?\n');
      const exited = new Promise<number | null>((resolve) => chat.once('close', (code) => resolve(code)));
      let timer: NodeJS.Timeout | undefined;
      const bound = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), 90_000);
      });
      const code = await Promise.race([exited, bound]).finally(() => clearTimeout(timer));
      if (code === 'late') {
        chat.kill('SIGKILL');
        throw new Error(
          `assistant chat --once still waits with the model down\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        );
      }
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toContain('the model is down: The model cannot be reached');
      expect(stderr).not.toContain('no worker is running');
      expect(stderr).not.toContain('is the worker running');
      expect(stderr).toMatch(/the message m\S+ is stored and answered once the model is back/);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});

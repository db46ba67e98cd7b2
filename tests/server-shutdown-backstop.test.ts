import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, repoRoot, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const hanger = path.join(repoRoot, 'tests/fixtures/integrations/inbound/hanger');
const serverMain = path.join(repoRoot, 'apps/server/src/main.ts');

describe('a server whose listener and webhook handler ignore the shutdown signal', () => {
  for (const [how, args] of [
    ['the server process', [serverMain]],
    ['assistant serve', [cliMain, 'serve']],
  ] as const) {
    it(`still exits after SIGTERM: ${how}`, async () => {
      await using dir = await tempDir();
      const port = await freePort();
      const config = await dir.write(
        'config.yaml',
        `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 1s}
integration_dirs: [${JSON.stringify(hanger)}]
integrations:
  - {type: hanger, name: hung}
`,
      );
      const server = startNode({ args: [...args, '--config', config] });
      try {
        await server.waitForOutput(/deaf listener running/);
        const token = await readApiToken(path.join(dir.path, 'data'));
        const stalled = fetch(`http://127.0.0.1:${port}/api/integrations/hung/hooks/stall`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
          body: '',
        });
        await server.waitForOutput(/stalling webhook called/);
        server.child.kill('SIGTERM');
        // The webhook's caller is answered once the grace (worker.shutdown_grace, 1 s) is over.
        const answer = await stalled;
        expect(answer.status).toBe(503);
        expect(await answer.json()).toMatchObject({ error: { code: 'UNAVAILABLE' } });
        // The listener is left behind after the grace, and the backstop ends the process 3 s later.
        await server.waitForOutput(/exiting now/, { timeoutMs: 15_000 });
      } catch (error) {
        server.child.kill('SIGKILL');
        throw error;
      }
      // It printed its last line and is exiting: this wait ends.
      const run = await server.exited;
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('listeners hung/deaf did not stop within 1000 ms of the shutdown signal');
      expect(run.stdout).toContain('webhook hung/stall did not return within 1000 ms of the shutdown signal');
      expect(run.stdout).toMatch(/still running 4000ms after .*; exiting now/);
    });
  }
});

// Issue 31 item 4: `assistant start` says once, without delaying the start, that a configured LLM profile cannot
// be reached, as `assistant doctor` does; a profile that answers gets no line.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('assistant start', () => {
  it('prints one warning for an LLM profile that cannot be reached, and none for one that answers', {
    timeout: 120_000,
  }, async () => {
    await using dir = await tempDir();
    // A model server on loopback that serves model `m`.
    const models = createServer((_request, response) => {
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ data: [{ id: 'm' }] }));
    });
    await new Promise<void>((resolve) => models.listen(0, '127.0.0.1', resolve));
    await using _models = {
      [Symbol.asyncDispose]: () => new Promise<void>((resolve) => models.close(() => resolve())),
    };
    const up = (models.address() as AddressInfo).port;
    // Nothing listens here: the connection is refused.
    const down = await freePort();
    const port = await freePort();
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 5s}
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:${down}/v1", model: m}
  local: {base_url: "http://127.0.0.1:${up}/v1", model: m}
`,
    );
    const start = startNode({ args: [cliMain, 'start', '--config', config] });
    try {
      await start.waitForOutput(/^\[assistant\] warning: LLM profile `default` cannot be used: .*ECONNREFUSED/m, {
        timeoutMs: 60_000,
      });
      await start.waitForOutput(/^\[worker\] .*worker ready/m, { timeoutMs: 60_000 });
    } finally {
      start.child.kill('SIGTERM');
    }
    const run = await start.exited;
    const warnings = run.stdout.split('\n').filter((line) => line.includes('LLM profile'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(
        `^\\[assistant\\] warning: LLM profile \`default\` cannot be used: llm default: GET http://127\\.0\\.0\\.1:${down}/v1/models failed: ECONNREFUSED; tasks that need it wait until it answers \\(is the LLM server running on this machine\\?`,
      ),
    );
    expect(run.stdout).not.toMatch(/LLM profile `local`/);
  });
});

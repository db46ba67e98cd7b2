// Cross-process steering latency: `assistant start` (server and worker as child processes) runs an agent task
// against a fake OpenAI-compatible server; each trial POSTs an interjection to /api/tasks/:id/steer, which answers
// once the worker has applied it. Prints p50/p95/max over the trials (goal: p95 ≤ 100 ms).
// `npm run bench:steering [-- --trials 100 --json]`. It prints figures; it never fails for being slow.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { freePort } from '../tests/helpers/free-port.ts';

const { values } = parseArgs({
  options: { trials: { type: 'string', default: '100' }, json: { type: 'boolean', default: false } },
});
const trials = Number(values.trials);
const cliMain = fileURLToPath(new URL('../apps/cli/src/main.ts', import.meta.url));

const model = await FakeOpenAiServer.start({
  // The loop keeps waiting in short steps, so there is always a running loop to steer.
  respond: () => ({ toolCalls: [{ name: 'wait', arguments: { ms: 200 } }] }),
});
const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-steering-'));
const port = await freePort();
const config = path.join(directory, 'config.yaml');
await writeFile(
  config,
  `data_dir: ./data\nllms:\n  default: {base_url: "${model.url}", model: fake-model}\nserver: {port: ${port}}\nworker: {shutdown_grace: 1s}\nqueue:\n  policies:\n    overrides:\n      system.agent: {timeout: 1h}\n`,
);
const child = spawn(process.execPath, [cliMain, 'start', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
let output = '';
child.stdout.on('data', (chunk: Buffer) => {
  output += chunk.toString();
});
try {
  while (!/\[worker\] .*worker ready/.test(output) || !/listening on/.test(output))
    await new Promise((resolve) => setTimeout(resolve, 50));
  const api = `http://127.0.0.1:${port}`;
  // The server created its API token in the data directory as it started.
  const authorization = `Bearer ${(await readFile(path.join(directory, 'data/api-token'), 'utf8')).trim()}`;
  const created = (await (
    await fetch(`${api}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization },
      body: JSON.stringify({ type: 'system.agent', payload: { prompt: 'keep waiting', max_steps: 200 } }),
    })
  ).json()) as { id: string };
  while (model.requests.length < 2) await new Promise((resolve) => setTimeout(resolve, 20));
  const latencies: number[] = [];
  for (let trial = 0; trial < trials; trial += 1) {
    const started = performance.now();
    const response = await fetch(`${api}/api/tasks/${created.id}/steer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization },
      body: JSON.stringify({ action: 'interject', message: `note ${trial}` }),
    });
    const body = (await response.json()) as { status?: string };
    if (response.status !== 200 || body.status !== 'applied')
      throw new Error(`trial ${trial}: HTTP ${response.status} ${JSON.stringify(body)}`);
    latencies.push(performance.now() - started);
  }
  latencies.sort((left, right) => left - right);
  const at = (fraction: number) =>
    latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * fraction))] ?? 0;
  const result = { trials, p50Ms: at(0.5), p95Ms: at(0.95), maxMs: latencies.at(-1) ?? 0 };
  if (values.json) console.log(JSON.stringify(result, null, 2));
  else {
    console.log(`steering request → applied by the worker, over ${trials} interjections on a running agent task:`);
    console.log(
      `  p50 ${result.p50Ms.toFixed(1)} ms, p95 ${result.p95Ms.toFixed(1)} ms, max ${result.maxMs.toFixed(1)} ms (goal: p95 ≤ 100 ms)`,
    );
  }
} finally {
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  await model.close();
  await rm(directory, { recursive: true, force: true });
}

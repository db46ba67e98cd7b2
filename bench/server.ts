// REST API speed over real loopback HTTP: POST /api/tasks throughput and latency with 50 requests in flight, then
// GET /health, GET /api/tasks?limit=100 and GET /metrics at the resulting queue depth.
// `npm run bench:server [-- --requests 5000 --in-flight 50 --dir /path --json]`. It prints figures; it never fails
// for being slow. Results go in docs/performance.md.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '@assistant/config';
import { createServer } from '@assistant/server';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    'in-flight': { type: 'string', default: '50' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
  },
});
const requests = Number(values.requests);
const inFlight = Number(values['in-flight']);

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? 0;
}

async function timeGets(url: string, token: string, times: number): Promise<{ p50Ms: number; p99Ms: number }> {
  const latencies: number[] = [];
  for (let index = 0; index < times; index += 1) {
    const started = performance.now();
    const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    await response.arrayBuffer();
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    latencies.push(performance.now() - started);
  }
  latencies.sort((left, right) => left - right);
  return { p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99) };
}

const directory = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-server-'));
try {
  await writeFile(path.join(directory, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(directory, 'config.yaml') });
  // The bench's own token: createServer has no open default.
  const token = 'bench-token-0123456789abcdefghijklmnop';
  const app = createServer({ config, token });
  const address = await app.listen({ host: '127.0.0.1', port: 0 });
  try {
    const latencies: number[] = [];
    let next = 0;
    const started = performance.now();
    const cpuStarted = process.cpuUsage();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < requests) {
          const index = next++;
          const sent = performance.now();
          const response = await fetch(`${address}/api/tasks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            body: JSON.stringify({ type: 'system.echo', payload: { index } }),
          });
          await response.arrayBuffer();
          if (response.status !== 201) throw new Error(`POST /api/tasks: HTTP ${response.status}`);
          latencies.push(performance.now() - sent);
        }
      }),
    );
    const elapsedMs = performance.now() - started;
    const cpu = process.cpuUsage(cpuStarted);
    latencies.sort((left, right) => left - right);
    const result = {
      requests,
      inFlight,
      postPerSecond: Math.round((requests / elapsedMs) * 1_000),
      postP50Ms: percentile(latencies, 0.5),
      postP99Ms: percentile(latencies, 0.99),
      cpuMsPerPost: (cpu.user + cpu.system) / 1_000 / requests,
      health: await timeGets(`${address}/health`, token, 50),
      list100: await timeGets(`${address}/api/tasks?limit=100`, token, 20),
      metrics: await timeGets(`${address}/metrics`, token, 20),
    };
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else {
      const ms = (value: number) => `${value.toFixed(1)} ms`;
      console.log(`POST /api/tasks: ${result.postPerSecond}/s with ${inFlight} in flight (${requests} requests)`);
      console.log(
        `  latency p50 ${ms(result.postP50Ms)}, p99 ${ms(result.postP99Ms)}; CPU ${ms(result.cpuMsPerPost)} per request (server and client)`,
      );
      console.log(`at ${requests} pending tasks:`);
      console.log(`  GET /health                p50 ${ms(result.health.p50Ms)}, p99 ${ms(result.health.p99Ms)}`);
      console.log(`  GET /api/tasks?limit=100   p50 ${ms(result.list100.p50Ms)}, p99 ${ms(result.list100.p99Ms)}`);
      console.log(`  GET /metrics               p50 ${ms(result.metrics.p50Ms)}, p99 ${ms(result.metrics.p99Ms)}`);
    }
  } finally {
    await app.close();
  }
} finally {
  await rm(directory, { recursive: true, force: true });
}

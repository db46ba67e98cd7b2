// REST API speed over real loopback HTTP: POST /api/tasks throughput and latency with 50 requests in flight, then
// GET /health, GET /api/tasks?limit=100 and GET /metrics at the resulting queue depth.
// `npm run bench:server [-- --requests 5000 --in-flight 50 --dir /path --json]`. It prints figures; it never fails
// for being slow. Results go in docs/performance.md.
// `--streams 4000 [--conversations 20 --idle 10s]` measures instead the server process (`assistant serve`) with that
// many idle chat event streams open: its CPU over the idle window (from /proc, so Linux only) and /health's latency.
// `--chats 3000` measures instead GET /api/chats and the dashboard's /chat with that many conversation notes.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '@assistant/config';
import { createServer } from '@assistant/server';
import { freePort } from '../tests/helpers/free-port.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '5000' },
    'in-flight': { type: 'string', default: '50' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
    streams: { type: 'string' },
    conversations: { type: 'string', default: '20' },
    idle: { type: 'string', default: '10' },
    chats: { type: 'string' },
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

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat. */
async function cpuSeconds(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces, inside parentheses): utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Idle chat event streams against `assistant serve`: the server's CPU and /health while they are open. */
async function benchStreams(streams: number): Promise<void> {
  const conversations = Number(values.conversations);
  const idleSeconds = Number(values.idle);
  const directory = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-streams-'));
  const port = await freePort();
  await writeFile(
    path.join(directory, 'config.yaml'),
    `data_dir: ./data\nserver:\n  port: ${port}\n  event_streams_per_client: ${streams}\n`,
  );
  const cliMain = fileURLToPath(new URL('../apps/cli/src/main.ts', import.meta.url));
  const child = spawn(process.execPath, [cliMain, 'serve', '--config', path.join(directory, 'config.yaml')], {
    cwd: directory,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const requests: http.ClientRequest[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (/listening on/.test(output)) resolve();
      });
      child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening`)));
    });
    const token = (await readFile(path.join(directory, 'data/api-token'), 'utf8')).trim();
    const base = `http://127.0.0.1:${port}`;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const ids: string[] = [];
    for (let index = 0; index < conversations; index += 1) {
      const created = await fetch(`${base}/api/chats`, { method: 'POST', headers, body: '{}' });
      ids.push(((await created.json()) as { id: string }).id);
    }
    const openStarted = performance.now();
    for (let start = 0; start < streams; start += 100) {
      await Promise.all(
        Array.from(
          { length: Math.min(100, streams - start) },
          (_, offset) =>
            new Promise<void>((resolve, reject) => {
              const request = http.get(
                {
                  host: '127.0.0.1',
                  port,
                  path: `/api/chats/${ids[(start + offset) % conversations]}/events`,
                  headers,
                  agent: false,
                },
                (response) => {
                  if (response.statusCode !== 200) reject(new Error(`stream: HTTP ${response.statusCode}`));
                  response.once('data', () => resolve());
                  response.on('error', () => {});
                },
              );
              request.on('error', reject);
              requests.push(request);
            }),
        ),
      );
    }
    const openSeconds = (performance.now() - openStarted) / 1_000;
    const before = await cpuSeconds(child.pid ?? 0);
    const idleStarted = performance.now();
    await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1_000));
    const cpuPercent =
      (((await cpuSeconds(child.pid ?? 0)) - before) / ((performance.now() - idleStarted) / 1_000)) * 100;
    const health = await timeGets(`${base}/health`, token, 20);
    const result = { streams, conversations, openSeconds, idleSeconds, serverCpuPercent: cpuPercent, health };
    if (values.json) console.log(JSON.stringify(result, null, 2));
    else {
      console.log(
        `${streams} idle chat event streams over ${conversations} conversations (opened in ${openSeconds.toFixed(1)} s):`,
      );
      console.log(`  server CPU while idle: ${cpuPercent.toFixed(1)} % of one core over ${idleSeconds} s`);
      console.log(`  GET /health p50 ${health.p50Ms.toFixed(1)} ms, p99 ${health.p99Ms.toFixed(1)} ms`);
    }
  } finally {
    for (const request of requests) request.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    await rm(directory, { recursive: true, force: true });
  }
}

/** The conversation list at `count` conversation notes written straight to disk: its first view and later ones. */
async function benchChats(count: number): Promise<void> {
  const directory = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-chats-'));
  try {
    await writeFile(path.join(directory, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath: path.join(directory, 'config.yaml') });
    const folder = path.join(config.paths.notes, 'chats');
    await mkdir(folder, { recursive: true });
    for (let index = 0; index < count; index += 1) {
      const id = `c${String(index).padStart(6, '0')}`;
      const updated = new Date(Date.UTC(2026, 0, 1) + index * 60_000).toISOString();
      // A transcript of a few messages, as a conversation has: the old list read and parsed all of it.
      const body = Array.from(
        { length: 6 },
        (_, message) => `### user · ${updated} · m${index}x${message}\n\nA message of a few words, ${message}.\n`,
      ).join('\n');
      await writeFile(
        path.join(folder, `${id}.md`),
        `---\nid: ${id}\ntitle: Conversation ${index}\nchannel: api\npeer: owner\nmode: followup\ncreated: ${updated}\nupdated: ${updated}\n---\n${body}`,
      );
    }
    const token = 'bench-token-0123456789abcdefghijklmnop';
    const app = createServer({ config, token });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const once = async (url: string) => {
        const started = performance.now();
        const response = await fetch(`${address}${url}`, { headers: { authorization: `Bearer ${token}` } });
        await response.arrayBuffer();
        if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
        return performance.now() - started;
      };
      const firstApiMs = await once('/api/chats');
      const api = await timeGets(`${address}/api/chats`, token, 20);
      const page = await timeGets(`${address}/chat`, token, 20);
      const result = { conversations: count, firstApiMs, api, page };
      if (values.json) console.log(JSON.stringify(result, null, 2));
      else {
        const ms = (value: number) => `${value.toFixed(1)} ms`;
        console.log(`${count} conversations:`);
        console.log(`  first GET /api/chats (builds the index where there is one) ${ms(firstApiMs)}`);
        console.log(`  GET /api/chats   p50 ${ms(api.p50Ms)}, p99 ${ms(api.p99Ms)}`);
        console.log(`  GET /chat        p50 ${ms(page.p50Ms)}, p99 ${ms(page.p99Ms)}`);
      }
    } finally {
      await app.close();
    }
  } finally {
    await rm(directory, { recursive: true, force: true });
  }
}

if (values.chats !== undefined) {
  await benchChats(Number(values.chats));
  process.exit(0);
}

if (values.streams !== undefined) {
  await benchStreams(Number(values.streams));
  process.exit(0);
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

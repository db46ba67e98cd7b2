// Chat latency through both processes: `assistant start` (server and worker as child processes) answers a
// conversation with a zero-latency fake OpenAI-compatible model that streams its reply. Each trial POSTs a message to
// /api/chats/:id/messages while following /api/chats/:id/events, and measures the time from sending the POST to the
// first `token` event of its turn, and to `turn_done`. Prints p50/p95/max (goal: first token p50 ≤ 50 ms).
// `npm run bench:chat [-- --trials 100 --json]`. It prints figures; it never fails for being slow.

import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { freePort } from '../tests/helpers/free-port.ts';
import { readServerSentEvents } from '../tests/helpers/sse.ts';

const { values } = parseArgs({
  options: { trials: { type: 'string', default: '100' }, json: { type: 'boolean', default: false } },
});
const trials = Number(values.trials);
const cliMain = fileURLToPath(new URL('../apps/cli/src/main.ts', import.meta.url));

const model = await FakeOpenAiServer.start({
  respond: () => ({ text: 'Nothing is urgent today, as far as I can see.' }),
});
const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-chat-'));
const port = await freePort();
const config = path.join(directory, 'config.yaml');
await writeFile(
  config,
  `data_dir: ./data\nllms:\n  default: {base_url: "${model.url}", model: fake-model}\nserver: {port: ${port}}\nworker: {shutdown_grace: 1s}\n`,
);
const child = spawn(process.execPath, [cliMain, 'start', '--config', config], { stdio: ['ignore', 'pipe', 'pipe'] });
let output = '';
child.stdout.on('data', (chunk: Buffer) => {
  output += chunk.toString();
});
child.stderr.on('data', (chunk: Buffer) => {
  output += chunk.toString();
});

const stopEvents = new AbortController();
try {
  const deadline = Date.now() + 60_000;
  while (!/\[worker\] .*worker ready/.test(output) || !/listening on/.test(output)) {
    if (Date.now() > deadline) throw new Error(`assistant start did not come up:\n${output}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const api = `http://127.0.0.1:${port}`;
  const authorization = `Bearer ${(await readFile(path.join(directory, 'data/api-token'), 'utf8')).trim()}`;
  const headers = { 'content-type': 'application/json', authorization };
  const created = (await (
    await fetch(`${api}/api/chats`, { method: 'POST', headers, body: JSON.stringify({ title: 'bench' }) })
  ).json()) as { id: string };
  const events = await fetch(`${api}/api/chats/${created.id}/events`, { headers, signal: stopEvents.signal });
  if (!events.ok) throw new Error(`events: HTTP ${events.status}`);
  let waiting: { message?: string; firstToken?: number; resolve: (done: number) => void } | undefined;
  const pendingTokens = new Map<string, number>();
  void readServerSentEvents(events, ({ type, data }) => {
    if (!waiting) return;
    const replyTo = (data.reply_to as string[] | undefined) ?? [];
    if (type === 'turn_started' && waiting.message && replyTo.includes(waiting.message)) {
      pendingTokens.set(String(data.turn), 0);
    }
    if (type === 'token' && waiting.firstToken === undefined && pendingTokens.has(String(data.turn))) {
      waiting.firstToken = performance.now();
    }
    if (type === 'turn_done' && waiting.message && replyTo.includes(waiting.message))
      waiting.resolve(performance.now());
  }).catch(() => {});
  const firstTokens: number[] = [];
  const replies: number[] = [];
  // One warm-up message: loads the handler and the model client in the worker.
  for (let trial = -1; trial < trials; trial += 1) {
    pendingTokens.clear();
    const started = performance.now();
    const done = new Promise<number>((resolve) => {
      waiting = { resolve };
    });
    const response = await fetch(`${api}/api/chats/${created.id}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ text: `what is urgent? (${trial})` }),
    });
    const body = (await response.json()) as { id?: string };
    if (response.status !== 202 || !body.id || !waiting) throw new Error(`trial ${trial}: HTTP ${response.status}`);
    waiting.message = body.id;
    const finished = await Promise.race([
      done,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`trial ${trial}: no reply in 30 s`)), 30_000),
      ),
    ]);
    if (trial < 0) continue;
    firstTokens.push((waiting.firstToken ?? finished) - started);
    replies.push(finished - started);
  }
  const at = (values: number[], fraction: number) =>
    values[Math.min(values.length - 1, Math.floor(values.length * fraction))] ?? 0;
  firstTokens.sort((left, right) => left - right);
  replies.sort((left, right) => left - right);
  const result = {
    trials,
    firstToken: { p50Ms: at(firstTokens, 0.5), p95Ms: at(firstTokens, 0.95), maxMs: firstTokens.at(-1) ?? 0 },
    reply: { p50Ms: at(replies, 0.5), p95Ms: at(replies, 0.95), maxMs: replies.at(-1) ?? 0 },
  };
  if (values.json) console.log(JSON.stringify(result, null, 2));
  else {
    console.log(`chat message → reply through server and worker, ${trials} messages, zero-latency model:`);
    const line = (name: string, figures: { p50Ms: number; p95Ms: number; maxMs: number }) =>
      `  ${name}: p50 ${figures.p50Ms.toFixed(1)} ms, p95 ${figures.p95Ms.toFixed(1)} ms, max ${figures.maxMs.toFixed(1)} ms`;
    console.log(`${line('first token', result.firstToken)} (goal: p50 ≤ 50 ms)`);
    console.log(line('whole reply', result.reply));
  }
} finally {
  stopEvents.abort();
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  await model.close();
  await rm(directory, { recursive: true, force: true });
}

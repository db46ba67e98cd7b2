// Sub-agents in a worker: how long from a spawn to the child's first model call (p50, p95), and what one running
// child costs the worker in memory. A worker runs in this process (runWorker) against a fake OpenAI-compatible
// server on loopback; personas are files, children are queue tasks, as in production.
// `npm run bench:agents [-- --spawns 40 --children 40 --json]`. It prints figures; it never fails for being slow.

import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { pino } from 'pino';
import { runWorker } from '../apps/worker/src/run-worker.ts';
import { loadTestRuntime } from '../apps/worker/src/testing/load-test-runtime.ts';

const { values } = parseArgs({
  options: {
    spawns: { type: 'string', default: '40' },
    children: { type: 'string', default: '40' },
    json: { type: 'boolean', default: false },
  },
});
const spawns = Number(values.spawns);
const children = Number(values.children);
// A persona's max_children is at most 50 (the parent is one persona here).
if (!(children >= 1 && children <= 49)) throw new Error('--children must be 1 to 49');

interface Message {
  role: string;
  content?: string | null;
}

let release = false;
const model = await FakeOpenAiServer.start({
  respond: (request) => {
    const messages = (request.body.messages ?? []) as Message[];
    const system = String(messages[0]?.content ?? '');
    const tools = messages.filter((message) => message.role === 'tool').length;
    if (system.includes('ROLE=parent')) {
      const count = Number(/spawn (\d+)/.exec(String(messages[1]?.content))?.[1] ?? 1);
      if (tools === 0) {
        return {
          toolCalls: Array.from({ length: count }, (_, index) => ({
            name: 'spawn_agent',
            arguments: { persona: 'child', task: `task ${index}` },
          })),
        };
      }
      if (tools === count) return { toolCalls: [{ name: 'wait_agents', arguments: { timeout_seconds: 600 } }] };
      return { text: 'done' };
    }
    // A child answers at once, or (for the memory figure) waits 4 s at a time, quiet while it is measured, until released.
    if (String(messages[1]?.content).includes('linger') && !release) {
      return { toolCalls: [{ name: 'wait', arguments: { ms: 4_000 } }] };
    }
    return { text: 'child answer' };
  },
});
const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-agents-'));
await mkdir(path.join(directory, 'personas'));
await writeFile(
  path.join(directory, 'config.yaml'),
  `data_dir: ./data
worker: {concurrency: ${children + 8}, poll_interval: 50ms, shutdown_grace: 1s}
agents: {max_live: ${children + 10}}
llms:
  default: {base_url: "${model.url}", model: fake-model, max_in_flight: 64, capabilities: {tools: true}}
queue:
  policies:
    overrides:
      system.agent: {timeout: 1h}
`,
);
await writeFile(
  path.join(directory, 'personas/parent.md'),
  `---\ntools: {allow: ["*"]}\ndelegable: ["*"]\nmax_children: ${children + 1}\n---\nYou delegate. ROLE=parent\n`,
);
await writeFile(
  path.join(directory, 'personas/child.md'),
  '---\ntools: {allow: ["*"]}\nbudget: {max_steps: 200}\n---\nYou work. ROLE=child\n',
);

const runtime = await loadTestRuntime(directory);
const stop = new AbortController();
const worker = runWorker({
  config: runtime.config,
  registry: runtime.registry,
  logger: pino({ level: process.env.BENCH_LOG ?? 'silent' }),
  signal: stop.signal,
});
const dataDir = runtime.config.paths.dataDir;
const control = runtime.config.paths.control;

async function enqueueParent(prompt: string): Promise<string> {
  const outcome = await runtime.queue.enqueue({
    type: 'system.agent',
    source: 'cli',
    payload: { prompt, persona: 'parent' },
  });
  if (outcome.status !== 'enqueued') throw new Error(outcome.status);
  return outcome.task.id;
}

async function until(check: () => Promise<boolean>, what: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function records(parent: string): Promise<{ created_at: string; task_id?: string; id: string }[]> {
  const folder = path.join(dataDir, 'agents', parent, 'children');
  const names = (await readdir(folder).catch(() => [] as string[])).filter((name) => name.endsWith('.json'));
  return Promise.all(names.map(async (name) => JSON.parse(await readFile(path.join(folder, name), 'utf8'))));
}

async function firstStepAt(taskId: string): Promise<number | undefined> {
  const text = await readFile(path.join(control, taskId, 'events.jsonl'), 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    if (!line.includes('"step-started"')) continue;
    return Date.parse(JSON.parse(line).at);
  }
  return undefined;
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

try {
  // 1. Spawn to first step: parents spawning one child each, one after another, so each spawn meets an idle worker.
  const latencies: number[] = [];
  for (let index = 0; index < spawns; index += 1) {
    const parent = await enqueueParent('spawn 1');
    await until(async () => (await runtime.queue.get(parent))?.state === 'done', `parent ${index}`);
    for (const record of await records(parent)) {
      const started = await firstStepAt(record.task_id ?? '');
      if (started !== undefined) latencies.push(started - Date.parse(record.created_at));
    }
  }
  latencies.sort((a, b) => a - b);

  // 2. Memory: one parent with `children` children running at once (each in its loop, parked in short waits).
  const gc = (globalThis as { gc?: () => void }).gc;
  const settle = async () => {
    for (let round = 0; round < 3; round += 1) {
      gc?.();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return process.memoryUsage();
  };
  // Memory: the worker with `children` children running at once (each quiet in a 4 s wait while it is measured),
  // then the same worker once they have all finished: the difference is what the running children held. Everything
  // else (the worker, the request log of the fake model) is on both sides.
  const idle = await settle();
  const parent = await enqueueParent(`spawn ${children} linger`);
  await until(async () => {
    const all = await records(parent);
    if (all.length < children) return false;
    const started = await Promise.all(all.map((record) => firstStepAt(record.task_id ?? '')));
    return started.every((at) => at !== undefined);
  }, 'every child running');
  const during = await settle();
  release = true;
  await until(async () => (await runtime.queue.get(parent))?.state === 'done', 'the memory parent');
  const before = await settle();

  const figures = {
    spawns: latencies.length,
    spawn_to_first_step_ms: {
      p50: quantile(latencies, 0.5),
      p95: quantile(latencies, 0.95),
      max: latencies.at(-1) ?? 0,
    },
    children_running: children,
    per_child_heap_kib: Math.round((during.heapUsed - before.heapUsed) / children / 1024),
    per_child_rss_kib: Math.round((during.rss - before.rss) / children / 1024),
    // What the worker's heap kept after the children finished, against before they started: a leak would show here.
    heap_kept_after_kib: Math.round((before.heapUsed - idle.heapUsed) / 1024),
    gc: gc !== undefined,
  };
  if (values.json) console.log(JSON.stringify(figures));
  else {
    console.log(
      `spawn → first model call, ${figures.spawns} spawns: p50 ${figures.spawn_to_first_step_ms.p50} ms, p95 ${figures.spawn_to_first_step_ms.p95} ms, max ${figures.spawn_to_first_step_ms.max} ms`,
    );
    console.log(
      `memory per running child (${children} at once, in the worker): heap ${figures.per_child_heap_kib} KiB, rss ${figures.per_child_rss_kib} KiB; heap kept once they finished: ${figures.heap_kept_after_kib} KiB${gc ? '' : ' (no --expose-gc: rough)'}`,
    );
  }
} finally {
  stop.abort();
  await worker;
  await model.close();
  await rm(directory, { recursive: true, force: true });
}

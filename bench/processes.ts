// Resident memory of the processes `assistant start` runs:
// `npm run bench:processes [-- --tasks 1000 --dir /path --providers one|all]`.
// A temp data dir and config on a free port; the resident set (VmRSS) of the supervisor, the server and the worker
// once started and settled, at the peak while `tasks` system.echo tasks go through POST /api/tasks and the worker,
// and settled again after them. It prints figures; it fails only when the assistant does not start or finish.
// `--providers all` configures an openai-compatible, an OpenAI, an Anthropic and a Gemini profile (pointing at a
// closed loopback port: the tasks call no model), `one` only the openai-compatible one, `none` (the default) no profile:
// what configuring providers costs the real worker at idle.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { freePort } from '../tests/helpers/free-port.ts';
import { cliMain, machineLine, mib, pollUntil, residentBytes, residentParts, runNode } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    dir: { type: 'string', default: os.tmpdir() },
    json: { type: 'boolean', default: false },
    providers: { type: 'string', default: 'none' },
  },
});
if (!['none', 'one', 'all'].includes(values.providers))
  throw new Error(`--providers expects none, one or all, got \`${values.providers}\``);
const taskCount = Number(values.tasks);
if (!Number.isInteger(taskCount) || taskCount < 1)
  throw new Error(`--tasks expects a positive integer, got \`${values.tasks}\``);
const log = (line: string) => {
  if (!values.json) process.stdout.write(`${line}\n`);
};

type Pids = Record<'supervisor' | 'server' | 'worker', number>;
type Sizes = Record<keyof Pids, number | undefined>;

const sizesOf = (pids: Pids): Sizes => ({
  supervisor: residentBytes(pids.supervisor),
  server: residentBytes(pids.server),
  worker: residentBytes(pids.worker),
});

/**
 * Samples every 250 ms until no process's resident set moved by more than 1 MB over the last 3 s (garbage
 * collection and lazy compilation have settled), at most `timeoutMs`; returns the last sample and whether it settled.
 */
async function settled(pids: Pids, timeoutMs: number): Promise<{ sizes: Sizes; settled: boolean }> {
  const window: Sizes[] = [];
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    window.push(sizesOf(pids));
    if (window.length > 12) window.shift();
    const last = window[window.length - 1] as Sizes;
    const steady =
      window.length === 12 &&
      (Object.keys(pids) as (keyof Pids)[]).every((name) => {
        const values = window.map((sizes) => sizes[name] ?? 0);
        return Math.max(...values) - Math.min(...values) <= 2 ** 20;
      });
    if (steady) return { sizes: last, settled: true };
    if (performance.now() > deadline) return { sizes: last, settled: false };
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const directory = await mkdtemp(path.join(path.resolve(values.dir), 'assistant-bench-processes-'));
const port = await freePort();
const configFile = path.join(directory, 'config.yaml');
// Port 1 on loopback is closed: a profile there is configured, never answered (start's probe says so and goes on).
const closed = 'http://127.0.0.1:1';
const profiles =
  values.providers === 'none'
    ? ''
    : [
        'llms:',
        `  default: {base_url: "${closed}/v1", model: llama3.1:8b}`,
        ...(values.providers === 'all'
          ? [
              `  gpt: {provider: openai, base_url: "${closed}/v1", model: gpt-4.1-mini, api_key: !secret openai_key}`,
              `  claude: {provider: anthropic, base_url: "${closed}/v1", model: claude-sonnet-4-5, api_key: !secret anthropic_key}`,
              `  gemini: {provider: google, base_url: "${closed}/v1beta", model: gemini-2.5-flash, api_key: !secret gemini_key}`,
            ]
          : []),
        '',
      ].join('\n');
if (values.providers === 'all') {
  await writeFile(
    path.join(directory, 'secrets.yaml'),
    'openai_key: sk-bench-0000000000\nanthropic_key: sk-ant-bench-0000000000\ngemini_key: AIza-bench-0000000000\n',
    { mode: 0o600 },
  );
}
await writeFile(
  configFile,
  `data_dir: ./data\nserver:\n  host: 127.0.0.1\n  port: ${port}\nworker:\n  shutdown_grace: 5s\n${profiles}`,
);
log(`processes bench: ${machineLine(directory)}; LLM profiles: ${values.providers}`);
const start = runNode([cliMain, 'start', '--config', configFile]);
try {
  const pids: Pids = {
    supervisor: start.child.pid ?? 0,
    server: Number((await start.waitForOutput(/^\[assistant\] server started \(pid (\d+)\)$/m, 30_000))[1]),
    worker: Number((await start.waitForOutput(/^\[assistant\] worker started \(pid (\d+)\)$/m, 30_000))[1]),
  };
  await start.waitForOutput(/^\[server\] .*listening on http:\/\/127\.0\.0\.1:\d+/m, 30_000);
  await start.waitForOutput(/^\[worker\] .*worker ready/m, 30_000);
  const idle = await settled(pids, 30_000);
  const idleParts = Object.fromEntries(
    (Object.keys(pids) as (keyof Pids)[]).map((name) => [name, residentParts(pids[name])]),
  ) as Record<keyof Pids, ReturnType<typeof residentParts>>;

  const token = (await readFile(path.join(directory, 'data', 'api-token'), 'utf8')).trim();
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const peak: Sizes = { ...idle.sizes };
  const sampler = setInterval(() => {
    const now = sizesOf(pids);
    for (const name of Object.keys(peak) as (keyof Pids)[]) peak[name] = Math.max(peak[name] ?? 0, now[name] ?? 0);
  }, 100);
  const loadStarted = performance.now();
  try {
    const inFlight = 8;
    for (let index = 0; index < taskCount; index += inFlight) {
      await Promise.all(
        Array.from({ length: Math.min(inFlight, taskCount - index) }, async (_, offset) => {
          const response = await fetch(`http://127.0.0.1:${port}/api/tasks`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ type: 'system.echo', payload: { i: index + offset } }),
          });
          if (response.status !== 201) throw new Error(`POST /api/tasks: ${response.status} ${await response.text()}`);
        }),
      );
    }
    await pollUntil(`all ${taskCount} tasks done (GET /health)`, 300_000, 250, async () => {
      const health = (await (await fetch(`http://127.0.0.1:${port}/health`)).json()) as {
        queue: { pending: number; active: number; done: number; failed: number };
      };
      if (health.queue.failed > 0) throw new Error(`${health.queue.failed} tasks failed`);
      return health.queue.done >= taskCount && health.queue.pending + health.queue.active === 0 ? true : undefined;
    });
  } finally {
    clearInterval(sampler);
  }
  const loadSeconds = (performance.now() - loadStarted) / 1_000;
  const after = await settled(pids, 30_000);

  log(`supervisor pid ${pids.supervisor}, server pid ${pids.server}, worker pid ${pids.worker}`);
  log('');
  log(`                 idle (settled)   peak during ${taskCount} tasks   after them (settled)   goal (idle)`);
  const goals: Record<keyof Pids, string> = { supervisor: '≤ 60 MB', server: '≤ 100 MB', worker: '≤ 120 MB' };
  for (const name of Object.keys(pids) as (keyof Pids)[]) {
    log(
      `${name.padEnd(12)} ${mib(idle.sizes[name]).padStart(18)} ${mib(peak[name]).padStart(26)} ${mib(after.sizes[name]).padStart(22)}   ${goals[name]}`,
    );
  }
  const total = (sizes: Sizes) => Object.values(sizes).reduce<number>((sum, value) => sum + (value ?? 0), 0);
  log(
    `${'total'.padEnd(12)} ${mib(total(idle.sizes)).padStart(18)} ${''.padStart(26)} ${mib(total(after.sizes)).padStart(22)}`,
  );
  log('');
  log(`idle, by kind       anonymous   file-backed (Node's binary: shared)   proportional share (PSS)`);
  for (const name of Object.keys(pids) as (keyof Pids)[]) {
    const parts = idleParts[name];
    log(
      `${name.padEnd(12)} ${mib(parts?.anon).padStart(16)} ${mib(parts?.file).padStart(38)} ${mib(parts?.pss).padStart(26)}`,
    );
  }
  log(`${taskCount} tasks through POST /api/tasks and the worker in ${loadSeconds.toFixed(1)} s`);
  if (!idle.settled || !after.settled) log('note: a resident set was still moving by more than 1 MB after 30 s');
  if (values.json) {
    process.stdout.write(
      `${JSON.stringify({ machine: machineLine(directory), taskCount, idle, idleParts, peak, after, loadSeconds }, null, 2)}\n`,
    );
  }
} finally {
  if (start.child.exitCode === null && start.child.signalCode === null) start.child.kill('SIGTERM');
  const exit = await Promise.race([
    start.exited,
    new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 20_000).unref()),
  ]);
  if (exit === undefined) {
    start.child.kill('SIGKILL');
    process.stderr.write('assistant start did not stop within 20 s of SIGTERM; killed it\n');
  }
  await rm(directory, { recursive: true, force: true });
}

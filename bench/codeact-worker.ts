// The real worker's resident memory while it runs code cells (issue 36): `assistant work` in a temporary data
// directory, a fake OpenAI-compatible model whose first reply to each task is one run_code cell over the notes tools
// (search, then read each hit) and whose second is the answer, and a `code_mode: discovery` persona. It samples the
// worker's VmRSS (/proc/<pid>/status; the sandbox's worker threads are in the same process) idle after start, after
// the first task's cell, and after `--cells` tasks (default 100), with the peak while they ran. It prints figures;
// it exits non-zero only when something broke (a task failed, or a cell did not read the notes it should have).
// `--mode json` is the control: the same tasks doing the same note calls as JSON tool calls, no sandbox, so the
// difference is what the sandbox costs. `npm run bench:codeact-worker [-- --cells 100 --mode code|json --json]`.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { cliMain, machineLine, mib, pollUntil, residentBytes, runNode } from './bench-processes.ts';

const { values } = parseArgs({
  options: {
    cells: { type: 'string', default: '100' },
    mode: { type: 'string', default: 'code' },
    json: { type: 'boolean', default: false },
  },
});
const mode = values.mode;
if (mode !== 'code' && mode !== 'json') throw new Error(`--mode is code or json, got \`${mode}\``);
const cellCount = Number(values.cells);
if (!Number.isInteger(cellCount) || cellCount < 2)
  throw new Error(`--cells expects a whole number of at least 2, got \`${values.cells}\``);

/**
 * Each task's cell: a search and a read per person it finds, about what a small owner task does. The search also
 * finds earlier tasks' transcripts (they hold this code); reading only `people/` keeps every task's work the same.
 */
const cell = `const found = await tools.notes.search({ query: 'customer' });
const people = [];
for (const hit of found.filter((hit) => hit.path.startsWith('people/'))) {
  const note = await tools.notes.read({ path: hit.path });
  people.push(note.data.title + ': ' + note.body.split('\\n')[0]);
}
return people.sort();`;

type Message = { role: string; content: string | null };
const respondWithCode = (request: FakeChatRequest): FakeReply => {
  const messages = request.body.messages as Message[];
  const result = messages.find((message) => message.role === 'tool');
  if (result !== undefined) return { text: `cell answered: ${result.content}` };
  return { toolCalls: [{ name: 'run_code', arguments: { code: cell } }] };
};
/** The control (`--mode json`): the same work as JSON tool calls, a search then the reads in one reply. */
const respondWithJson = (request: FakeChatRequest): FakeReply => {
  const results = (request.body.messages as Message[]).filter((message) => message.role === 'tool');
  if (results.length === 0) return { toolCalls: [{ name: 'search_notes', arguments: { query: 'customer' } }] };
  if (results.length > 1) return { text: `reads answered: ${results.map((result) => result.content).join('\n')}` };
  // The search's result, inside the fence the loop put around it.
  const found = JSON.parse((results[0]?.content ?? '').split('\n').slice(1, -1).join('\n')) as { path: string }[];
  const people = found.filter((hit) => hit.path.startsWith('people/'));
  return { toolCalls: people.map((hit) => ({ name: 'read_note', arguments: { path: hit.path } })) };
};

const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-bench-codeact-worker-'));
const model = await FakeOpenAiServer.start({ respond: mode === 'code' ? respondWithCode : respondWithJson });
let worker: ReturnType<typeof runNode> | undefined;
try {
  const notes = new FileNoteStore({ root: path.join(directory, 'data/notes') });
  for (const [name, title] of [
    ['ines-berg', 'Ines Berg'],
    ['tom-hale', 'Tom Hale'],
    ['priya-shah', 'Priya Shah'],
    ['marco-testa', 'Marco Testa'],
    ['jonas-quast', 'Jonas Quast'],
  ] as const) {
    await notes.create(`people/${name}.md`, { data: { title }, body: `customer since 2025\nplan: team` });
  }
  await mkdir(path.join(directory, 'personas'));
  await writeFile(
    path.join(directory, 'personas/coder.md'),
    mode === 'code'
      ? '---\ncode_mode: discovery\ntools: {allow: [run_code, search_tools, search_notes, read_note]}\n---\nYou write code.\n'
      : '---\ntools: {allow: [search_notes, read_note]}\n---\nYou read notes.\n',
  );
  await writeFile(
    path.join(directory, 'config.yaml'),
    `data_dir: ./data
memory: {consolidate: []}
llms:
  default: {base_url: "${model.url}", model: fake-model, capabilities: {tools: true}}
worker: {concurrency: 1, shutdown_grace: 1s, poll_interval: 100ms}
`,
  );
  const queue = await openFileTaskQueue({ directory: path.join(directory, 'data', 'queue') });
  const enqueue = (count: number) =>
    Promise.all(
      Array.from({ length: count }, (_, index) =>
        queue.enqueue({
          type: 'system.agent',
          payload: { prompt: `List the customers (${index})`, persona: 'coder' },
          source: 'cli',
        }),
      ),
    );
  const doneCount = async (expected: number) => {
    const stats = await queue.stats();
    if (stats.failed > 0)
      throw new Error(`${stats.failed} tasks failed; worker output:\n${worker?.output().slice(-4000)}`);
    return stats.done >= expected ? stats.done : undefined;
  };

  worker = runNode([cliMain, 'work'], { cwd: directory });
  const pid = worker.child.pid ?? 0;
  await worker.waitForOutput(/worker ready/, 120_000);
  // Idle: give the start-up's work (plugin loading, the first maintenance pass) a moment to settle.
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  const idle = residentBytes(pid);

  await enqueue(1);
  await pollUntil('the first cell', 120_000, 50, () => doneCount(1));
  const afterFirst = residentBytes(pid);

  let peak = afterFirst ?? 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, residentBytes(pid) ?? 0);
  }, 50);
  const started = performance.now();
  await enqueue(cellCount - 1);
  try {
    await pollUntil(`${cellCount} cells`, 600_000, 100, () => doneCount(cellCount));
  } finally {
    clearInterval(sampler);
  }
  const elapsedMs = performance.now() - started;
  const afterAll = residentBytes(pid);
  peak = Math.max(peak, afterAll ?? 0);

  // Every task's cell ran and read the five notes (the answer carries what it returned).
  const doneDirectory = path.join(directory, 'data/queue/done');
  const doneFiles = await readdir(doneDirectory);
  const sample = await readFile(path.join(doneDirectory, doneFiles[doneFiles.length - 1] ?? ''), 'utf8');
  if (!/answered:[\s\S]*Ines Berg[\s\S]*Tom Hale/.test(sample)) {
    throw new Error(`a task's answer does not show its cell's result:\n${sample.slice(0, 2000)}`);
  }
  const modelCalls = model.requests.length;
  const callsPerTask = mode === 'code' ? 2 : 3;
  if (modelCalls !== cellCount * callsPerTask) {
    throw new Error(`expected ${cellCount * callsPerTask} model calls, got ${modelCalls}`);
  }

  const figures = {
    machine: machineLine(directory),
    mode,
    tasks: cellCount,
    idleBytes: idle,
    afterFirstBytes: afterFirst,
    afterAllBytes: afterAll,
    peakBytes: peak,
    secondsForRest: Math.round(elapsedMs / 100) / 10,
  };
  if (values.json) console.log(JSON.stringify(figures, null, 2));
  else {
    console.log(`codeact worker: ${figures.machine}`);
    console.log(
      mode === 'code'
        ? `${cellCount} system.agent tasks of a code_mode: discovery persona, one run_code cell each (6 note calls)`
        : `${cellCount} system.agent tasks, the same 6 note calls as JSON tool calls (the control: no sandbox)`,
    );
    console.log(
      `worker RSS idle ${mib(idle)}, after the first task ${mib(afterFirst)}, after ${cellCount} tasks ${mib(afterAll)}, peak ${mib(peak)}`,
    );
    console.log(`the ${cellCount - 1} tasks after the first took ${figures.secondsForRest} s`);
  }
} finally {
  worker?.child.kill('SIGTERM');
  await worker?.exited;
  await model.close();
  await rm(directory, { recursive: true, force: true });
}

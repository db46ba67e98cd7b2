// Crash safety of sub-agents: star-topology workflow runs (a supervisor and three workers, each its own queue task)
// while the worker process is SIGKILLed at random moments, run after run; every other batch is started through the
// REST API of a server that is SIGKILLed too while the runs come in. No child result is lost or duplicated, every run
// the server acknowledged finishes, and every blackboard entry is there once. The seed is printed on failure:
// AGENTS_CRASH_SEED=<seed> replays the same kill moments.
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { readBlackboard } from '@assistant/agents';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { seededRandom } from './helpers/seeded-random.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const batches = Number(process.env.AGENTS_CRASH_BATCHES ?? 5);
const runsPerBatch = 40;
const workersPerRun = 3;

interface Message {
  role: string;
  content?: string | null;
}

/** The supervisor spawns three workers, waits, and answers how many worker answers it was given, and which. */
function answer(messages: Message[]): Record<string, unknown> {
  const system = String(messages[0]?.content ?? '');
  const tools = messages.filter((message) => message.role === 'tool').map((message) => String(message.content));
  if (system.includes('ROLE=worker')) {
    const task = String(messages.find((message) => message.role === 'user')?.content ?? '');
    const part = /part (\d+) of (run \d+)/.exec(task);
    return { text: `answer to part ${part?.[1]} of ${part?.[2]}` };
  }
  const input = String(messages.find((message) => message.role === 'user')?.content ?? '');
  const run = /run \d+/.exec(input)?.[0] ?? 'run ?';
  if (tools.length === 0) {
    return {
      toolCalls: Array.from({ length: workersPerRun }, (_, index) => ({
        name: 'spawn_agent',
        arguments: { persona: 'worker', task: `part ${index + 1} of ${run}` },
      })),
    };
  }
  const given = tools.join('\n').match(/answer to part \d+ of run \d+/g) ?? [];
  if (given.length < workersPerRun) return { toolCalls: [{ name: 'wait_agents', arguments: { timeout_seconds: 60 } }] };
  return { text: `summary of ${run}: ${given.length} answers: ${[...given].sort().join('; ')}` };
}

describe('sub-agents under SIGKILL', () => {
  it(`loses and duplicates no child result across ${batches * runsPerBatch} star runs`, async () => {
    const seed = Number(process.env.AGENTS_CRASH_SEED ?? Date.now() % 1_000_000);
    const next = seededRandom(seed);
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({
      respond: (request) => answer((request.body.messages ?? []) as Message[]) as never,
    });
    await mkdir(path.join(dir.path, 'personas'));
    await mkdir(path.join(dir.path, 'agents'));
    const port = await freePort();
    await writeFile(
      path.join(dir.path, 'config.yaml'),
      `data_dir: ./data
server: {port: ${port}}
worker: {concurrency: 16, poll_interval: 50ms, shutdown_grace: 200ms}
agents: {max_live: 200} # 40 runs of a supervisor and 3 workers may all be live at once: 160 children, none refused
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model, max_in_flight: 16, capabilities: {tools: true}}
`,
    );
    await writeFile(
      path.join(dir.path, 'personas/supervisor.md'),
      '---\ntools: {allow: [spawn_agent, wait_agents, list_agents, reply_to_caller]}\ndelegable: [read_note]\n---\nYou supervise. ROLE=supervisor\n',
    );
    await writeFile(
      path.join(dir.path, 'personas/worker.md'),
      '---\ntools: {allow: [read_note]}\n---\nYou work. ROLE=worker\n',
    );
    await writeFile(
      path.join(dir.path, 'agents/star.yaml'),
      'topology: star\nsupervisor: supervisor\nworkers: [worker]\ntask: "{{input}}"\n',
    );
    const queue = await openFileTaskQueue({ directory: path.join(dir.path, 'data/queue') });
    const config = path.join(dir.path, 'config.yaml');
    const startWorker = (): NodeProcess => startNode({ args: [cliMain, 'work', '--config', config] });
    const runs: { id: string; run: string; index: number }[] = [];
    let kills = 0;
    let serverKills = 0;
    try {
      for (let batch = 0; batch < batches; batch += 1) {
        const batchRuns: typeof runs = [];
        if (batch % 2 === 1) {
          // Through the server, killed at a random moment while the runs come in: a run it answered 202 for must
          // finish; one it never answered may or may not have been enqueued, and is not counted.
          const server = startNode({ args: [cliMain, 'serve', '--config', config], cwd: dir.path });
          await server.waitForOutput(/listening on/, { timeoutMs: 30_000 });
          const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
          const killAfterMs = next() * 400;
          const killer = setTimeout(() => server.child.kill('SIGKILL'), killAfterMs);
          for (let slot = 0; slot < runsPerBatch; slot += 1) {
            const index = batch * runsPerBatch + slot;
            try {
              const response = await api(`http://127.0.0.1:${port}/api/workflows/star/runs`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ input: `run ${index}` }),
              });
              if (response.status !== 202) throw new Error(`POST runs: ${response.status} ${await response.text()}`);
              const body = (await response.json()) as { run: string; task: string };
              batchRuns.push({ id: body.task, run: body.run, index });
            } catch (error) {
              // Refused or cut off by the kill: not acknowledged. Any other answer is a failure of the test.
              if (error instanceof Error && error.message.startsWith('POST runs')) throw error;
            }
          }
          clearTimeout(killer);
          server.child.kill('SIGKILL');
          await server.exited;
          serverKills += 1;
        }
        // The rest of the batch (all of it, on even batches) straight into the queue.
        for (let slot = batchRuns.length; slot < runsPerBatch; slot += 1) {
          const index = batch * runsPerBatch + slot + runsPerBatch * batches;
          const run = `run-20261128-r${String(index).padStart(4, '0')}`;
          const outcome = await queue.enqueue({
            type: 'system.workflow',
            source: 'cli',
            payload: { workflow: 'star', input: `run ${index}`, run },
          });
          if (outcome.status !== 'enqueued') throw new Error(`enqueue: ${outcome.status}`);
          batchRuns.push({ id: outcome.task.id, run, index });
        }
        runs.push(...batchRuns);
        // One kill per batch, at a random moment of its work: no task of the batch sees two worker deaths (which
        // the queue would rightly take for a poison task), and every moment of a run's life gets hit somewhere.
        let worker = startWorker();
        // From the moment the batch's work has begun (a run is active), so the kill lands in the middle of it.
        await waitUntil(async () => (await queue.stats()).active > 0, {
          what: 'the batch to start',
          timeoutMs: 60_000,
        });
        await new Promise((resolve) => setTimeout(resolve, next() * 1_500));
        worker.child.kill('SIGKILL');
        await worker.exited;
        kills += 1;
        worker = startWorker();
        try {
          await waitUntil(
            async () => {
              for (const each of batchRuns) if ((await queue.get(each.id))?.state !== 'done') return false;
              return true;
            },
            { timeoutMs: 90_000, what: `batch ${batch} to finish (seed ${seed})` },
          );
        } finally {
          worker.child.kill('SIGTERM');
          await worker.exited;
        }
      }

      const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
      const agents = path.join(dir.path, 'data/agents');
      const jsonIn = async (folder: string) =>
        (await readdir(folder).catch(() => [] as string[])).filter((name) => name.endsWith('.json')).sort();
      for (const each of runs) {
        const record = await queue.get(each.id);
        const result = record?.task?.result as { status: string; output: string } | undefined;
        expect(result?.status, `run ${each.index} (seed ${seed})`).toBe('done');
        // The supervisor was given each of its three workers' answers exactly once.
        const expected = Array.from(
          { length: workersPerRun },
          (_, part) => `answer to part ${part + 1} of run ${each.index}`,
        )
          .sort()
          .join('; ');
        expect(result?.output, `run ${each.index} (seed ${seed})`).toBe(
          `summary of run ${each.index}: 3 answers: ${expected}`,
        );

        // One supervisor, three workers: spawns were not repeated, and each result is in its parent's inbox once.
        const supervisors = await jsonIn(path.join(agents, each.id, 'children'));
        expect(supervisors, `run ${each.index}`).toHaveLength(1);
        const supervisorRecord = JSON.parse(
          await readFile(path.join(agents, each.id, 'children', supervisors[0] ?? ''), 'utf8'),
        );
        // The task that claimed the supervisor ran it (a crash at its spawn may have made a second, which left it).
        const claim = await readFile(path.join(agents, each.id, 'children', `${supervisorRecord.id}.claim`), 'utf8');
        const supervisorTask = claim.trim();
        const workers = await jsonIn(path.join(agents, supervisorTask, 'children'));
        expect(workers, `run ${each.index}`).toHaveLength(workersPerRun);
        expect(await jsonIn(path.join(agents, supervisorTask, 'inbox')), `run ${each.index}`).toEqual(workers);
        expect(await jsonIn(path.join(agents, each.id, 'inbox'))).toEqual(supervisors);

        // The blackboard holds every child's entry, each once.
        const entries = await readBlackboard({ notes, path: `agents/blackboards/${each.run}.md` });
        const ids = entries.map((entry) => entry.id);
        expect(new Set(ids).size, `run ${each.index}: ${ids.join(', ')}`).toBe(ids.length);
        for (const name of [...workers, ...supervisors]) expect(ids).toContain(name.replace(/\.json$/, ''));
      }
      expect(kills).toBe(batches);
      expect(serverKills).toBe(Math.floor(batches / 2));
    } catch (error) {
      throw new Error(`seed ${seed}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  }, 1_200_000);
});

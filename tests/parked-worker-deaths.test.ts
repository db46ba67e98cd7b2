// A task that waits (parked: for the owner's approval, for its children) gives its worker slot back, and its claim is
// marked parked in the queue. Worker deaths while it waits are not its doing: they spend no attempt and do not count
// toward poison, so the task survives any number of SIGKILLs of its worker and finishes once the wait is over
// (issue 34, decision 0062). Before, the second death failed it as poison.
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { decideApproval, listApprovals } from '@assistant/actions';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

interface Message {
  role: string;
  content?: string | null;
}

describe('a parked task under SIGKILL of its worker', () => {
  it('survives two worker deaths while it waits for approval, spending no attempt, then completes once approved', {
    timeout: 90_000,
  }, async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({
      respond: (request) => {
        const messages = (request.body.messages ?? []) as Message[];
        const tool = messages.find((message) => message.role === 'tool');
        return (
          tool
            ? { text: `Read it: ${String(tool.content).includes('Hello') ? 'hello' : 'nothing'}.` }
            : { toolCalls: [{ name: 'read_note', arguments: { path: 'inbox/a.md' } }] }
        ) as never;
      },
    });
    await writeFile(
      path.join(dir.path, 'config.yaml'),
      `data_dir: ./data
worker: {concurrency: 2, poll_interval: 50ms, shutdown_grace: 200ms}
tools: {approve: [read_note]}
memory: {consolidate: []}
llms:
  default: {base_url: "${model.url}", model: fake-model, capabilities: {tools: true}}
`,
    );
    const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
    await notes.create('inbox/a.md', { data: { title: 'A' }, body: 'Hello.\n' });
    const queue = await openFileTaskQueue({ directory: path.join(dir.path, 'data/queue') });
    const outcome = await queue.enqueue({
      type: 'system.agent',
      source: 'cli',
      payload: { prompt: 'Read inbox/a.md.' },
    });
    if (outcome.status !== 'enqueued') throw new Error(`enqueue: ${outcome.status}`);
    const id = outcome.task.id;
    const config = path.join(dir.path, 'config.yaml');
    const parkedDir = path.join(dir.path, 'data/queue/parked');
    const markers = async () =>
      (await readdir(parkedDir).catch(() => [] as string[])).filter((name) => name.includes(id));
    const startWorker = (): NodeProcess => startNode({ args: [cliMain, 'work', '--config', config] });

    let worker = startWorker();
    try {
      const seen = new Set<string>();
      for (const death of [1, 2]) {
        // Parked by this worker (a marker of its own claim, durable before the slot was given back): then killed.
        const marker = await waitUntil(async () => (await markers()).find((name) => !seen.has(name)), {
          what: `task ${id} to wait for approval, parked, before death ${death}`,
          timeoutMs: 30_000,
        });
        seen.add(marker);
        expect((await listApprovals(notes, { status: 'pending' })).length).toBeGreaterThan(0);
        worker.child.kill('SIGKILL');
        await worker.exited;
        worker = startWorker();
      }
      // The third worker recovers the task (two deaths while waiting: not poison) and it waits again.
      const again = await waitUntil(
        async () => {
          const record = await queue.get(id);
          if (record?.state === 'failed') return `failed: ${record.task?.error?.message}`;
          return (await markers()).some((name) => !seen.has(name)) ? 'parked' : undefined;
        },
        { what: `task ${id} to wait for approval again after two deaths`, timeoutMs: 30_000 },
      );
      expect(again).toBe('parked');
      const waiting = await queue.get(id);
      expect(waiting?.state).toBe('active');
      expect(waiting?.task?.history.map((attempt) => attempt.error.type)).toEqual([
        'WorkerDiedWhileWaiting',
        'WorkerDiedWhileWaiting',
      ]);

      // The requests of the loops that died with their worker were withdrawn: the owner decides the live one only.
      const pending = await listApprovals(notes, { status: 'pending' });
      expect(pending).toHaveLength(1);
      expect(pending[0]?.tool_call?.tool).toBe('read_note');
      await decideApproval({ notes, queue, id: pending[0]?.id ?? '', decision: 'approve', by: 'test' });
      await waitUntil(async () => (await queue.get(id))?.state === 'done', {
        what: `task ${id} to finish once approved`,
        timeoutMs: 30_000,
      });
      const done = await queue.get(id);
      // Three claims, one attempt: the two deaths while it waited spent none.
      expect(done?.task?.attempts).toBe(1);
      expect(done?.task?.history.map((attempt) => attempt.error.type)).toEqual([
        'WorkerDiedWhileWaiting',
        'WorkerDiedWhileWaiting',
      ]);
      expect(JSON.stringify(done?.task?.result)).toContain('Read it: hello.');
      expect(await markers()).toEqual([]);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('survives two worker deaths while a parent waits in wait_agents for a child that waits for approval', {
    timeout: 90_000,
  }, async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({
      respond: (request) => {
        const messages = (request.body.messages ?? []) as Message[];
        const system = String(messages[0]?.content ?? '');
        const tools = messages.filter((message) => message.role === 'tool').map((message) => String(message.content));
        if (system.includes('ROLE=worker')) {
          return (
            tools.length > 0
              ? { text: `child read ${tools.join(' ').includes('Hello') ? 'hello' : 'nothing'}` }
              : { toolCalls: [{ name: 'read_note', arguments: { path: 'inbox/a.md' } }] }
          ) as never;
        }
        if (tools.length === 0) {
          return { toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'worker', task: 'Read inbox/a.md.' } }] };
        }
        const answer = /child read \w+/.exec(tools.join('\n'))?.[0];
        return (
          answer === undefined
            ? { toolCalls: [{ name: 'wait_agents', arguments: { timeout_seconds: 60 } }] }
            : { text: `parent got: ${answer}` }
        ) as never;
      },
    });
    await mkdir(path.join(dir.path, 'personas'));
    await writeFile(
      path.join(dir.path, 'config.yaml'),
      `data_dir: ./data
worker: {concurrency: 2, poll_interval: 50ms, shutdown_grace: 200ms}
tools: {approve: [read_note]}
memory: {consolidate: []}
llms:
  default: {base_url: "${model.url}", model: fake-model, capabilities: {tools: true}}
`,
    );
    await writeFile(
      path.join(dir.path, 'personas/supervisor.md'),
      '---\ntools: {allow: [spawn_agent, wait_agents, list_agents, read_note]}\ndelegable: [read_note]\n---\nYou supervise. ROLE=supervisor\n',
    );
    await writeFile(
      path.join(dir.path, 'personas/worker.md'),
      '---\ntools: {allow: [read_note]}\n---\nYou work. ROLE=worker\n',
    );
    const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
    await notes.create('inbox/a.md', { data: { title: 'A' }, body: 'Hello.\n' });
    const queue = await openFileTaskQueue({ directory: path.join(dir.path, 'data/queue') });
    const outcome = await queue.enqueue({
      type: 'system.agent',
      source: 'cli',
      payload: { prompt: 'Have inbox/a.md read.', persona: 'supervisor' },
    });
    if (outcome.status !== 'enqueued') throw new Error(`enqueue: ${outcome.status}`);
    const parent = outcome.task.id;
    const config = path.join(dir.path, 'config.yaml');
    const parkedDir = path.join(dir.path, 'data/queue/parked');
    const startWorker = (): NodeProcess => startNode({ args: [cliMain, 'work', '--config', config] });
    const childOf = async () =>
      (await queue.list({ type: 'system.agent' })).map((entry) => entry.name?.id).find((id) => id !== parent);
    const seen = new Set<string>();
    // Both the parent (in wait_agents) and its child (waiting for approval) parked, each by the current worker.
    const bothParked = async () => {
      const child = await childOf();
      if (child === undefined) return undefined;
      const fresh = (await readdir(parkedDir).catch(() => [] as string[])).filter((name) => !seen.has(name));
      const parentMarker = fresh.find((name) => name.includes(parent));
      const childMarker = fresh.find((name) => name.includes(child));
      return parentMarker && childMarker ? { child, markers: [parentMarker, childMarker] } : undefined;
    };

    let worker = startWorker();
    try {
      let child = '';
      for (const death of [1, 2]) {
        const parked = await waitUntil(bothParked, {
          what: `the parent and its child to wait, parked, before death ${death}`,
          timeoutMs: 30_000,
        });
        child = parked.child;
        for (const marker of parked.markers) seen.add(marker);
        worker.child.kill('SIGKILL');
        await worker.exited;
        worker = startWorker();
      }
      const again = await waitUntil(
        async () => {
          for (const id of [parent, child]) {
            const record = await queue.get(id);
            if (record?.state === 'failed') return `${id} failed: ${record.task?.error?.message}`;
          }
          return (await bothParked()) ? 'parked' : undefined;
        },
        { what: 'the parent and its child to wait again after two deaths', timeoutMs: 30_000 },
      );
      expect(again).toBe('parked');

      const pending = await listApprovals(notes, { status: 'pending' });
      expect(pending).toHaveLength(1);
      await decideApproval({ notes, queue, id: pending[0]?.id ?? '', decision: 'approve', by: 'test' });
      await waitUntil(async () => (await queue.get(parent))?.state === 'done', {
        what: `the parent ${parent} to finish once its child's call is approved`,
        timeoutMs: 30_000,
      });
      for (const id of [parent, child]) {
        const record = await queue.get(id);
        expect(record?.state, id).toBe('done');
        expect(record?.task?.attempts, id).toBe(1);
        expect(
          record?.task?.history.map((attempt) => attempt.error.type),
          id,
        ).toEqual(['WorkerDiedWhileWaiting', 'WorkerDiedWhileWaiting']);
      }
      expect(JSON.stringify((await queue.get(parent))?.task?.result)).toContain('parent got: child read hello');
      expect(await readdir(parkedDir)).toEqual([]);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});

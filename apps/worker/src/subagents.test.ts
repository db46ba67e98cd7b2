// Sub-agents through a real worker: personas from files, children as queue tasks, results through the inbox, grants
// intersected at spawn, limits, forwarding, and steering that reaches the whole tree.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { personaFile, startTeamModel, type TeamMessage } from './testing/team-model.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-subagents-'));
  await mkdir(path.join(dir, 'personas'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function writeConfig(url: string, extra = ''): Promise<void> {
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data
worker: {concurrency: 2, poll_interval: 50ms, shutdown_grace: 500ms}
llms:
  default: {base_url: "${url}", model: fake-model, capabilities: {tools: true}}
${extra}`,
  );
}

async function persona(role: string, frontmatter: string): Promise<void> {
  await writeFile(path.join(dir, 'personas', `${role}.md`), personaFile(role, frontmatter));
}

function lastToolResult(messages: TeamMessage[]): string {
  return String([...messages].reverse().find((message) => message.role === 'tool')?.content ?? '');
}

async function startWorker() {
  const runtime = await loadTestRuntime(dir);
  const stop = new AbortController();
  const worker = runWorker({
    config: runtime.config,
    registry: runtime.registry,
    logger: pino({ level: 'silent' }),
    signal: stop.signal,
  });
  return { ...runtime, stop, worker };
}

async function enqueueRoot(queue: TaskQueue, payload: Record<string, string>): Promise<string> {
  const outcome = await queue.enqueue({ type: 'system.agent', source: 'cli', payload });
  if (outcome.status !== 'enqueued') throw new Error(outcome.status);
  return outcome.task.id;
}

async function finished(queue: TaskQueue, id: string) {
  await expect.poll(async () => (await queue.get(id))?.state, { timeout: 30_000 }).toBe('done');
  return (await queue.get(id))?.task?.result as Record<string, unknown>;
}

const managerGrants = `description: Splits work between researchers.
tools:
  allow: [spawn_agent, wait_agents, list_agents, message_agent, read_note, search_notes]
delegable: [read_note, search_notes]`;

describe('sub-agents', () => {
  it('a manager spawns two researchers as queue tasks and gets each result once', { timeout: 60_000 }, async () => {
    await using server = await startTeamModel({
      manager: (messages, { toolResults }) => {
        if (toolResults.length === 0) {
          return {
            toolCalls: [
              { name: 'spawn_agent', arguments: { persona: 'researcher', task: 'find A' } },
              { name: 'spawn_agent', arguments: { persona: 'researcher', task: 'find B' } },
            ],
          };
        }
        if (toolResults.length === 2) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
        if (toolResults.length === 3) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
        return { text: `summary: ${lastToolResult(messages.slice(0, -1)).length > 0 ? 'done' : 'none'}` };
      },
      researcher: (_messages, { task, toolResults }) =>
        toolResults.length === 0 && task.includes('find A')
          ? // Not granted to the manager, so not to its child: refused, visibly, with the reason.
            { toolCalls: [{ name: 'wait', arguments: { ms: 1 } }] }
          : {
              text: `answer for ${task.includes('find A') ? 'A' : 'B'}${toolResults[0] ? ` after ${toolResults[0]}` : ''}`,
            },
    });
    await writeConfig(server.url);
    await persona('manager', managerGrants);
    await persona('researcher', 'tools: {allow: ["*"]}');
    const { queue, config, stop, worker } = await startWorker();
    try {
      const root = await enqueueRoot(queue, { prompt: 'research A and B', persona: 'manager' });
      const result = await finished(queue, root);
      expect(result.status).toBe('completed');
      expect(result.persona).toBe('manager');

      // Two children, each its own done task, each result in the inbox.
      const agents = path.join(config.paths.dataDir, 'agents', root);
      const children = (await readdir(path.join(agents, 'children'))).filter((name) => name.endsWith('.json'));
      const inbox = (await readdir(path.join(agents, 'inbox'))).filter((name) => name.endsWith('.json'));
      expect(children).toHaveLength(2);
      expect(inbox.sort()).toEqual(children.sort());
      for (const name of children) {
        const record = JSON.parse(await readFile(path.join(agents, 'children', name), 'utf8'));
        expect(record.depth).toBe(1);
        expect(record.parent_persona).toBe('manager');
        expect((await queue.get(record.task_id))?.state).toBe('done');
        // child.grants ∩ parent.delegable: the researcher allows everything, the manager delegates two tools.
        expect(record.grants.layers.map((layer: { by: string }) => layer.by)).toEqual([
          'persona manager',
          'delegable of persona manager',
          'persona researcher',
        ]);
      }

      // The manager's model got both answers, each exactly once, in one wait_agents result.
      const managerRequests = server.requests.filter((request) =>
        JSON.stringify(request.body.messages).includes('ROLE=manager'),
      );
      const last = JSON.stringify(managerRequests.at(-1)?.body.messages);
      expect(last.split('answer for A').length - 1).toBe(1);
      expect(last.split('answer for B').length - 1).toBe(1);
      expect(last).toContain('you have no sub-agents whose results you have not had');

      // The denied call: a typed error the researcher's model read, naming why.
      const researcherA = server.requests.filter((request) => {
        const text = JSON.stringify(request.body.messages);
        return text.includes('ROLE=researcher') && text.includes('find A');
      });
      expect(JSON.stringify(researcherA.at(-1)?.body.messages)).toMatch(
        /PERSONA_TOOL_DENIED: persona manager does not grant wait/,
      );

      // Every child's events are in the root's stream too, tagged with the child and its lineage.
      const events = (await readFile(path.join(config.paths.control, root, 'events.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line));
      const fromChildren = events.filter((event) => event.subagent !== undefined);
      expect(new Set(fromChildren.map((event) => event.subagent)).size).toBe(2);
      expect(fromChildren[0].lineage).toEqual(['system.agent', 'researcher']);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('refuses spawns past max_children and past max_depth with AGENT_LIMIT the model reads', {
    timeout: 60_000,
  }, async () => {
    await using server = await startTeamModel({
      lead: (_messages, { toolResults }) => {
        if (toolResults.length === 0) {
          return {
            toolCalls: [
              { name: 'spawn_agent', arguments: { persona: 'deputy', task: 'one' } },
              { name: 'spawn_agent', arguments: { persona: 'deputy', task: 'two' } },
            ],
          };
        }
        if (toolResults.length === 2) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
        return { text: 'lead done' };
      },
      deputy: (_messages, { toolResults }) =>
        toolResults.length === 0
          ? { toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'deputy', task: 'deeper' } }] }
          : { text: `deputy saw: ${toolResults[0]}` },
    });
    await writeConfig(server.url);
    await persona('lead', 'tools: {allow: ["*"]}\ndelegable: ["*"]\nmax_children: 1\nmax_depth: 1');
    await persona('deputy', 'tools: {allow: ["*"]}\ndelegable: ["*"]');
    const { queue, stop, worker } = await startWorker();
    try {
      const root = await enqueueRoot(queue, { prompt: 'go', persona: 'lead' });
      await finished(queue, root);
      const leadRequests = server.requests.filter((request) =>
        JSON.stringify(request.body.messages).includes('ROLE=lead'),
      );
      const afterSpawns = JSON.stringify(leadRequests[1]?.body.messages);
      expect(afterSpawns).toMatch(/AGENT_LIMIT: 1 of your children are still running; at most 1 may run at once/);
      const deputyLast = JSON.stringify(
        server.requests.filter((request) => JSON.stringify(request.body.messages).includes('ROLE=deputy')).at(-1)?.body
          .messages,
      );
      expect(deputyLast).toMatch(/AGENT_LIMIT: spawning deputy would make an agent at depth 2; this tree allows 1/);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('caps live children across the installation (agents.max_live), and a child over its budget ends with a typed result its parent receives', {
    timeout: 60_000,
  }, async () => {
    await using server = await startTeamModel({
      chief: (messages, { toolResults }) => {
        if (toolResults.length === 0) {
          return {
            toolCalls: [
              { name: 'spawn_agent', arguments: { persona: 'thrifty', task: 'one' } },
              { name: 'spawn_agent', arguments: { persona: 'thrifty', task: 'two' } },
            ],
          };
        }
        if (toolResults.length === 2) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
        return { text: `chief saw: ${lastToolResult(messages)}` };
      },
      // Its budget is one model call: the tool call it asks for runs, then the loop stops at the limit.
      thrifty: () => ({ toolCalls: [{ name: 'search_notes', arguments: { query: 'x' } }] }),
    });
    await writeConfig(server.url, 'agents: {max_live: 1}\n');
    await persona('chief', 'tools: {allow: ["*"]}\ndelegable: ["*"]');
    await persona('thrifty', 'tools: {allow: ["*"]}\nbudget: {max_steps: 1}');
    const { queue, stop, worker } = await startWorker();
    try {
      const root = await enqueueRoot(queue, { prompt: 'go', persona: 'chief' });
      const result = await finished(queue, root);
      const chief = server.requests.filter((request) => JSON.stringify(request.body.messages).includes('ROLE=chief'));
      expect(JSON.stringify(chief[1]?.body.messages)).toMatch(
        /AGENT_LIMIT: 1 sub-agents are running in this installation; the cap \(agents.max_live\) is 1/,
      );
      expect(String(result.answer)).toMatch(/"status":"max_steps"/);
      expect(String(result.answer)).toMatch(/reached the limit of 1 model calls/);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('a supervisor forwards a worker’s answer verbatim to its caller', { timeout: 60_000 }, async () => {
    const verbatim = 'The exact words of the worker: 42 (with *markdown* and "quotes").';
    await using server = await startTeamModel({
      boss: (_messages, { toolResults }) => {
        if (toolResults.length === 0) {
          return { toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'supervisor', task: 'get it' } }] };
        }
        if (toolResults.length === 1) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
        return { text: 'boss done' };
      },
      supervisor: (messages, { toolResults }) => {
        if (toolResults.length === 0) {
          return { toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'worker', task: 'compute' } }] };
        }
        if (toolResults.length === 1) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
        const id = /(ag-[0-9a-f]{16})/.exec(JSON.stringify(messages))?.[1] ?? 'none';
        return { toolCalls: [{ name: 'reply_to_caller', arguments: { forward: id } }] };
      },
      worker: () => ({ text: verbatim }),
    });
    await writeConfig(server.url);
    await persona('boss', 'tools: {allow: ["*"]}\ndelegable: ["*"]');
    await persona('supervisor', 'tools: {allow: ["*"]}\ndelegable: [read_note]');
    await persona('worker', 'tools: {allow: [read_note]}');
    const { queue, config, stop, worker } = await startWorker();
    try {
      const root = await enqueueRoot(queue, { prompt: 'go', persona: 'boss' });
      await finished(queue, root);
      const inbox = path.join(config.paths.dataDir, 'agents', root, 'inbox');
      const [name] = await readdir(inbox);
      const result = JSON.parse(await readFile(path.join(inbox, name ?? ''), 'utf8'));
      expect(result.persona).toBe('supervisor');
      expect(result.status).toBe('completed');
      expect(result.answer).toBe(verbatim);
      expect(result.reason).toMatch(/forwarded verbatim from ag-/);
    } finally {
      stop.abort();
      await worker;
    }
  });

  // The parent's stop at shutdown is not handed on to its children (a child running on another worker would be stopped
  // for good); in one worker this test passes either way, since the child's own loop is shutting down too.
  it('a worker shutting down while a parent waits stops no child for good: both resume and finish', {
    timeout: 90_000,
  }, async () => {
    let hold = true;
    await using server = await startTeamModel({
      parent: (_messages, { toolResults }) =>
        toolResults.length === 0
          ? { toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'slow', task: 'take your time' } }] }
          : toolResults.some((text) => text.includes('slow done'))
            ? { text: 'parent done' }
            : { toolCalls: [{ name: 'wait_agents', arguments: {} }] },
      slow: (_messages, { toolResults }) =>
        hold || toolResults.length === 0
          ? { toolCalls: [{ name: 'wait', arguments: { ms: 100 } }] }
          : { text: 'slow done' },
    });
    await writeConfig(server.url);
    await persona('parent', 'tools: {allow: ["*"]}\ndelegable: ["*"]');
    await persona('slow', 'tools: {allow: ["*"]}\nbudget: {max_steps: 200}');
    const first = await startWorker();
    const root = await enqueueRoot(first.queue, { prompt: 'go', persona: 'parent' });
    await expect
      .poll(async () => findDeepest(first.config.paths.dataDir, root), { timeout: 30_000 })
      .toMatchObject({ depth: 1 });
    const record = (await findDeepest(first.config.paths.dataDir, root)) as Record<string, string>;
    await expect
      .poll(async () => stepsOf(first.config.paths.control, record.task_id as string), { timeout: 30_000 })
      .toBeGreaterThan(1);
    // A graceful stop of the worker (what a restart does): both tasks go back to pending/.
    first.stop.abort();
    await first.worker;
    const inbox = path.join(first.config.paths.dataDir, 'agents', root, 'inbox', `${record.id}.json`);
    await expect(readFile(inbox, 'utf8')).rejects.toThrow(/ENOENT/);
    expect((await first.queue.get(record.task_id as string))?.state).toBe('pending');

    hold = false;
    const second = await startWorker();
    try {
      const result = await finished(second.queue, root);
      expect(result.answer).toBe('parent done');
      expect(JSON.parse(await readFile(inbox, 'utf8')).status).toBe('completed');
    } finally {
      second.stop.abort();
      await second.worker;
    }
  });

  it('pausing and stopping the root reaches a child at depth 3', { timeout: 90_000 }, async () => {
    const chain: Record<string, string> = { a: 'b', b: 'c' };
    const scripts = Object.fromEntries(
      ['a', 'b', 'c'].map((role) => [
        role,
        (_messages: TeamMessage[], { toolResults }: { task: string; toolResults: string[] }) => {
          const next = chain[role];
          if (next !== undefined) {
            if (toolResults.length === 0) {
              return { toolCalls: [{ name: 'spawn_agent', arguments: { persona: next, task: `level ${next}` } }] };
            }
            if (toolResults.length === 1) return { toolCalls: [{ name: 'wait_agents', arguments: {} }] };
            return { text: `${role} done` };
          }
          // The deepest one works on and on, a step at a time, until it is stopped.
          return { toolCalls: [{ name: 'wait', arguments: { ms: 200 } }] };
        },
      ]),
    );
    await using server = await startTeamModel({
      root: (_messages, { toolResults }) =>
        toolResults.length === 0
          ? { toolCalls: [{ name: 'spawn_agent', arguments: { persona: 'a', task: 'level a' } }] }
          : toolResults.length === 1
            ? { toolCalls: [{ name: 'wait_agents', arguments: {} }] }
            : { text: 'root done' },
      ...scripts,
    });
    await writeConfig(server.url, 'agents: {max_live: 10}\n');
    for (const role of ['root', 'a', 'b']) await persona(role, 'tools: {allow: ["*"]}\ndelegable: ["*"]\nmax_depth: 3');
    await persona('c', 'tools: {allow: ["*"]}\nbudget: {max_steps: 200}');
    const { queue, config, stop, worker } = await startWorker();
    try {
      const root = await enqueueRoot(queue, { prompt: 'go deep', persona: 'root' });
      const depth3 = await expect
        .poll(async () => findDeepest(config.paths.dataDir, root), { timeout: 30_000 })
        .toMatchObject({ depth: 3 });
      void depth3;
      const deepest = await findDeepest(config.paths.dataDir, root);
      const deepTask = deepest?.task_id as string;
      // The deepest child is working (a step every 200 ms).
      await expect.poll(async () => stepsOf(config.paths.control, deepTask), { timeout: 30_000 }).toBeGreaterThan(1);

      const rootControl = new ControlFiles({ root: config.paths.control, taskId: root });
      await rootControl.request({ action: 'pause', source: 'test' });
      await expect
        .poll(async () => (await eventsOf(config.paths.control, deepTask)).some((event) => event.action === 'pause'), {
          timeout: 30_000,
        })
        .toBe(true);
      // Paused: the loop at depth 3 stops at its pause gate before its next step, at most the one in flight started.
      const pausedAt = await stepsOf(config.paths.control, deepTask);
      await expect
        .poll(
          async () =>
            (await eventsOf(config.paths.control, deepTask)).some((event) => event.type === 'waiting-while-paused'),
          { timeout: 30_000 },
        )
        .toBe(true);
      expect(await stepsOf(config.paths.control, deepTask)).toBeLessThanOrEqual(pausedAt + 1);

      await rootControl.request({ action: 'stop', reason: 'enough', source: 'test' });
      const result = await finished(queue, root);
      expect(result.status).toBe('stopped');
      // The stop went down the tree: the deepest child ended stopped, and its result reached its parent.
      await expect.poll(async () => (await queue.get(deepTask))?.state, { timeout: 30_000 }).toBe('done');
      const deepResult = JSON.parse(
        await readFile(
          path.join(config.paths.dataDir, 'agents', deepest?.parent_task as string, 'inbox', `${deepest?.id}.json`),
          'utf8',
        ),
      );
      expect(deepResult.status).toBe('stopped');
    } finally {
      stop.abort();
      await worker;
    }
  });
});

async function findDeepest(dataDir: string, root: string): Promise<Record<string, unknown> | undefined> {
  let deepest: Record<string, unknown> | undefined;
  const parents = await readdir(path.join(dataDir, 'agents')).catch(() => [] as string[]);
  for (const parent of parents) {
    const folder = path.join(dataDir, 'agents', parent, 'children');
    for (const name of await readdir(folder).catch(() => [] as string[])) {
      if (!name.endsWith('.json')) continue;
      const record = JSON.parse(await readFile(path.join(folder, name), 'utf8'));
      if (record.root_task !== root || record.task_id === undefined) continue;
      if (deepest === undefined || (record.depth as number) > (deepest.depth as number)) deepest = record;
    }
  }
  return deepest;
}

async function eventsOf(control: string, taskId: string): Promise<Record<string, unknown>[]> {
  const text = await readFile(path.join(control, taskId, 'events.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line));
}

async function stepsOf(control: string, taskId: string): Promise<number> {
  return (await eventsOf(control, taskId)).filter((event) => event.type === 'step-started').length;
}

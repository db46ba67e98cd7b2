import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createExecutor, type Executor } from '@assistant/codeact';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runTask } from '../bench/codeact-tasks/run-task.ts';
import { type OwnerTask, ownerTasks } from '../bench/codeact-tasks/tasks.ts';

// The owner-task bench (npm run bench:codeact-tasks) in small: the same outcome in every mode, fewer round trips
// with code. Round trips are structural (how many replies the protocol needs for the same plan), not timing.
let directory: string;
let executor: Executor;
beforeAll(async () => {
  executor = createExecutor({ timeoutMs: 10_000 });
  await executor.warm();
});
afterAll(() => executor.close());
beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-codeact-tasks-'));
});
afterEach(() => rm(directory, { recursive: true, force: true }));

const task = (name: string): OwnerTask => {
  const found = ownerTasks.find((candidate) => candidate.name === name);
  if (found === undefined) throw new Error(`no task ${name}`);
  return found;
};

describe('bench codeact-tasks', () => {
  it.each(['triage-unread', 'customer-issues', 'github-notifications'])(
    '%s: JSON tools, code alongside and code discovery leave the same world and answer; code takes fewer round trips',
    async (name) => {
      const json = await runTask({ task: task(name), mode: 'json', executor, directory });
      const alongside = await runTask({ task: task(name), mode: 'code-alongside', executor, directory });
      const discovery = await runTask({ task: task(name), mode: 'code-discovery', executor, directory });
      expect(alongside.outcome).toEqual(json.outcome);
      expect(discovery.outcome).toEqual(json.outcome);
      // The same calls, made from one cell instead of one reply each.
      expect(alongside.cost.toolCalls).toBe(json.cost.toolCalls);
      expect(alongside.cost.roundTrips).toBe(2);
      expect(discovery.cost.roundTrips).toBe(3);
      expect(alongside.cost.roundTrips).toBeLessThan(json.cost.roundTrips);
    },
  );

  it('changes the world the way the task asks (triage labels phishing and quiets newsletters)', async () => {
    const { outcome } = await runTask({ task: task('triage-unread'), mode: 'code-alongside', executor, directory });
    const byId = new Map(outcome.world.mails.map((mail) => [mail.id, mail]));
    expect(byId.get('m04')).toMatchObject({ labels: ['phishing'], unread: true });
    expect(byId.get('m12')).toMatchObject({ labels: ['phishing'], unread: true });
    expect(byId.get('m02')).toMatchObject({ labels: ['newsletter'], unread: false });
    expect(byId.get('m01')).toMatchObject({ labels: ['customer'], unread: true });
    // Mails already read are not touched by a triage of the unread.
    expect(byId.get('m07')?.labels).toEqual([]);
    expect(outcome.answer).toContain('Phishing: m04, m12.');
  });

  it("runs a task again in the same directory for real: a second run is not answered from the first run's call log", async () => {
    const first = await runTask({ task: task('triage-unread'), mode: 'code-alongside', executor, directory });
    const second = await runTask({ task: task('triage-unread'), mode: 'code-alongside', executor, directory });
    expect(second.cost.toolCalls).toBe(first.cost.toolCalls);
    expect(second.outcome).toEqual(first.outcome);
  });

  it('tells a different outcome apart: a cell that skips the phishing rule does not match JSON mode', async () => {
    const triage = task('triage-unread');
    const careless: OwnerTask = {
      ...triage,
      *code() {
        const value = yield `const kinds = [];
for (const mail of await tools.mail.search({ unread: true })) {
  await tools.mail.label({ id: mail.id, labels: ['customer'] });
  kinds.push({ id: mail.id, kind: 'customer' });
}
return kinds;`;
        return String((value as unknown[]).length);
      },
    };
    const json = await runTask({ task: triage, mode: 'json', executor, directory });
    const code = await runTask({ task: careless, mode: 'code-alongside', executor, directory });
    expect(code.outcome.world).not.toEqual(json.outcome.world);
  });

  it('fails loudly when a cell fails, instead of counting a broken run', async () => {
    const broken: OwnerTask = {
      ...task('stale-bugs'),
      *code() {
        yield 'return await tools.github.list_issues({ state: "stale" });';
        return 'never';
      },
    };
    await expect(runTask({ task: broken, mode: 'code-alongside', executor, directory })).rejects.toThrow(
      /run_code failed in the bench: error: .*invalid arguments for github_list_issues: state/s,
    );
  });
});

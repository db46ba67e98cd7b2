import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadRuntime } from '@assistant/integration-host';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scheduledJobs } from './scheduled-jobs.ts';

const fixtures = fileURLToPath(new URL('../../../tests/fixtures/integrations/custom', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-jobs-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('scheduledJobs', () => {
  it('enqueues the entry task of each enabled instance through the policies, once while it is pending', async () => {
    const configPath = path.join(dir, 'config.yaml');
    await writeFile(
      configPath,
      `integration_dirs: [${JSON.stringify(fixtures)}]
integrations:
  - {type: greeter, name: friendly, schedule: {every: 45m}, platforms: {cards: {enabled: true}}}
  - {type: greeter, name: paused, enabled: false, schedule: {every: 45m}}
  - type: mailbox
    name: mail
    schedule: {cron: "0 * * * *"}
    platforms: {inbox: {enabled: false}}
  - {type: system, name: system, schedule: {every: 2h}}
`,
    );
    const { config, registry } = await loadRuntime({ installation, configPath, cwd: dir });
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    const rejected: string[] = [];
    const jobs = scheduledJobs({
      registry,
      queue,
      logger: pino({ level: 'silent' }),
      onRejected: (type, outcome) => rejected.push(`${type} ${outcome.status}`),
    });
    // Disabled instances and instances whose every platform is disabled have nothing to schedule.
    expect(jobs.map((job) => [job.id, job.description, job.taskTypes])).toEqual([
      ['friendly', 'friendly (greeter): people, cards', ['greeter.people.check', 'greeter.cards.check']],
      ['system', 'system (system): housekeeping', ['system.housekeeping.run']],
      // The builtin memory instance is listed by no config and has its default schedule.
      ['memory', 'memory (memory): due', ['memory.due.check']],
    ]);
    const [friendly] = jobs;
    const run = { scheduledAtMs: Date.now(), reason: 'due' as const, taskTypes: ['greeter.people.check'] };
    await friendly?.fire(run);
    await friendly?.fire(run);
    const pending = await queue.list({ state: 'pending' });
    expect(pending).toHaveLength(1);
    expect(pending[0] ? (await queue.get(pending[0].name?.id ?? ''))?.task : undefined).toMatchObject({
      type: 'greeter.people.check',
      priority: 3,
      integration: 'friendly',
      source: 'scheduler',
    });
    expect(rejected).toEqual(['greeter.people.check duplicate']);
    // A type the breakers held back is left out.
    await friendly?.fire({ ...run, taskTypes: [] });
    expect(rejected).toHaveLength(1);
  });
});

// Issue 31 item 4: the worker's console is quiet by default. An outage is one WARN line when it starts and one when
// it ends, not a line per retry; tasks are summed up per batch instead of a line each.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import type { TaskHandler } from '@assistant/integration-host';
import type { ModelProfileStatus } from '@assistant/llm';
import { DelayedError, openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { OutageLog, watchModelOutage } from './outage-log.ts';
import { runWorker } from './run-worker.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-worker-console-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup(): Promise<{ config: LoadedConfig; queue: TaskQueue }> {
  const configPath = path.join(dir, 'config.yaml');
  await writeFile(configPath, 'data_dir: ./data\nworker:\n  concurrency: 2\n  poll_interval: 50ms\n');
  const { config } = await loadConfig({ configPath });
  const queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
  return { config, queue };
}

const record = z.looseObject({ level: z.number(), msg: z.string() });
const levels = { debug: 20, info: 30, warn: 40 } as const;

/** A logger at the default level (info) whose lines are kept: what the console would print. */
function console() {
  const lines: z.infer<typeof record>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(record.parse(JSON.parse(line))) });
  return { logger, lines };
}

describe('the worker console', () => {
  it('logs an outage once at WARN when it starts and once when it ends, across several retries', async () => {
    const { config, queue } = await setup();
    let calls = 0;
    // Stopped once the check went through: a worker waiting for a delayed task would not exit on its own when idle.
    const stop = new AbortController();
    // IMAP down for four tries, then back: each failed try puts the task back a moment later.
    const handlers = new Map<string, TaskHandler>([
      [
        'mail.inbox.check',
        async () => {
          calls += 1;
          if (calls <= 4) throw new DelayedError(Date.now() + 20, 'cannot reach the IMAP server: ECONNREFUSED');
          // The stop lets this task finish and record its outcome (a graceful drain).
          stop.abort();
          return 'checked';
        },
      ],
    ]);
    const enqueued = await queue.enqueue({ type: 'mail.inbox.check', payload: null, source: 'cli' });
    if (enqueued.status !== 'enqueued') throw new Error('not enqueued');
    const { logger, lines } = console();
    await runWorker({ config, logger, signal: stop.signal, handlers });
    expect(calls).toBe(5);
    expect(await queue.stats()).toMatchObject({ done: 1 });
    const warnings = lines.filter((line) => line.level === levels.warn);
    expect(warnings.map((line) => line.msg)).toEqual([
      'mail.inbox.check is failing: cannot reach the IMAP server: ECONNREFUSED; retrying quietly until it works (each retry is logged at debug)',
      expect.stringMatching(/^mail\.inbox\.check works again after \S+ \(3 retries meanwhile\)$/),
    ]);
    // Not a line per retry (nor per task) at the default level.
    expect(lines.filter((line) => line.msg.includes(enqueued.task.id))).toEqual([]);
  });

  it('prints a bounded number of lines for a 20-task run at the default level, with a summary', async () => {
    const { config, queue } = await setup();
    const handlers = new Map<string, TaskHandler>([['mail.inbox.classify', async ({ payload }) => payload]]);
    for (let index = 0; index < 20; index += 1) {
      await queue.enqueue({ type: 'mail.inbox.classify', payload: index, source: 'cli' });
    }
    const { logger, lines } = console();
    await runWorker({ config, logger, signal: new AbortController().signal, exitWhenIdle: true, handlers });
    expect(await queue.stats()).toMatchObject({ done: 20 });
    const summaries = lines.filter((line) => /^ran \d+ tasks? in /.test(line.msg));
    expect(summaries.length).toBeGreaterThanOrEqual(1);
    const counted = summaries.reduce((sum, line) => sum + Number(/^ran (\d+)/.exec(line.msg)?.[1]), 0);
    expect(counted).toBe(20);
    expect(summaries[0]?.msg).toMatch(/: \d+ done \(mail\.inbox\.classify \d+\)$/);
    // Start-up lines, the summary and the stop: not one line per task.
    expect(lines.length).toBeLessThanOrEqual(10);
  });

  it("logs a model profile's outage as its breaker opens and closes, not per change of the gate", () => {
    const { logger, lines } = console();
    const outages = new OutageLog({ logger });
    let breaker: ModelProfileStatus['breaker'] = { state: 'closed', consecutiveFailures: 0 };
    const llm = { status: () => [{ profile: 'default', model: 'm', breaker } as ModelProfileStatus] };
    watchModelOutage(llm, 'default', outages);
    for (const failures of [1, 1, 2, 3, 3]) {
      breaker = { state: 'open', consecutiveFailures: failures, lastError: 'connect ECONNREFUSED 127.0.0.1:9' };
      watchModelOutage(llm, 'default', outages);
    }
    breaker = { state: 'closed', consecutiveFailures: 0 };
    watchModelOutage(llm, 'default', outages);
    watchModelOutage(llm, 'default', outages);
    expect(lines.map((line) => [line.level, line.msg])).toEqual([
      [
        levels.warn,
        'the LLM profile `default` (m) is failing: connect ECONNREFUSED 127.0.0.1:9; retrying quietly until it works (each retry is logged at debug)',
      ],
      [
        levels.warn,
        expect.stringMatching(/^the LLM profile `default` \(m\) works again after \S+ \(2 retries meanwhile\)$/),
      ],
    ]);
  });
});

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadedConfig } from '@assistant/config';
import type { IntegrationRegistry, TaskHandler } from '@assistant/integration-host';
import { type LlmProfiles, type ModelProfileStatus, ModelUnavailableError } from '@assistant/llm';
import { FileNoteStore } from '@assistant/notes';
import { type JsonValue, type TaskQueue, UnrecoverableError } from '@assistant/queue';
import { CircuitBreakers } from '@assistant/scheduler';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import * as z from 'zod';
import { llmStagesOf } from './lanes.ts';
import { runWorker } from './run-worker.ts';
import { loadTestRuntime } from './testing/load-test-runtime.ts';

// An integration whose platform has a feeder (check), an LLM stage (classify) and an IO stage after it (archive). The
// handlers in its module are never run: every test passes its own.
const manifest = `domain: lanes
description: A platform with an LLM stage, for the worker's lane tests.
platforms:
  items:
    entry: check
    stages:
      check: {handler: ./src/stages.ts#check, priority: 3}
      classify: {handler: ./src/stages.ts#classify, priority: 6, llm: true}
      archive: {handler: ./src/stages.ts#archive, priority: 7}
`;
const stagesModule = `export const check = async () => null;
export const classify = async () => null;
export const archive = async () => null;
`;
const check = 'lanes.items.check';
const classify = 'lanes.items.classify';
const archive = 'lanes.items.archive';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-lanes-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * `pollInterval` 1h in the tests of retry times: nothing but the worker's own wake at a breaker's or a model's retry
 * time (no new file, no settling task) can then end its wait in time.
 */
async function setup(
  extra = '',
  pollInterval = '50ms',
): Promise<{ config: LoadedConfig; registry: IntegrationRegistry; queue: TaskQueue }> {
  await mkdir(path.join(dir, 'integrations', 'lanes', 'src'), { recursive: true });
  await writeFile(path.join(dir, 'integrations', 'lanes', 'manifest.yaml'), manifest);
  await writeFile(path.join(dir, 'integrations', 'lanes', 'src', 'stages.ts'), stagesModule);
  await writeFile(
    path.join(dir, 'config.yaml'),
    `data_dir: ./data\nintegration_dirs: [./integrations]\nintegrations:\n  - type: lanes\n    name: one\nworker:\n  concurrency: 1\n  poll_interval: ${pollInterval}\n  shutdown_grace: 200ms\n${extra}`,
  );
  return loadTestRuntime(dir);
}

type Availability = ReturnType<LlmProfiles['availability']>;

/** Our own LlmProfiles: one profile whose `max_in_flight` and availability the test sets. */
function fakeLlm(maxInFlight: number) {
  let availability: Availability = { available: true };
  const listeners = new Set<(profile: string) => void>();
  const status = (): ModelProfileStatus[] => [
    {
      profile: 'default',
      model: 'fake',
      maxInFlight,
      inFlight: 0,
      waiting: 0,
      requests: 0,
      failures: 0,
      requestsLastMinute: 0,
      tokensLastMinute: 0,
      latencyMs: null,
      breaker: availability.available
        ? { state: 'closed', consecutiveFailures: 0 }
        : { state: 'open', consecutiveFailures: 1, retryAt: new Date(availability.retryAtMs).toISOString() },
    },
  ];
  const llm: LlmProfiles = Object.assign(
    () => {
      throw new Error('the lane tests call no model');
    },
    {
      status,
      limits: () => status().map(({ profile, maxInFlight: limit }) => ({ profile, maxInFlight: limit })),
      availability: () => availability,
      subscribe: (listener: (profile: string) => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    },
  );
  return {
    llm,
    set(next: Availability) {
      availability = next;
      for (const listener of listeners) listener('default');
    },
  };
}

const logger = pino({ level: 'silent' });

async function enqueued(queue: TaskQueue, type: string, payload: JsonValue = null): Promise<string> {
  const outcome = await queue.enqueue({ type, payload, source: 'cli', integration: 'one' });
  if (outcome.status !== 'enqueued') throw new Error(`expected ${type} to be enqueued, got ${outcome.status}`);
  return outcome.task.id;
}

async function pendingOf(queue: TaskQueue, type: string): Promise<number> {
  return (await queue.list({ state: 'pending', type })).length;
}

const waitLimit = { timeout: 10_000, interval: 20 };

const laneSchema = z.looseObject({
  type: z.string(),
  profiles: z.array(z.string()),
  running: z.number(),
  capacity: z.number(),
  pending: z.number(),
  held: z.string().optional(),
});
const publishedSchema = z.looseObject({ lanes: z.array(laneSchema), models: z.array(z.looseObject({})) });

describe('worker lanes', () => {
  it('finds LLM stages, their profiles and their feeders in the manifests', async () => {
    const { registry } = await setup();
    // The builtin email and github integrations have LLM stages too, but no instance here.
    expect(llmStagesOf(registry)).toEqual([{ type: classify, profiles: ['default'], feeder: check }]);
  });

  it('runs more LLM tasks than `concurrency` at once in their lane, while IO tasks pass queued LLM tasks', async () => {
    const { config, registry, queue } = await setup();
    // Capacity 2 × max_in_flight 2 = 4 of the 6; the archive task comes after all of them in run order.
    for (let index = 0; index < 6; index += 1) await enqueued(queue, classify, index);
    const archiveId = await enqueued(queue, archive);
    let classifying = 0;
    let most = 0;
    const release = Promise.withResolvers<void>();
    const archiveRan = Promise.withResolvers<void>();
    const handlers = new Map<string, TaskHandler>([
      [
        classify,
        async ({ payload }) => {
          classifying += 1;
          most = Math.max(most, classifying);
          await release.promise;
          classifying -= 1;
          return payload;
        },
      ],
      [
        archive,
        async () => {
          archiveRan.resolve();
          return 'acted';
        },
      ],
    ]);
    const { llm } = fakeLlm(2);
    const worker = runWorker({
      config,
      registry,
      logger,
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
      llm,
    });
    await vi.waitFor(() => expect(classifying).toBe(4), waitLimit);
    // The IO slot is free although four LLM tasks run and two more wait ahead of it in run order.
    await archiveRan.promise;
    await vi.waitFor(async () => expect((await queue.get(archiveId))?.state).toBe('done'), waitLimit);
    expect(await pendingOf(queue, classify)).toBe(2);
    await vi.waitFor(async () => {
      const [published] = (await queue.workers.readMetrics()).map((value) => publishedSchema.parse(value));
      expect(published?.lanes.find((lane) => lane.type === classify)).toEqual({
        type: classify,
        profiles: ['default'],
        running: 4,
        capacity: 4,
        pending: 2,
      });
      expect(published?.models).toEqual([expect.objectContaining({ profile: 'default', maxInFlight: 2 })]);
    }, waitLimit);
    release.resolve();
    await worker;
    expect(most).toBe(4);
    expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 7, failed: 0 });
  });

  it('holds the LLM lane while its model is unavailable and the feeder at the backlog bound; both resume', async () => {
    const { config, registry, queue } = await setup('  model_backlog: 2\n');
    // Known to the worker's index from its first listing: the backlog is full before the first claim.
    for (let index = 0; index < 2; index += 1) await enqueued(queue, classify, index);
    for (let index = 0; index < 3; index += 1) await enqueued(queue, check, index);
    const archiveId = await enqueued(queue, archive);
    const started: string[] = [];
    const record: TaskHandler = async ({ task }) => {
      started.push(task.type);
      return null;
    };
    const handlers = new Map<string, TaskHandler>([
      [check, record],
      [classify, record],
      [archive, record],
    ]);
    const model = fakeLlm(1);
    model.set({ available: false, retryAtMs: Date.now() + 3_600_000 });
    const stop = new AbortController();
    const worker = runWorker({ config, registry, logger, signal: stop.signal, handlers, llm: model.llm });
    try {
      // Nothing holds archive: it runs although the tasks ahead of it in run order are held.
      await vi.waitFor(async () => expect((await queue.get(archiveId))?.state).toBe('done'), waitLimit);
      await vi.waitFor(async () => {
        const [published] = (await queue.workers.readMetrics()).map((value) => publishedSchema.parse(value));
        expect(published?.lanes.find((lane) => lane.type === classify)?.held).toMatch(/^model unavailable until /);
      }, waitLimit);
      // Claims run in order, so had check or classify been claimable they would have run before archive.
      expect(started).toEqual([archive]);
      model.set({ available: true });
      await vi.waitFor(
        async () => expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 6 }),
        waitLimit,
      );
      // The feeder ran once the backlog was below the bound (check comes before classify in run order, so nothing
      // else kept it back before).
      expect(started.filter((type) => type === check)).toHaveLength(3);
      expect(started.filter((type) => type === classify)).toHaveLength(2);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('says in its metrics that an LLM stage holds its feeder while its backlog is full', async () => {
    const { config, registry, queue } = await setup('  model_backlog: 2\n');
    for (let index = 0; index < 4; index += 1) await enqueued(queue, classify, index);
    const checkId = await enqueued(queue, check);
    const release = Promise.withResolvers<void>();
    const handlers = new Map<string, TaskHandler>([
      [
        classify,
        async () => {
          await release.promise;
          return null;
        },
      ],
      [check, async () => 'checked'],
    ]);
    const { llm } = fakeLlm(1);
    const worker = runWorker({
      config,
      registry,
      logger,
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
      llm,
    });
    await vi.waitFor(async () => {
      const [published] = (await queue.workers.readMetrics()).map((value) => publishedSchema.parse(value));
      expect(published?.lanes.find((lane) => lane.type === classify)).toEqual({
        type: classify,
        profiles: ['default'],
        running: 2,
        capacity: 2,
        pending: 2,
        held: 'backlog full',
      });
    }, waitLimit);
    // check comes first in run order: only the backlog keeps it pending.
    expect((await queue.get(checkId))?.state).toBe('pending');
    release.resolve();
    await worker;
    expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 5 });
  });

  it("claims again when a model's known retry time passes, with no event to wake it", async () => {
    const { config, registry, queue } = await setup('', '1h');
    const id = await enqueued(queue, classify);
    const retryAtMs = Date.now() + 300;
    const profiles = fakeLlm(1);
    // Unavailable until the retry time, then available without a subscribe event: only the retry time can wake it.
    const llm: LlmProfiles = Object.assign((profile?: string) => profiles.llm(profile), {
      status: profiles.llm.status,
      limits: profiles.llm.limits,
      subscribe: profiles.llm.subscribe,
      availability: (_profile: string, nowMs = Date.now()): Availability =>
        nowMs < retryAtMs ? { available: false, retryAtMs } : { available: true },
    });
    let ranAtMs: number | undefined;
    const handlers = new Map<string, TaskHandler>([
      [
        classify,
        async () => {
          ranAtMs = Date.now();
          return null;
        },
      ],
    ]);
    const stop = new AbortController();
    const worker = runWorker({ config, registry, logger, signal: stop.signal, handlers, llm });
    try {
      await vi.waitFor(async () => expect((await queue.get(id))?.state).toBe('done'), waitLimit);
      expect(ranAtMs).toBeGreaterThanOrEqual(retryAtMs);
    } finally {
      stop.abort();
      await worker;
    }
  });

  it('puts a task whose model is unavailable back to pending/ without spending an attempt, and tells no breaker', async () => {
    const { config, registry, queue } = await setup('circuit_breaker:\n  failures: 1\n');
    const id = await enqueued(queue, classify);
    const retryAtMs = Date.now() + 3_600_000;
    const handlers = new Map<string, TaskHandler>([
      [
        classify,
        async () => {
          // A handler may wrap it: the cause chain is searched.
          throw new Error('classifying failed', {
            cause: new ModelUnavailableError('default', retryAtMs, 'the endpoint refused the connection'),
          });
        },
      ],
    ]);
    const { llm } = fakeLlm(1);
    const stop = new AbortController();
    const worker = runWorker({ config, registry, logger, signal: stop.signal, handlers, llm });
    try {
      await vi.waitFor(async () => {
        const record = await queue.get(id);
        expect(record?.state).toBe('pending');
        expect(record?.name?.readyAtMs).toBeGreaterThanOrEqual(retryAtMs);
      }, waitLimit);
    } finally {
      stop.abort();
      await worker;
    }
    const record = await queue.get(id);
    expect(record?.task).toMatchObject({ attempts: 0, history: [] });
    const breakers = new CircuitBreakers({
      notes: new FileNoteStore({ root: config.paths.notes }),
      settings: config.circuitBreaker,
    });
    expect(await breakers.list()).toEqual([]);
  });

  it('fails a task of more than a day the normal way when its model is unavailable', async () => {
    const { config, registry, queue } = await setup('queue:\n  policies:\n    defaults:\n      max_attempts: 1\n');
    // Dropped in by hand, as queue.md describes, with a creation time two days back.
    const fileName = `6_20200101T000000000Z_01m81zbz7e0rvw1d46qzvhsksj--0000000000000000--${classify}.yaml`;
    const createdAt = new Date(Date.now() - 2 * 86_400_000).toISOString();
    await writeFile(path.join(config.paths.queue, 'pending', fileName), `created_at: ${createdAt}\nintegration: one\n`);
    const handlers = new Map<string, TaskHandler>([
      [
        classify,
        async () => {
          throw new ModelUnavailableError('default', Date.now() + 60_000, 'the endpoint answered 503');
        },
      ],
    ]);
    const { llm } = fakeLlm(1);
    await runWorker({
      config,
      registry,
      logger,
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
      llm,
    });
    expect(await queue.get('01m81zbz7e0rvw1d46qzvhsksj')).toMatchObject({
      state: 'failed',
      task: { attempts: 1, error: { message: 'the endpoint answered 503' } },
    });
  });

  it('claims no task of a type whose breaker is open, then exactly one trial after retry_at, then the rest', async () => {
    // The worker's pause (5 min) is the trial's; the breaker was opened with a short one, so its retry_at comes soon.
    const { config, registry, queue } = await setup('circuit_breaker:\n  failures: 1\n  pause: 5m\n', '1h');
    const notes = new FileNoteStore({ root: config.paths.notes });
    const breakers = new CircuitBreakers({ notes, settings: config.circuitBreaker });
    const opener = new CircuitBreakers({ notes, settings: { failures: 1, pauseMs: 500 } });
    const opened = await opener.recordFailure(archive, 'the API is down');
    const retryAtMs = Date.parse(opened.retryAt ?? '');
    for (let index = 0; index < 3; index += 1) await enqueued(queue, archive, index);
    const otherId = await enqueued(queue, check);
    const calls: { atMs: number; trialDone: boolean }[] = [];
    let trialDone = false;
    const releaseTrial = Promise.withResolvers<void>();
    const handlers = new Map<string, TaskHandler>([
      [
        archive,
        async () => {
          calls.push({ atMs: Date.now(), trialDone });
          if (calls.length === 1) {
            await releaseTrial.promise;
            trialDone = true;
          }
          return null;
        },
      ],
      [check, async () => 'checked'],
    ]);
    const { llm } = fakeLlm(1);
    // Not --exit-when-idle: with every ready task held by the breaker the worker would rightly exit at once.
    const stop = new AbortController();
    const worker = runWorker({ config, registry, logger, signal: stop.signal, handlers, llm });
    // Another type is not held by it.
    await vi.waitFor(async () => expect((await queue.get(otherId))?.state).toBe('done'), waitLimit);
    await vi.waitFor(() => expect(calls).toHaveLength(1), waitLimit);
    expect(calls[0]?.atMs).toBeGreaterThanOrEqual(retryAtMs);
    expect((await breakers.list())[0]).toMatchObject({ state: 'half_open', trialClaimedAt: expect.any(String) });
    releaseTrial.resolve();
    await vi.waitFor(
      async () => expect(await queue.stats()).toMatchObject({ pending: 0, active: 0, done: 4 }),
      waitLimit,
    );
    stop.abort();
    await worker;
    // The others ran only once the trial had reported, and closed the breaker.
    expect(calls).toHaveLength(3);
    expect(calls.slice(1).every((call) => call.trialDone)).toBe(true);
    expect((await breakers.list())[0]).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
  });

  it('counts no unrecoverable failure toward the breaker: it is about the one task', async () => {
    const { config, registry, queue } = await setup('circuit_breaker:\n  failures: 2\n');
    for (let index = 0; index < 3; index += 1) await enqueued(queue, archive, index);
    const handlers = new Map<string, TaskHandler>([
      [
        archive,
        async () => {
          throw new UnrecoverableError('this item cannot be acted on');
        },
      ],
    ]);
    const { llm } = fakeLlm(1);
    await runWorker({
      config,
      registry,
      logger,
      signal: new AbortController().signal,
      exitWhenIdle: true,
      handlers,
      llm,
    });
    expect(await queue.stats()).toMatchObject({ failed: 3 });
    const breakers = new CircuitBreakers({
      notes: new FileNoteStore({ root: config.paths.notes }),
      settings: config.circuitBreaker,
    });
    expect(await breakers.list()).toEqual([]);
  });
});

import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileHumanLog } from '@assistant/notes';
import { openFileTaskQueue, type TaskEvent, type TaskEvents, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LiveHub } from './live.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-live-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A queue whose only part used here is `events()`: counts the subscriptions opened and closed. */
function eventSource() {
  const listeners = new Set<(event: TaskEvent) => void>();
  const counts = { opened: 0, closed: 0 };
  const queue = {
    events: (): TaskEvents => {
      counts.opened += 1;
      return {
        subscribe(listener) {
          listeners.add(listener);
          return () => listeners.delete(listener);
        },
        async close() {
          counts.closed += 1;
        },
      };
    },
  } as unknown as TaskQueue;
  const emit = (event: TaskEvent) => {
    for (const listener of listeners) listener(event);
  };
  return { queue, counts, emit };
}

describe('LiveHub', () => {
  it('feeds every client from one queue subscription, opened by the first and closed after the last', async () => {
    const source = eventSource();
    const hub = new LiveHub({
      queue: () => source.queue,
      humanLog: new FileHumanLog({ directory: path.join(dir, 'logs') }),
      approvalsDirectory: path.join(dir, 'approvals'),
      pollMs: 20,
    });
    const first: string[] = [];
    const second: string[] = [];
    const stopFirst = hub.subscribe((event, data) => first.push(`${event} ${data}`));
    const stopSecond = hub.subscribe((event, data) => second.push(`${event} ${data}`));
    expect(source.counts.opened).toBe(1);
    source.emit({ kind: 'added', id: 't1', type: 'system.echo', state: 'pending' });
    expect(first).toEqual(['queue {"kind":"added","id":"t1","type":"system.echo","state":"pending"}']);
    expect(second).toEqual(first);
    stopFirst();
    expect(source.counts.closed).toBe(0);
    stopSecond();
    await vi.waitFor(() => expect(source.counts.closed).toBe(1));
    await hub.close();
  });

  it('tells of a growing human log and a changed approvals folder, once per change', async () => {
    const source = eventSource();
    const humanLog = new FileHumanLog({ directory: path.join(dir, 'logs') });
    const approvals = path.join(dir, 'approvals');
    await mkdir(approvals);
    const hub = new LiveHub({ queue: () => source.queue, humanLog, approvalsDirectory: approvals, pollMs: 20 });
    const seen: string[] = [];
    const stop = hub.subscribe((event) => seen.push(event));
    // The hub's first look only records where things stand, so a change made before it may go untold: each try
    // writes once more until the hub tells of one (a bounded wait on the event, no fixed sleep).
    let lines = 0;
    await vi.waitFor(
      async () => {
        lines += 1;
        await humanLog.write({ source: 'test', message: `line ${lines}` });
        expect(seen).toContain('log');
      },
      { timeout: 5_000, interval: 100 },
    );
    let requests = 0;
    await vi.waitFor(
      async () => {
        requests += 1;
        await writeFile(path.join(approvals, `ap-00000000000${requests}.md`), '---\nstatus: pending\n---\n');
        expect(seen).toContain('approvals');
      },
      { timeout: 5_000, interval: 100 },
    );
    const logs = seen.filter((event) => event === 'log').length;
    await appendFile(humanLog.fileFor(new Date()), '- 00:00:00 **test** another\n');
    await vi.waitFor(() => expect(seen.filter((event) => event === 'log').length).toBe(logs + 1), { timeout: 5_000 });
    stop();
    await hub.close();
  });

  it('tells of a change in the models a worker publishes, not of a rewrite that changes nothing there', async () => {
    const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue'), dataDirectory: dir });
    const hub = new LiveHub({
      queue: () => queue,
      humanLog: new FileHumanLog({ directory: path.join(dir, 'logs') }),
      approvalsDirectory: path.join(dir, 'approvals'),
      modelsPollMs: 20,
    });
    const seen: string[] = [];
    const stop = hub.subscribe((event) => seen.push(event));
    const model = (state: string) => ({
      profile: 'local',
      model: 'qwen3',
      maxInFlight: 2,
      inFlight: 0,
      waiting: 0,
      requests: 0,
      failures: 0,
      requestsLastMinute: 0,
      tokensLastMinute: 0,
      latencyMs: null,
      breaker: { state, consecutiveFailures: 0 },
    });
    // The memory figures change at every write; only models and lanes matter to the panel. As in the log test, each
    // try writes again until the hub has taken its first look and then tells of the change.
    let writes = 0;
    const publish = (state: string) => {
      writes += 1;
      return queue.workers.publishMetrics('host-1-aaa', { memory: { rss_bytes: writes }, models: [model(state)] });
    };
    await publish('closed');
    let state = 'closed';
    await vi.waitFor(
      async () => {
        state = state === 'closed' ? 'open' : 'closed';
        await publish(state);
        expect(seen).toContain('models');
      },
      { timeout: 5_000, interval: 100 },
    );
    // Rewrites with the same models (the memory figure differs each time): once the hub has caught up with the last
    // change, a rewrite between two looks tells of nothing, so the count of `models` events stops growing. Were a
    // rewrite told of, it would grow at every try and the wait would time out.
    const told = () => seen.filter((event) => event === 'models').length;
    let last = -1;
    await vi.waitFor(
      async () => {
        await publish(state);
        const now = told();
        const settled = now === last;
        last = now;
        expect(settled).toBe(true);
      },
      { timeout: 5_000, interval: 200 },
    );
    stop();
    await hub.close();
  });

  it('refuses a topic registered twice', () => {
    const source = eventSource();
    const hub = new LiveHub({
      queue: () => source.queue,
      humanLog: new FileHumanLog({ directory: dir }),
      approvalsDirectory: dir,
    });
    hub.registerTopic('task', async () => {});
    expect(() => hub.registerTopic('task', async () => {})).toThrow(/twice/);
  });
});

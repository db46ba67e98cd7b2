import { type ConfigPaths, parseConfig } from '@assistant/config';
import { afterEach, describe, expect, it } from 'vitest';
import { AdaptiveLimit } from './adaptive-limit.ts';
import { createLlmProfiles, type LlmProfiles, type LlmProfilesOptions } from './llm-profiles.ts';
import { FakeOpenAiServer } from './testing/fake-openai-server.ts';

// The limiter against the fake model server with a concurrency limit: every assertion is on counts (requests open at
// the server, the limit the gate reports), none on how long anything took. Latencies are small and the runs short.

const paths: ConfigPaths = {
  configFile: '/nonexistent/config.yaml',
  secretsFile: '/nonexistent/secrets.yaml',
  dataDir: '/nonexistent/data',
  queue: '/nonexistent/data/queue',
  notes: '/nonexistent/data/notes',
  logs: '/nonexistent/data/logs',
  control: '/nonexistent/data/control',
};

const servers: FakeOpenAiServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function fakeModel(options: { concurrency: number; latencyMs: number }): Promise<FakeOpenAiServer> {
  const server = await FakeOpenAiServer.start({ respond: () => ({ text: 'ok' }), ...options });
  servers.push(server);
  return server;
}

/** A process's profiles with `default` at the server; `settings` are more of its config.yaml keys. */
function profilesAt(server: FakeOpenAiServer, settings = '', options: Partial<LlmProfilesOptions> = {}) {
  const text = `llms:\n  default: {base_url: "${server.url}", model: fake-model${settings ? `, ${settings}` : ''}}\n`;
  const { config, errors } = parseConfig({ text });
  if (config === undefined) throw new Error(`the test's config has problems: ${JSON.stringify(errors)}`);
  return createLlmProfiles({ config: { ...config, paths }, ...options });
}

/** The default profile's limit now, and the highest it has been since `watch` was called. */
function watchLimit(llm: LlmProfiles) {
  const limit = () => llm.status().find((status) => status.profile === 'default')?.maxInFlight ?? 0;
  let highest = limit();
  const unsubscribe = llm.subscribe(() => {
    highest = Math.max(highest, limit());
  });
  return { limit, highest: () => highest, unsubscribe };
}

/**
 * Makes `calls` model calls from `callers` loops at once, as the worker's lane does (more tasks than the limit, so
 * the gate always has one waiting). Resolves with the calls answered, in order of completion.
 */
async function drive(llm: LlmProfiles, options: { calls: number; callers: number; onAnswer?: () => void }) {
  let started = 0;
  let answered = 0;
  const loop = async (): Promise<void> => {
    while (started < options.calls) {
      started += 1;
      await llm().chat({ messages: [{ role: 'user', content: `call ${started}` }] });
      answered += 1;
      options.onAnswer?.();
    }
  };
  await Promise.all(Array.from({ length: options.callers }, loop));
  return answered;
}

describe('the adaptive limit against a model server that serves C at once', () => {
  it('starts at one, grows while the latency stays flat, and settles at C or C + 1 without ever opening more', async () => {
    const concurrency = 2;
    const server = await fakeModel({ concurrency, latencyMs: 100 });
    const llm = profilesAt(server);
    const watched = watchLimit(llm);
    expect(llm.status()[0]).toMatchObject({ maxInFlight: 1, adaptive: { ceiling: 64 } });
    await drive(llm, { calls: 60, callers: 12 });
    watched.unsubscribe();
    // The most the server ever had open at once: its C serving and at most one waiting.
    expect(server.peakOpenRequests).toBeLessThanOrEqual(concurrency + 1);
    expect(watched.highest()).toBeLessThanOrEqual(concurrency + 1);
    expect(watched.limit()).toBeGreaterThanOrEqual(concurrency);
    expect(watched.limit()).toBeLessThanOrEqual(concurrency + 1);
    expect(server.peakInFlight).toBe(concurrency);
  });

  it('halves the limit once for a burst of 429s, and grows back when the server recovers', async () => {
    const concurrency = 4;
    const server = await fakeModel({ concurrency, latencyMs: 100 });
    const llm = profilesAt(server, 'max_retries: 0', { backoffBaseMs: 1, inlineWaitMs: 60_000 });
    const watched = watchLimit(llm);
    await drive(llm, { calls: 60, callers: 12 });
    const before = watched.limit();
    expect(before).toBeGreaterThanOrEqual(concurrency);

    server.failWith({ status: 429, message: 'slow down' });
    // As many calls as the limit, sent at once: every one is answered 429, and the limit halves once, not each time.
    const burst = await Promise.allSettled(
      Array.from({ length: before }, (_, index) =>
        llm().chat({ messages: [{ role: 'user', content: `burst ${index}` }] }),
      ),
    );
    expect(burst.every((outcome) => outcome.status === 'rejected')).toBe(true);
    expect(watched.limit()).toBe(Math.floor(before / 2));

    await server.recover();
    await drive(llm, { calls: 60, callers: 12 });
    watched.unsubscribe();
    expect(watched.limit()).toBeGreaterThanOrEqual(concurrency);
  });

  it('keeps a set max_in_flight as it is: never more open, never adapted', async () => {
    const server = await fakeModel({ concurrency: 8, latencyMs: 20 });
    const llm = profilesAt(server, 'max_in_flight: 2');
    const watched = watchLimit(llm);
    await drive(llm, { calls: 40, callers: 8 });
    watched.unsubscribe();
    expect(server.peakOpenRequests).toBe(2);
    expect(watched.highest()).toBe(2);
    expect(llm.status()[0]).not.toHaveProperty('adaptive');
  });

  it('shares one server between two processes without starving either', async () => {
    const concurrency = 4;
    const calls = 60;
    const server = await fakeModel({ concurrency, latencyMs: 100 });
    // Two processes' gates, each with its own limit and no word with the other.
    const first = profilesAt(server);
    const second = profilesAt(server);
    const answered = [0, 0];
    // How far each had got when the other finished all its calls.
    const atOthersEnd: number[] = [];
    await Promise.all(
      [first, second].map((llm, index) =>
        drive(llm, { calls, callers: 12, onAnswer: () => (answered[index] = (answered[index] ?? 0) + 1) }).then(() => {
          atOthersEnd[1 - index] ??= answered[1 - index] ?? 0;
        }),
      ),
    );
    // The one that finished second had most of its calls answered by then: they shared the server, turn about.
    const behind = Math.min(...atOthersEnd);
    expect(behind).toBeGreaterThanOrEqual(Math.floor((calls * 2) / 3));
    expect(answered).toEqual([calls, calls]);
  });
});

describe('AdaptiveLimit', () => {
  /** Sends `count` requests under the limit and answers them all after `latencyMs`, in the order sent. */
  const round = (limit: AdaptiveLimit, count: number, latencyMs: number, saturated = true) => {
    const tickets = Array.from({ length: count }, () => limit.sent({ saturated }));
    for (const ticket of tickets) limit.answered(ticket, latencyMs);
  };

  it('never goes above its ceiling', () => {
    const limit = new AdaptiveLimit({ maxLimit: 3 });
    for (let step = 0; step < 20; step++) round(limit, limit.limit + 3, 100);
    expect(limit.limit).toBe(3);
  });

  it('does not grow while the caller leaves the limit unused', () => {
    const limit = new AdaptiveLimit({ maxLimit: 64, initialLimit: 4 });
    for (let step = 0; step < 20; step++) round(limit, 4, 100, false);
    expect(limit.limit).toBe(4);
  });

  it('judges a window only once every request sent in it has answered, whatever the order', () => {
    const limit = new AdaptiveLimit({ maxLimit: 64, initialLimit: 4 });
    round(limit, 4, 100);
    expect(limit.limit).toBe(5);
    // Five sent at a limit of 5: four answered at once, the fifth queued behind them. Judged on the first four alone,
    // nothing would look queued and the limit would grow; judged on all five, one request was queued.
    const tickets = Array.from({ length: 5 }, () => limit.sent({ saturated: true }));
    for (const ticket of tickets.slice(0, 4)) limit.answered(ticket, 100);
    expect(limit.limit).toBe(5);
    expect(limit.queued).toBe(0);
    limit.answered(tickets[4] as (typeof tickets)[number], 200);
    expect(limit.queued).toBeCloseTo(5 * (1 - 100 / 120));
    expect(limit.limit).toBe(5);
  });

  it('halves once for the failures of one limit, and leaves out answers sent under an older one or cancelled', () => {
    const limit = new AdaptiveLimit({ maxLimit: 64, initialLimit: 4 });
    const out = Array.from({ length: 4 }, () => limit.sent({ saturated: true }));
    expect(limit.dropped(out[0] as (typeof out)[number])).toBe(true);
    expect(limit.limit).toBe(2);
    expect(limit.dropped(out[1] as (typeof out)[number])).toBe(false);
    expect(limit.limit).toBe(2);
    // A slow answer from before the change says nothing about the new limit.
    expect(limit.answered(out[2] as (typeof out)[number], 10_000)).toBe(false);
    round(limit, 3, 100);
    expect(limit.limit).toBe(3);
    // A cancelled request leaves its window judged on the others.
    const window = Array.from({ length: 3 }, () => limit.sent({ saturated: true }));
    limit.ignored(window[0] as (typeof window)[number]);
    limit.answered(window[1] as (typeof window)[number], 100);
    expect(limit.limit).toBe(3);
    limit.answered(window[2] as (typeof window)[number], 100);
    expect(limit.limit).toBe(4);
  });
});

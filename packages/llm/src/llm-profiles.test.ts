import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type ConfigPaths, defaultLlmBaseUrls, llmProviders, parseConfig } from '@assistant/config';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ChatDelta, providerKinds, type TokenUsage } from './chat-types.ts';
import { LlmAbortedError, LlmRequestError } from './llm-errors.ts';
import { createLlmProfiles, type LlmProfilesOptions } from './llm-profiles.ts';
import { findModelUnavailable, ModelUnavailableError } from './model-gate.ts';
import { defaultBaseUrls } from './providers/provider-chat-model.ts';
import { FakeAnthropicServer } from './testing/fake-anthropic-server.ts';
import { FakeOpenAiServer, type FakeOpenAiServerOptions, type FakeReply } from './testing/fake-openai-server.ts';

/** Waits for a condition; generous, for a loaded machine (vi.waitFor's default is 1 s). */
const until = (check: () => void) => vi.waitFor(check, { timeout: 15_000, interval: 5 });

const paths: ConfigPaths = {
  configFile: '/nonexistent/config.yaml',
  secretsFile: '/nonexistent/secrets.yaml',
  dataDir: '/nonexistent/data',
  queue: '/nonexistent/data/queue',
  notes: '/nonexistent/data/notes',
  logs: '/nonexistent/data/logs',
  control: '/nonexistent/data/control',
};

let server: FakeOpenAiServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Profiles from config.yaml text: `default` at `url` with `settings`, and a remote `other` never used. */
function profilesAt(url: string, settings: string, options: Partial<LlmProfilesOptions> = {}) {
  const text = [
    'llms:',
    `  default: {base_url: "${url}", model: fake-model, ${settings}}`,
    '  other: {base_url: "https://api.example.com/v1", model: big-model}',
    '',
  ].join('\n');
  const { config, errors } = parseConfig({ text });
  if (config === undefined) throw new Error(`the test's config has problems: ${JSON.stringify(errors)}`);
  return createLlmProfiles({ config: { ...config, paths }, ...options });
}

async function profilesWith(
  serverOptions: FakeOpenAiServerOptions,
  settings = '',
  options: Partial<LlmProfilesOptions> = {},
) {
  server = await FakeOpenAiServer.start(serverOptions);
  return profilesAt(server.url, settings, options);
}

/** Replies held until `release()`: the test decides when the model answers, not the clock. */
function heldReplies(reply: (index: number) => FakeReply = () => ({ text: 'ok' })) {
  let release = (): void => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  return {
    release: () => release(),
    respond: async (_request: unknown, index: number): Promise<FakeReply> => {
      await released;
      return reply(index);
    },
  };
}

/** A loopback port nothing listens on: connecting to it is refused. */
async function closedPort(): Promise<number> {
  const listener = createServer();
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  await new Promise<void>((resolve) => listener.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('expected a TCP address');
  return address.port;
}

const ask = (content: string) => ({ messages: [{ role: 'user' as const, content }] });
// The user's message: the first one sent is the system message with the current time (time-awareness.ts).
const contentOf = (index: number) =>
  (server?.requests[index]?.body.messages as { role: string; content: string }[] | undefined)?.find(
    (message) => message.role === 'user',
  )?.content;

describe('createLlmProfiles', () => {
  it('records a profile’s calls under <llm_cache.directory>/<provider>/ and replays them at another time of day', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'llm-profiles-cache-'));
    try {
      await using anthropic = await FakeAnthropicServer.start({ replies: [{ text: 'Recorded hello' }] });
      const text = (mode: string) =>
        `llm_cache: {mode: ${mode}, directory: "${directory}"}\nllms:\n  claude: {provider: anthropic, base_url: "${anthropic.url}", model: claude-sonnet-4-5, api_key: !secret claude}\n`;
      const profiles = (mode: string, atMs: number) => {
        const { config, errors } = parseConfig({ text: text(mode), secretsText: 'claude: sk-ant-secret-value\n' });
        if (!config) throw new Error(JSON.stringify(errors));
        return createLlmProfiles({ config: { ...config, paths }, now: () => atMs });
      };
      const request = { messages: [{ role: 'user' as const, content: 'Say hello' }] };
      const recorded = await profiles('record', Date.parse('2026-11-28T08:00:00Z'))('claude').chat(request);
      expect(recorded.message.content).toBe('Recorded hello');
      const files = await readdir(path.join(directory, 'anthropic'));
      expect(files.length).toBe(1);
      const fixture = await readFile(path.join(directory, 'anthropic', files[0] ?? ''), 'utf8');
      expect(fixture).not.toContain('sk-ant-secret-value');
      // Hours later (another time line in the system prompt), with the server gone: the fixture still answers.
      await anthropic.close();
      const replayed = await profiles('replay', Date.parse('2026-11-28T17:30:00Z'))('claude').chat(request);
      expect(replayed.message.content).toBe('Recorded hello');
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  });

  it('knows the same providers and default base URLs as the config schema', () => {
    expect([...providerKinds]).toEqual([...llmProviders]);
    expect(defaultBaseUrls).toEqual(defaultLlmBaseUrls);
  });

  it('creates a profile’s model for its provider, with its api_key, reporting cached tokens', async () => {
    await using anthropic = await FakeAnthropicServer.start({
      apiKey: 'sk-ant-test',
      replies: [{ text: 'Hello', usage: { input: 20, output: 5, cacheRead: 1000, cacheWrite: 10 } }],
    });
    const { config, errors } = parseConfig({
      text: `owner: {timezone: UTC}\nllms:\n  claude: {provider: anthropic, base_url: "${anthropic.url}", model: claude-sonnet-4-5, api_key: !secret claude}\n`,
      secretsText: 'claude: sk-ant-test\n',
    });
    if (!config) throw new Error(JSON.stringify(errors));
    const usages: TokenUsage[] = [];
    const llm = createLlmProfiles({
      config: { ...config, paths },
      onUsage: (_profile, usage) => usages.push(usage),
      now: () => Date.parse('2026-11-28T08:14:05Z'),
    });
    expect(llm('claude').provider).toBe('anthropic');
    const response = await llm('claude').chat({ messages: [{ role: 'user', content: 'Hi' }] });
    expect(response.message.content).toBe('Hello');
    expect(anthropic.generationRequests[0]?.headers['x-api-key']).toBe('sk-ant-test');
    expect(JSON.stringify(anthropic.generationRequests[0]?.body?.system)).toContain(
      'Current time: 2026-11-28T08:14:05+00:00 (Saturday), time zone UTC.',
    );
    expect(usages[0]).toMatchObject({ cachedPromptTokens: 1000, cacheWriteTokens: 10, completionTokens: 5 });
  });

  it('marks the system prompt as a cached prefix for Anthropic, unless the profile says `prompt_cache: false`', async () => {
    await using anthropic = await FakeAnthropicServer.start({ apiKey: 'sk-ant-test', respond: () => ({ text: 'ok' }) });
    const { config, errors } = parseConfig({
      text: `llms:\n  cached: {provider: anthropic, base_url: "${anthropic.url}", model: claude-sonnet-4-5, api_key: !secret claude}\n  plain: {provider: anthropic, base_url: "${anthropic.url}", model: claude-sonnet-4-5, api_key: !secret claude, prompt_cache: false}\n`,
      secretsText: 'claude: sk-ant-test\n',
    });
    if (!config) throw new Error(JSON.stringify(errors));
    const llm = createLlmProfiles({ config: { ...config, paths } });
    const messages = [
      { role: 'system' as const, content: 'You sort mail.' },
      { role: 'user' as const, content: 'Hi' },
    ];
    await llm('cached').chat({ messages });
    await llm('plain').chat({ messages });
    const [cached, plain] = anthropic.generationRequests.map((request) => JSON.stringify(request.body?.system));
    expect(cached).toContain('cache_control');
    expect(plain).not.toContain('cache_control');
  });

  it('sends every prompt with the current time in the owner’s zone, last in the first system message', async () => {
    server = await FakeOpenAiServer.start({ respond: () => ({ text: 'ok' }) });
    const { config } = parseConfig({
      text: `owner: {timezone: Europe/Berlin}\nllms:\n  default: {base_url: "${server.url}", model: m}\n`,
    });
    if (!config) throw new Error('the test config is invalid');
    const llm = createLlmProfiles({ config: { ...config, paths }, now: () => Date.parse('2026-11-28T08:14:05Z') });
    await llm().chat({
      messages: [
        { role: 'system', content: 'You sort mail.' },
        { role: 'user', content: 'Remind me tomorrow', at: '2026-11-27T21:30:00Z' },
      ],
    });
    expect(server.requests[0]?.body.messages).toEqual([
      {
        role: 'system',
        content: 'You sort mail.\n\nCurrent time: 2026-11-28T09:14:05+01:00 (Saturday), time zone Europe/Berlin.',
      },
      { role: 'user', content: '[2026-11-27 22:30] Remind me tomorrow' },
    ]);
  });

  it('never has more than max_in_flight requests at the server, and sends them first come first served', async () => {
    const held = heldReplies();
    const llm = await profilesWith({ respond: held.respond }, 'max_in_flight: 2');
    const calls = [0, 1, 2, 3, 4, 5].map((index) => llm().chat(ask(`call ${index}`)));
    await until(() => expect(server?.inFlight).toBe(2));
    expect(llm.status()[0]).toMatchObject({ profile: 'default', maxInFlight: 2, inFlight: 2, waiting: 4 });
    expect(llm.limits()[0]).toEqual({ profile: 'default', maxInFlight: 2 });
    held.release();
    await Promise.all(calls);
    expect(server?.peakInFlight).toBe(2);
    expect(server?.requests).toHaveLength(6);

    // One at a time, the order the server sees is the order of the calls.
    await server?.close();
    const serial = heldReplies();
    const one = await profilesWith({ respond: serial.respond }, 'max_in_flight: 1');
    const inOrder = [0, 1, 2, 3].map((index) => one().chat(ask(`call ${index}`)));
    await until(() => expect(one.status()[0]).toMatchObject({ inFlight: 1, waiting: 3 }));
    serial.release();
    await Promise.all(inOrder);
    expect([0, 1, 2, 3].map(contentOf)).toEqual(['call 0', 'call 1', 'call 2', 'call 3']);
    expect(server?.peakInFlight).toBe(1);
  });

  it('lets a call waiting for a slot abort without ever reaching the server', async () => {
    const held = heldReplies();
    const llm = await profilesWith({ respond: held.respond }, 'max_in_flight: 1');
    const first = llm().chat(ask('first'));
    const controller = new AbortController();
    const second = llm().chat(ask('second'), { signal: controller.signal });
    await until(() => expect(llm.status()[0]).toMatchObject({ inFlight: 1, waiting: 1 }));
    controller.abort(new Error('the task was stopped'));
    await expect(second).rejects.toBeInstanceOf(LlmAbortedError);
    expect(llm.status()[0]?.waiting).toBe(0);
    held.release();
    await first;
    expect(server?.requests.map((_, index) => contentOf(index))).toEqual(['first']);
  });

  it('opens the breaker on a refused connection: calls throw LLM_UNAVAILABLE with a retry time and send nothing', async () => {
    const port = await closedPort();
    let fetches = 0;
    const counting: typeof fetch = (input, init) => {
      fetches += 1;
      return fetch(input, init);
    };
    const llm = profilesAt(`http://127.0.0.1:${port}/v1`, 'max_retries: 3', {
      fetch: counting,
      backoffBaseMs: 600_000,
      inlineWaitMs: 1_000,
    });
    const error = await llm()
      .chat(ask('hi'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    const unavailable = error as ModelUnavailableError;
    expect(unavailable.code).toBe('LLM_UNAVAILABLE');
    expect(unavailable.profile).toBe('default');
    expect(unavailable.retryAtMs).toBeGreaterThan(Date.now());
    expect(unavailable.message).toContain(`LLM profile default (fake-model at http://127.0.0.1:${port}/v1)`);
    expect(unavailable.message).toMatch(/ECONNREFUSED/);
    expect(unavailable.message).toContain(new Date(unavailable.retryAtMs).toISOString());
    expect(fetches).toBe(1);

    const again = await llm()
      .chat(ask('again'))
      .catch((caught: unknown) => caught);
    expect(findModelUnavailable(again)?.retryAtMs).toBe(unavailable.retryAtMs);
    expect(fetches).toBe(1);
    expect(llm.availability('default')).toEqual({ available: false, retryAtMs: unavailable.retryAtMs });
    expect(llm.availability('other')).toEqual({ available: true });
    expect(llm.availability('no_such_profile')).toEqual({ available: true });
    const [status] = llm.status();
    expect(status).toMatchObject({ requests: 1, failures: 1, inFlight: 0, waiting: 0 });
    expect(status?.breaker).toMatchObject({ state: 'open', consecutiveFailures: 1 });
    expect(status?.breaker.retryAt).toBe(new Date(unavailable.retryAtMs).toISOString());
    expect(status?.breaker.lastError).toMatch(/ECONNREFUSED/);
  });

  it('after the retry time lets exactly one trial out, holds the other calls for it, and closes on success', async () => {
    const trial = heldReplies();
    const llm = await profilesWith(
      {
        respond: (request, index) => (index === 0 ? { error: { status: 503 } } : trial.respond(request, index)),
      },
      'max_in_flight: 4',
      { backoffBaseMs: 50, inlineWaitMs: 60_000 },
    );
    const changed: string[] = [];
    const unsubscribe = llm.subscribe((profile) => changed.push(profile));
    const first = llm().chat(ask('first'));
    await until(() => expect(llm.status()[0]?.breaker.consecutiveFailures).toBe(1));
    const others = [llm().chat(ask('second')), llm().chat(ask('third'))];
    await until(() => expect(llm.status()[0]?.breaker.state).toBe('half_open'));
    await until(() => expect(llm.status()[0]).toMatchObject({ inFlight: 1, waiting: 2 }));
    // The trial is on its way; the two others stay in the gate's queue until it is answered.
    await until(() => expect(server?.requests).toHaveLength(2));
    expect(llm.status()[0]).toMatchObject({ inFlight: 1, waiting: 2 });
    expect(contentOf(1)).toBe('first');
    expect(llm.availability('default')).toMatchObject({ available: false });
    trial.release();
    await Promise.all([first, ...others]);
    expect(server?.requests).toHaveLength(4);
    const [status] = llm.status();
    expect(status).toMatchObject({ requests: 4, failures: 1, inFlight: 0, waiting: 0 });
    expect(status?.breaker).toMatchObject({ state: 'closed', consecutiveFailures: 0 });
    expect(llm.availability('default')).toEqual({ available: true });
    expect(new Set(changed)).toEqual(new Set(['default']));
    unsubscribe();
  });

  it('opens the breaker once when several requests out at once fail, not once each', async () => {
    const held = heldReplies(() => ({ error: { status: 502 } }));
    const llm = await profilesWith({ respond: held.respond }, 'max_in_flight: 4, max_retries: 4', {
      backoffBaseMs: 600_000,
      inlineWaitMs: 0,
    });
    const calls = [0, 1, 2, 3].map((index) =>
      llm()
        .chat(ask(`call ${index}`))
        .catch((caught: unknown) => caught),
    );
    await until(() => expect(server?.inFlight).toBe(4));
    held.release();
    for (const error of await Promise.all(calls)) expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(server?.requests).toHaveLength(4);
    expect(llm.status()[0]).toMatchObject({ failures: 4, breaker: { state: 'open', consecutiveFailures: 1 } });
  });

  it("keeps the breaker open until a 429's retry-after", async () => {
    const llm = await profilesWith({ replies: [{ error: { status: 429, retryAfterSeconds: 120 } }] }, '', {
      backoffBaseMs: 10,
    });
    const before = Date.now();
    const error = await llm()
      .chat(ask('hi'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect((error as ModelUnavailableError).retryAtMs).toBeGreaterThanOrEqual(before + 120_000);
    expect(server?.requests).toHaveLength(1);
    expect(llm.status()[0]?.breaker).toMatchObject({ state: 'open', consecutiveFailures: 1 });
  });

  it('throws LLM_UNAVAILABLE, not LLM_REQUEST_FAILED, once max_retries unavailability failures are spent', async () => {
    const llm = await profilesWith(
      { replies: [{ error: { status: 500 } }, { error: { status: 503 } }, { error: { status: 500 } }] },
      'max_retries: 2',
      { backoffBaseMs: 5, inlineWaitMs: 60_000 },
    );
    const error = await llm()
      .chat(ask('hi'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ModelUnavailableError);
    expect(server?.requests).toHaveLength(3);
    expect(llm.status()[0]?.breaker).toMatchObject({ state: 'open', consecutiveFailures: 3 });
  });

  it('fails a 400 at once with LLM_REQUEST_FAILED and leaves the breaker closed', async () => {
    const llm = await profilesWith({ replies: [{ error: { status: 400, message: 'bad schema' } }] });
    const error = await llm()
      .chat(ask('hi'))
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).status).toBe(400);
    expect(server?.requests).toHaveLength(1);
    expect(llm.status()[0]).toMatchObject({ requests: 1, failures: 0, breaker: { state: 'closed' } });
    expect(llm.availability('default')).toEqual({ available: true });
  });

  it('restarts a stream that broke off through the breaker, and answers in full', async () => {
    const llm = await profilesWith(
      { replies: [{ text: 'one two three four', breakAfterChunks: 2 }, { text: 'one two three four' }] },
      '',
      { backoffBaseMs: 5 },
    );
    const deltas: ChatDelta[] = [];
    const response = await llm().chat(ask('hi'), { onDelta: (delta) => deltas.push(delta) });
    expect(response.message.content).toBe('one two three four');
    expect(deltas.filter((delta) => delta.restart)).toHaveLength(1);
    const afterRestart = deltas.slice(deltas.findIndex((delta) => delta.restart) + 1);
    expect(afterRestart.map((delta) => delta.text).join('')).toBe('one two three four');
    expect(llm.status()[0]).toMatchObject({ failures: 1, breaker: { state: 'closed', consecutiveFailures: 0 } });
  });

  it('reports requests, tokens and latency; a profile never used reports zeros', async () => {
    const llm = await profilesWith({
      replies: [
        { text: 'a', usage: { prompt: 7, completion: 3 } },
        { text: 'b', usage: { prompt: 7, completion: 3 } },
      ],
    });
    await llm().chat(ask('one'));
    await llm().chat(ask('two'));
    expect(llm.status()).toEqual([
      {
        profile: 'default',
        model: 'fake-model',
        // No max_in_flight: the adaptive limit, at 1 until a window of answers says more fit.
        maxInFlight: 1,
        adaptive: { ceiling: 64 },
        inFlight: 0,
        waiting: 0,
        requests: 2,
        failures: 0,
        requestsLastMinute: 2,
        tokensLastMinute: 20,
        latencyMs: expect.any(Number),
        breaker: { state: 'closed', consecutiveFailures: 0 },
      },
      {
        profile: 'other',
        model: 'big-model',
        maxInFlight: 1,
        adaptive: { ceiling: 64 },
        inFlight: 0,
        waiting: 0,
        requests: 0,
        failures: 0,
        requestsLastMinute: 0,
        tokensLastMinute: 0,
        latencyMs: null,
        breaker: { state: 'closed', consecutiveFailures: 0 },
      },
    ]);
    expect(llm.limits().sort((left, right) => left.profile.localeCompare(right.profile))).toEqual([
      { profile: 'default', maxInFlight: 1, adaptive: { ceiling: 64 } },
      { profile: 'other', maxInFlight: 1, adaptive: { ceiling: 64 } },
    ]);
  });
});

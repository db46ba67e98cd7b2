import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { type ChatRequest, type ChatResponse, createRecordReplayFetch } from '@assistant/llm';
import { FakeAnthropicServer } from '@assistant/llm/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ModelFactory, recordLlmFixtures, type ScenarioSuite } from '../scripts/record-llm-fixtures.ts';

const run = promisify(execFile);
const script = path.join(import.meta.dirname, '..', 'scripts', 'record-llm-fixtures.ts');

let directory: string;
let fake: FakeAnthropicServer | undefined;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-fixtures-record-'));
});

afterEach(async () => {
  await fake?.close();
  fake = undefined;
  await rm(directory, { recursive: true, force: true });
});

const apiKey = 'sk-ant-api03-RecordScriptDistinctiveKey-42';

/**
 * A minimal Anthropic model over plain fetch, standing in for the adapters' createProviderChatModel (written on
 * another branch): it sends the Messages request a profile would, streamed, through the fetch it is given.
 */
const plainAnthropicModel: ModelFactory = (options) => ({
  name: options.name,
  model: options.model,
  provider: options.provider,
  contextWindow: 200_000,
  async chat(request: ChatRequest): Promise<ChatResponse> {
    const system = request.messages.find((message) => message.role === 'system')?.content;
    const response = await options.fetch(`${options.baseUrl}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': options.apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: options.model,
        max_tokens: 256,
        stream: true,
        ...(system === undefined ? {} : { system }),
        messages: request.messages
          .filter((message) => message.role !== 'system')
          .map((message) => ({ role: message.role, content: message.content })),
      }),
    });
    const text = await response.text();
    const content = [...text.matchAll(/"text":"([^"]*)"/g)].map((match) => match[1]).join('');
    return { message: { role: 'assistant', content, toolCalls: [] }, finishReason: 'stop', model: options.model };
  },
});

/** A suite of two scenarios that each ask one question. */
const suite: ScenarioSuite = {
  names: ['greet', 'farewell'],
  models: { anthropic: 'claude-sonnet-4-5' },
  run: async (name, model) => {
    const response = await model.chat({
      messages: [
        {
          role: 'system',
          content: 'You are brief.\n\nCurrent time: 2026-11-28T05:00:00+01:00 (Saturday), time zone UTC.',
        },
        { role: 'user', content: name === 'greet' ? 'Say hello' : 'Say goodbye' },
      ],
    });
    const ok = (response.message.content ?? '') !== '';
    return { ok, checks: [{ name: 'answered', ok, detail: response.message.content ?? '' }] };
  },
};

describe('npm run fixtures:record', () => {
  it('records each scenario against the provider at --base-url into <directory>/<provider>/, scrubbed, replayable', async () => {
    fake = await FakeAnthropicServer.start({
      apiKey,
      respond: (request) => ({
        text: JSON.stringify(request.body?.messages).includes('hello') ? 'Hello!' : 'Goodbye!',
      }),
    });
    const lines: string[] = [];
    const results = await recordLlmFixtures({
      provider: 'anthropic',
      baseUrl: fake.url,
      directory,
      environment: { ANTHROPIC_API_KEY: apiKey },
      suite,
      createModel: plainAnthropicModel,
      log: (line) => lines.push(line),
    });

    expect(results.map((result) => [result.scenario, result.ok])).toEqual([
      ['greet', true],
      ['farewell', true],
    ]);
    expect(lines).toEqual(['anthropic greet: ok', 'anthropic farewell: ok']);
    const files = (await readdir(path.join(directory, 'anthropic'))).sort();
    expect(files).toHaveLength(2);
    expect(files[0]).toMatch(/^farewell-[0-9a-f]{12}\.json$/);
    expect(files[1]).toMatch(/^greet-[0-9a-f]{12}\.json$/);
    for (const file of files) {
      const text = await readFile(path.join(directory, 'anthropic', file), 'utf8');
      expect(text).not.toContain(apiKey);
      expect(JSON.parse(text).source).toMatch(/^Recorded from the anthropic API \(claude-sonnet-4-5\)/);
      expect(JSON.parse(text).response.chunks.length).toBeGreaterThan(0);
    }
    await fake.close();
    fake = undefined;

    // What was recorded replays with the network off.
    const replayed = await suite.run(
      'greet',
      plainAnthropicModel({
        provider: 'anthropic',
        name: 'replay',
        model: 'claude-sonnet-4-5',
        baseUrl: 'http://127.0.0.1:1/v1',
        apiKey: 'other',
        maxRetries: 0,
        fetch: createRecordReplayFetch({
          mode: 'replay',
          directory,
          provider: 'anthropic',
          fetch: (async () => {
            throw new Error('network');
          }) as typeof fetch,
        }),
      }),
      {},
    );
    expect(replayed.checks[0]?.detail).toBe('Hello!');
  });

  it('records only the scenarios named with --scenario, and refuses an unknown one', async () => {
    fake = await FakeAnthropicServer.start({ replies: [{ text: 'Hello!' }] });
    const options = {
      provider: 'anthropic' as const,
      baseUrl: fake.url,
      directory,
      environment: { ANTHROPIC_API_KEY: apiKey },
      suite,
      createModel: plainAnthropicModel,
    };
    await recordLlmFixtures({ ...options, scenarios: ['greet'] });
    expect(await readdir(path.join(directory, 'anthropic'))).toEqual([expect.stringMatching(/^greet-/)]);
    await expect(recordLlmFixtures({ ...options, scenarios: ['greet', 'dance'] })).rejects.toThrow(
      'Unknown --scenario "dance"; expected one of greet, farewell.',
    );
  });

  it('skips the provider-switch scenario when the second provider has no key', async () => {
    fake = await FakeAnthropicServer.start({ replies: [{ text: 'Hello!' }] });
    const switching: ScenarioSuite = {
      ...suite,
      names: ['greet', 'switch'],
      switchScenario: 'switch',
      switchTargets: { anthropic: 'google' },
      models: { anthropic: 'claude-sonnet-4-5', google: 'gemini-2.5-flash' },
    };
    const results = await recordLlmFixtures({
      provider: 'anthropic',
      baseUrl: fake.url,
      directory,
      environment: { ANTHROPIC_API_KEY: apiKey },
      suite: switching,
      createModel: plainAnthropicModel,
    });
    expect(results[1]).toMatchObject({ scenario: 'switch', skipped: expect.stringContaining('GEMINI_API_KEY') });
  });

  it('says which variable to set when the key is missing, and which providers exist', async () => {
    const environment = { ...process.env, ANTHROPIC_API_KEY: '', PATH: process.env.PATH ?? '' };
    const missing = await run(process.execPath, [script, '--provider', 'anthropic'], { env: environment }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(missing).toMatchObject({ code: 2 });
    expect((missing as { stderr: string }).stderr).toContain('set ANTHROPIC_API_KEY');
    const unknown = await run(process.execPath, [script, '--provider', 'claude'], { env: environment }).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(unknown).toMatchObject({ code: 2 });
    expect((unknown as { stderr: string }).stderr).toContain(
      'Unknown --provider "claude"; expected one of openai-compatible, openai, anthropic, google.',
    );
  });
});

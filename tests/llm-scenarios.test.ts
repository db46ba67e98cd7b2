import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type ChatModel,
  createProviderChatModel,
  createRecordReplayFetch,
  findReplayMiss,
  ReplayMissError,
  type TokenUsage,
} from '@assistant/llm';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ScenarioProvider, scenarioProviders } from './llm-scenarios/scenario-exchanges.ts';
import {
  agentCodeProgram,
  expectedAnswers,
  runScenario,
  scenarioNames,
  switchTargets,
} from './llm-scenarios/scenarios.ts';

const fixtures = path.join(import.meta.dirname, 'fixtures', 'llm');
const providers = Object.keys(scenarioProviders) as ScenarioProvider[];

/** The network is off: a request that has no fixture must never leave the process. */
const networkAttempts: string[] = [];
const networkOff = (async (input: string | URL | Request) => {
  networkAttempts.push(String(input));
  throw new Error(`The scenario suite is offline; something tried to reach ${String(input)}`);
}) as typeof fetch;

/** A model of `provider` whose every request is answered from tests/fixtures/llm/<provider>/, or fails. */
function replayModel(provider: ScenarioProvider): ChatModel {
  return createProviderChatModel({
    provider,
    name: 'scenario',
    model: scenarioProviders[provider].model,
    // Never reached: the base URL is not part of a fixture's key, and the fetch under the transport throws.
    baseUrl: 'http://fixtures.invalid/v1',
    apiKey: 'replay-key',
    maxRetries: 0,
    fetch: createRecordReplayFetch({ mode: 'replay', directory: fixtures, provider, fetch: networkOff }),
  });
}

/**
 * The usage of the chat-tool-stream calls as the captures report it (the builder keeps their usage frames): the
 * adapters' mapping of each provider's fields, cached and thinking tokens included, on real answers.
 */
const capturedChatUsage: Record<ScenarioProvider, TokenUsage[]> = {
  anthropic: [
    { promptTokens: 565, completionTokens: 48, totalTokens: 613 },
    { promptTokens: 12, completionTokens: 30, totalTokens: 42 },
  ],
  google: [
    { promptTokens: 29, completionTokens: 60, totalTokens: 89, reasoningTokens: 45 },
    { promptTokens: 9, completionTokens: 208, totalTokens: 217, reasoningTokens: 185 },
  ],
  'openai-compatible': [
    { promptTokens: 339, completionTokens: 83, totalTokens: 422, cachedPromptTokens: 320, reasoningTokens: 39 },
    { promptTokens: 18, completionTokens: 219, totalTokens: 237, reasoningTokens: 205 },
  ],
};

/** Whether every fixture of `provider` was built from the AI SDK's captures (its `source` says so). */
async function builtFromCaptures(provider: ScenarioProvider): Promise<boolean> {
  const directory = path.join(fixtures, provider);
  for (const name of (await readdir(directory)).filter((file) => file.endsWith('.json'))) {
    const fixture = JSON.parse(await readFile(path.join(directory, name), 'utf8')) as { source?: unknown };
    const source = fixture.source as { repository?: unknown } | undefined;
    if (source?.repository !== 'https://github.com/vercel/ai') return false;
  }
  return true;
}

function pinClock(): void {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date('2026-03-02T09:00:00Z'));
}

describe('the LLM scenario suite, replayed from recorded fixtures with the network off', () => {
  let startedAt = 0;
  beforeAll(() => {
    startedAt = performance.now();
    // Time awareness puts the current time in every system prompt; the transport leaves that line out of the key,
    // and the clock is pinned anyway so a replay sends what was recorded.
    pinClock();
  });
  afterAll(() => {
    vi.useRealTimers();
    // Not even the changed request below reached the fetch under the transport.
    expect(networkAttempts).toEqual([]);
    console.log(`LLM scenario suite: ${Math.round(performance.now() - startedAt)} ms`);
  });

  for (const provider of providers) {
    describe(provider, () => {
      for (const scenario of scenarioNames) {
        it(`passes ${scenario}`, async () => {
          // agent-code runs its cell on the pinned clock too: the sandbox's deadline is kept on its worker thread's
          // monotonic clock, never compared with this thread's Date.
          const outcome = await runScenario(
            scenario,
            replayModel(provider),
            scenario === 'provider-switch' ? { next: replayModel(switchTargets[provider]) } : {},
          );

          expect(outcome.checks.filter((check) => !check.ok)).toEqual([]);
          // The built fixtures' answers are known word for word; a real recording (fixtures:record) words its own.
          if (await builtFromCaptures(provider)) {
            expect(outcome.result).toEqual(expectedAnswers[scenario]);
            if (scenario === 'chat-tool-stream') {
              expect(outcome.calls.map((call) => call.response.usage)).toEqual(capturedChatUsage[provider]);
            }
            // The recorded program arrives whole as run_code's argument, through each adapter's tool-call parsing.
            if (scenario === 'agent-code') {
              const [toolCall] = outcome.calls[0]?.response.message.toolCalls ?? [];
              expect(toolCall?.name).toBe('run_code');
              expect(JSON.parse(toolCall?.arguments ?? '{}')).toEqual({ code: agentCodeProgram });
            }
          }
          // Every streamed call arrived in pieces, as the provider's frames carried it.
          for (const [index, call] of outcome.calls.entries()) {
            if (call.streamed && (call.response.message.content ?? '') !== '') {
              expect(outcome.deltas[index]?.join('')).toBe(call.response.message.content);
            }
          }
        });
      }
    });
  }

  // A replay only proves the adapter asked what it asked when the fixture was built; what it asked is in the file.
  it('hands the whole history over in provider-switch: the first provider gets its thinking back, the next the conversation without it', async () => {
    for (const provider of providers) {
      // The provider-switch requests recorded under this provider (by the builder or fixtures:record): call 3 is the
      // one with the owner's second question, call 2 the longest of the others.
      const directory = path.join(fixtures, provider);
      const requests: string[] = [];
      for (const name of (await readdir(directory)).filter((file) => file.startsWith('provider-switch'))) {
        const fixture = JSON.parse(await readFile(path.join(directory, name), 'utf8')) as { request: unknown };
        requests.push(JSON.stringify(fixture.request));
      }
      const afterQuestion = 'Should I run in the afternoon instead?';
      const third = requests.find((request) => request.includes(afterQuestion));
      const second = requests
        .filter((request) => !request.includes(afterQuestion))
        .sort((a, b) => b.length - a.length)[0];
      if (third === undefined || second === undefined) throw new Error(`${provider}: provider-switch fixtures missing`);
      // Call 2 on the first provider: its own thinking, with its signature, goes back to it.
      expect(second, provider).toContain('light rain');
      if (provider === 'anthropic') expect(second).toContain('"type":"thinking"');
      if (provider === 'anthropic') expect(second).toMatch(/"signature":"[A-Za-z0-9+/=]{40,}"/);
      if (provider === 'google') expect(second).toContain('"thought":true');
      if (provider === 'google') expect(second).toMatch(/"thoughtSignature":"[A-Za-z0-9+/=]{40,}"/);
      // Call 3 on the provider switched to: every turn, the tool call and its result, and no foreign thinking.
      for (const part of [
        'Will it rain in Lisbon tomorrow morning?',
        'get_forecast',
        'light rain',
        ...((await builtFromCaptures(provider)) ? [expectedAnswers['provider-switch'][0]] : []),
        afterQuestion,
      ]) {
        expect(third, `${provider}: provider-switch-after has ${part}`).toContain(part);
      }
      // (Gemini 3 takes a call without its signature only with the documented placeholder.)
      expect(third, provider).not.toContain('"type":"thinking"');
      expect(third, provider).not.toContain('"thought":true');
      expect(third, provider).not.toMatch(/"(signature|thoughtSignature)":"(?!skip_thought_signature_validator)/);
    }
  });

  it('fails a changed request loudly with ReplayMissError naming its key and the closest fixture', async () => {
    const model = replayModel('anthropic');
    // The email classify scenario with one word of the message changed.
    const changed: ChatModel = {
      ...model,
      chat: (request, options) =>
        model.chat(
          {
            ...request,
            messages: request.messages.map((message) =>
              message.role === 'user'
                ? { ...message, content: message.content.replace('Thursday', 'Friday') }
                : message,
            ),
          },
          options,
        ),
    };

    const error = await runScenario('email-classify', changed).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );

    const miss = findReplayMiss(error);
    expect(miss, `expected a ReplayMissError, got ${String(error)}`).toBeInstanceOf(ReplayMissError);
    expect(miss?.message).toContain(miss?.key ?? 'a key');
    const closest = path.relative(fixtures, miss?.closest?.file ?? '');
    expect(closest).toMatch(/^anthropic\/email-classify-[0-9a-f]{12}\.json$/);
    expect(miss?.message).toContain(`Closest fixture: ${miss?.closest?.file}`);
    expect(miss?.closest?.difference?.requested).toEqual(expect.stringContaining('Friday'));
  });
});

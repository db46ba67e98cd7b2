import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createProviderChatModel, withCurrentMintedValues } from '@assistant/llm';
import { FakeAnthropicServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import { loadScenarioSuite, recordLlmFixtures } from '../scripts/record-llm-fixtures.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { buildScenarioFixtures } from './llm-scenarios/build-fixtures.ts';
import { buildTeamFixtures } from './llm-scenarios/build-team-fixtures.ts';
import { scenarioExchanges, scenarioProviders } from './llm-scenarios/scenario-exchanges.ts';

const root = path.resolve(import.meta.dirname, '..');
const fixtures = path.join(root, 'tests', 'fixtures', 'llm');
const providers = Object.keys(scenarioProviders);
const upstream = 'https://github.com/vercel/ai';

/** Every fixture file of the committed set, by `<provider>/<name>`, with its parsed content. */
async function readFixtures(directory: string): Promise<Map<string, Record<string, unknown>>> {
  const files = new Map<string, Record<string, unknown>>();
  for (const provider of providers) {
    const names = await readdir(path.join(directory, provider)).catch(() => [] as string[]);
    for (const name of names.filter((candidate) => candidate.endsWith('.json')).sort()) {
      const text = await readFile(path.join(directory, provider, name), 'utf8');
      files.set(`${provider}/${name}`, JSON.parse(text) as Record<string, unknown>);
    }
  }
  return files;
}

/**
 * The providers whose committed fixtures were all built from the captures. An owner may replace a provider's with
 * real recordings (`npm run fixtures:record`); the builder's tests then leave that provider alone.
 */
function builtProviders(committed: Map<string, Record<string, unknown>>): string[] {
  return providers.filter((provider) =>
    [...committed.entries()]
      .filter(([name]) => name.startsWith(`${provider}/`))
      .every(([, fixture]) => (fixture.source as { repository?: unknown } | undefined)?.repository === upstream),
  );
}
// When each fixture was written is the only other thing a rebuild changes.
function withoutRecordedAt(fixture: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (fixture === undefined) return undefined;
  const { recorded_at: _recordedAt, ...rest } = fixture;
  return rest;
}

/**
 * A rebuilt fixture of an agent scenario holds the values its run minted (ids, clock readings) where the committed one
 * holds those of its own build: given the committed values, as a replay gives a recording the values of the run
 * replaying it, it must then be the committed fixture.
 */
function withMintedValuesOf(
  built: Record<string, unknown>,
  committed: Record<string, unknown> | undefined,
): Record<string, unknown> {
  type Minted = {
    request: { minted?: Record<string, string> };
    response: Parameters<typeof withCurrentMintedValues>[0];
  };
  const from = (built as Minted).request.minted;
  const to = (committed as Minted | undefined)?.request.minted;
  if (from === undefined || to === undefined) return built;
  return {
    ...built,
    request: { ...(built.request as object), minted: to },
    response: withCurrentMintedValues((built as Minted).response, from, to),
  };
}

describe('the LLM scenario fixtures', () => {
  it('are what the builder makes from the real captures, offline (npm run fixtures:build)', async () => {
    await using directory = await tempDir();
    await buildScenarioFixtures({ directory: directory.path });
    await buildTeamFixtures({ directory: directory.path });

    const committed = await readFixtures(fixtures);
    const compared = builtProviders(committed);
    const only = (files: Map<string, Record<string, unknown>>) =>
      new Map([...files].filter(([name]) => compared.some((provider) => name.startsWith(`${provider}/`))));
    const built = only(await readFixtures(directory.path));
    expect([...only(committed).keys()]).toEqual([...built.keys()]);
    for (const [name, fixture] of built) {
      expect(withoutRecordedAt(committed.get(name)), name).toEqual(
        withoutRecordedAt(withMintedValuesOf(fixture, committed.get(name))),
      );
    }
  });

  // The suite replays what an owner records with keys only if `fixtures:record` sends what the builder sent.
  it('are keyed as npm run fixtures:record asks, so a real recording replays in the suite', async (context) => {
    if (!builtProviders(await readFixtures(fixtures)).includes('anthropic')) {
      context.skip('the anthropic fixtures are real recordings');
    }
    await using directory = await tempDir();
    const recorded = ['email-classify', 'chat-tool-stream', 'agent-two-tools', 'agent-code'] as const;
    const answers = recorded.flatMap((scenario) => scenarioExchanges('anthropic', scenario));
    await using fake = await FakeAnthropicServer.start({
      respond: (request, index) => {
        const answer = answers[index];
        if (answer === undefined) throw new Error(`request ${index + 1} was not expected`);
        return answer({ body: request.body }).reply;
      },
    });

    const results = await recordLlmFixtures({
      provider: 'anthropic',
      baseUrl: fake.url,
      scenarios: recorded,
      directory: directory.path,
      environment: { ANTHROPIC_API_KEY: 'fixture-record-key' },
      suite: await loadScenarioSuite(),
      createModel: createProviderChatModel,
    });

    expect(results.map((result) => [result.scenario, result.ok])).toEqual(recorded.map((name) => [name, true]));
    const keysOf = (files: Map<string, Record<string, unknown>>) =>
      [...files.entries()]
        .filter(([name]) => recorded.some((scenario) => name.startsWith(`anthropic/${scenario}-`)))
        .map(([, fixture]) => fixture.key)
        .sort();
    expect(keysOf(await readFixtures(directory.path))).toEqual(keysOf(await readFixtures(fixtures)));
  });

  it('each cite the capture they were built from, which is kept in the repository, keep streams event by event, and hold no key', async () => {
    const committed = await readFixtures(fixtures);
    const cited = builtProviders(committed);
    expect(committed.size).toBeGreaterThanOrEqual(27);
    for (const [name, fixture] of committed) {
      if (!cited.some((provider) => name.startsWith(`${provider}/`))) {
        // A real recording names where it came from in a sentence (fixtures:record).
        expect(fixture.source, name).toEqual(expect.any(String));
        continue;
      }
      const source = fixture.source as { repository?: string; path?: string; commit?: string; copy?: string };
      expect(source, name).toMatchObject({
        repository: upstream,
        commit: 'ed857f50f112e23930b0c2dd8d532cc8bebbc911',
        edited: expect.any(String),
      });
      expect(source.path, name).toMatch(/^packages\/[a-z-]+\/src\/.*__fixtures__\//);
      const copy = (source.copy ?? '').replace(/ \(.*\)$/, '');
      expect(existsSync(path.join(root, copy)), `${name} cites ${copy}`).toBe(true);
      // A stream is kept chunk by chunk: one server-sent event each, as the capture held them.
      const chunks = (fixture.response as { chunks?: string[] }).chunks;
      if (chunks !== undefined) {
        expect(chunks.length, name).toBeGreaterThan(1);
        for (const chunk of chunks) expect(chunk, name).toMatch(/^data: [\s\S]*(\r\n\r\n|\n\n)$|^event: /);
      }
      // The builder's API key went to the fakes in headers; the transport must have scrubbed it.
      expect(JSON.stringify(fixture), name).not.toContain('fixture-builder-key');
    }
  });
});

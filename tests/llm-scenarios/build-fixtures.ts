import { type ChatModel, createProviderChatModel, createRecordReplayFetch } from '@assistant/llm';
import { FakeAnthropicServer, FakeGeminiServer, type FakeProviderReply } from '@assistant/llm/testing';
import type { AdaptedExchange, CaptureCitation } from './adapt-captures.ts';
import { startRawOpenAiServer } from './raw-openai-server.ts';
import {
  type ExchangeBuilder,
  type ScenarioProvider,
  scenarioExchanges,
  scenarioProviders,
} from './scenario-exchanges.ts';
import { runScenario, type ScenarioName, type ScenarioOutcome, scenarioNames, switchTargets } from './scenarios.ts';

/** The API key the fixtures are built with; the transport scrubs it, and the fakes want one. */
const builderApiKey = 'fixture-builder-key';

export interface BuildFixturesOptions {
  /** The fixtures' root: files go to `<directory>/<provider>/`. */
  directory: string;
  /** @default every provider */
  providers?: readonly ScenarioProvider[];
  /** @default every scenario */
  scenarios?: readonly ScenarioName[];
  /** Told about each scenario as it finishes. */
  onScenario?: (provider: ScenarioProvider, outcome: ScenarioOutcome) => void;
}

/**
 * Builds the scenario fixtures from the real captures: each provider's fake server sends the adapted capture of
 * each exchange as raw events (or a raw body), the scenario runs through the real adapter, and the record/replay
 * transport in `record` mode writes what passed through it. So a fixture is keyed exactly as a replay will ask, and
 * holds the capture's frames chunk by chunk. Throws when a scenario's checks fail, naming them: the build stops
 * there, and what it wrote for that scenario does not pass its own scenario (fix the answers, rebuild).
 */
export async function buildScenarioFixtures(options: BuildFixturesOptions): Promise<ScenarioOutcome[]> {
  const outcomes: ScenarioOutcome[] = [];
  for (const provider of options.providers ?? (Object.keys(scenarioProviders) as ScenarioProvider[])) {
    for (const scenario of options.scenarios ?? scenarioNames) {
      await using first = await serveExchanges(provider, scenario, options.directory);
      const target = switchTargets[provider];
      await using second =
        scenario === 'provider-switch'
          ? await serveExchanges(target, 'provider-switch/after', options.directory)
          : undefined;
      const outcome = await runScenario(scenario, first.model, second === undefined ? {} : { next: second.model });
      first.assertAllServed();
      second?.assertAllServed();
      options.onScenario?.(provider, outcome);
      if (!outcome.ok) {
        const failed = outcome.checks.filter((check) => !check.ok);
        throw new Error(
          `Scenario ${scenario} on ${provider} fails on its own fixtures: ${failed.map((check) => `${check.name} (${check.detail})`).join('; ')}`,
        );
      }
      outcomes.push(outcome);
    }
  }
  return outcomes;
}

interface ServedExchanges extends AsyncDisposable {
  model: ChatModel;
  assertAllServed(): void;
}

/** A fake server for `provider` that answers the scenario's exchanges in order, and a recording model over it. */
async function serveExchanges(
  provider: ScenarioProvider,
  scenario: ScenarioName | 'provider-switch/after',
  directory: string,
): Promise<ServedExchanges> {
  const builders: ExchangeBuilder[] = scenarioExchanges(provider, scenario);
  const sources: CaptureCitation[] = [];
  const next = (body: Record<string, unknown> | undefined, index: number): AdaptedExchange => {
    const builder = builders[index];
    if (builder === undefined) {
      throw new Error(`${provider} ${scenario}: request ${index + 1} was not expected (${builders.length} built)`);
    }
    const exchange = builder({ body });
    sources.push(exchange.source);
    return exchange;
  };
  let baseUrl: string;
  let close: () => Promise<void>;
  if (provider === 'openai-compatible') {
    const server = await startRawOpenAiServer({ respond: (body, index) => next(body, index).reply });
    baseUrl = server.url;
    close = () => server.close();
  } else {
    const respond = (request: { body: Record<string, unknown> | undefined }, index: number): FakeProviderReply =>
      next(request.body, index).reply;
    const server =
      provider === 'anthropic'
        ? await FakeAnthropicServer.start({ respond })
        : await FakeGeminiServer.start({ respond });
    baseUrl = server.url;
    close = () => server.close();
  }
  const fetch = createRecordReplayFetch({
    mode: 'record',
    directory,
    provider,
    fetch: eventPerChunkFetch,
    apiKey: builderApiKey,
    // Files are named by scenario (`agent-two-tools-<key>.json`), and each cites the capture it was built from.
    label: scenario.replace('/', '-'),
    source: () => sources.at(-1),
  });
  const model = createProviderChatModel({
    provider,
    name: 'scenario',
    model: scenarioProviders[provider].model,
    baseUrl,
    apiKey: builderApiKey,
    fetch,
    maxRetries: 0,
  });
  return {
    model,
    assertAllServed: () => {
      if (sources.length !== builders.length) {
        throw new Error(
          `${provider} ${scenario}: ${sources.length} of ${builders.length} built answers were asked for`,
        );
      }
    },
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The fetch under the transport while building: a stream arrives one server-sent event per chunk, as the captures
 * hold it (one event a line), so the fixtures keep the provider's framing and a replay delivers the events one by
 * one. Over loopback the fakes' writes would otherwise arrive merged into a chunk or two, differently from run to
 * run.
 */
export const eventPerChunkFetch: typeof fetch = async (input, init) => {
  const response = await fetch(input, init);
  if (!(response.headers.get('content-type') ?? '').includes('text/event-stream') || response.body === null) {
    return response;
  }
  const text = await response.text();
  const events = text.match(/[\s\S]*?(?:\r\n\r\n|\n\n)|[\s\S]+$/g) ?? [];
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const event of events) controller.enqueue(encoder.encode(event));
      controller.close();
    },
  });
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  headers.delete('content-encoding');
  return new Response(body, { status: response.status, statusText: response.statusText, headers });
};

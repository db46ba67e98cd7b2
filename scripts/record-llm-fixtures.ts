// `npm run fixtures:record -- --provider anthropic [--base-url URL] [--scenario NAME] [--model ID]`: runs the LLM
// scenario suite (tests/llm-scenarios/) against a real provider with the record/replay transport in `record` mode,
// writing one fixture per exchange into tests/fixtures/llm/<provider>/. The key comes from the environment:
// ANTHROPIC_API_KEY, GEMINI_API_KEY (or GOOGLE_GENERATIVE_AI_API_KEY), OPENAI_API_KEY (openai and
// openai-compatible). See tests/fixtures/llm/README.md, "Re-recording them against the real providers".
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type ChatModel, createRecordReplayFetch, type ProviderKind, providerKinds } from '@assistant/llm';

const root = path.resolve(import.meta.dirname, '..');

/** The environment variables a provider's key is read from, first found wins. */
export const apiKeyVariables: Record<ProviderKind, readonly string[]> = {
  anthropic: ['ANTHROPIC_API_KEY'],
  google: ['GEMINI_API_KEY', 'GOOGLE_GENERATIVE_AI_API_KEY'],
  openai: ['OPENAI_API_KEY'],
  'openai-compatible': ['OPENAI_API_KEY'],
};

/** What a scenario run reports; the shape of tests/llm-scenarios/scenarios.ts `ScenarioOutcome`, as far as used. */
export interface ScenarioRunOutcome {
  ok: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
}

/**
 * The scenario suite this script records, as a small interface so the suite (h32-scenarios' tests/llm-scenarios/)
 * plugs in without the script knowing its internals, and a test can give a suite of its own.
 */
export interface ScenarioSuite {
  /** Every scenario, in the order they are recorded. */
  names: readonly string[];
  /** The model each provider's fixtures are recorded with: the replay suite asks for the same one. */
  models: Partial<Record<ProviderKind, string>>;
  /** A scenario that switches provider mid-way, and the provider each provider hands over to. */
  switchScenario?: string;
  switchTargets?: Partial<Record<ProviderKind, ProviderKind>>;
  run(name: string, model: ChatModel, options: { next?: ChatModel; signal?: AbortSignal }): Promise<ScenarioRunOutcome>;
}

/** Makes a profile's model; the adapters' `createProviderChatModel` by default. */
export type ModelFactory = (options: {
  provider: ProviderKind;
  name: string;
  model: string;
  baseUrl?: string;
  apiKey: string;
  fetch: typeof fetch;
  maxRetries: number;
}) => ChatModel;

/** The scenario suite of tests/llm-scenarios/, loaded when the script runs (it is test code, not a package). */
export async function loadScenarioSuite(): Promise<ScenarioSuite> {
  // Paths in variables: the suite is loaded at run time, so the script type-checks without it.
  const scenariosPath = path.join(root, 'tests', 'llm-scenarios', 'scenarios.ts');
  const exchangesPath = path.join(root, 'tests', 'llm-scenarios', 'scenario-exchanges.ts');
  const scenarios = (await import(pathToFileURL(scenariosPath).href)) as {
    scenarioNames: readonly string[];
    switchTargets: Partial<Record<ProviderKind, ProviderKind>>;
    runScenario: (
      name: string,
      model: ChatModel,
      options: { next?: ChatModel; signal?: AbortSignal },
    ) => Promise<ScenarioRunOutcome>;
  };
  const exchanges = (await import(pathToFileURL(exchangesPath).href)) as {
    scenarioProviders: Partial<Record<ProviderKind, { model: string }>>;
  };
  return {
    names: scenarios.scenarioNames,
    models: Object.fromEntries(
      Object.entries(exchanges.scenarioProviders).map(([provider, settings]) => [provider, settings?.model]),
    ),
    switchScenario: 'provider-switch',
    switchTargets: scenarios.switchTargets,
    run: (name, model, options) => scenarios.runScenario(name, model, options),
  };
}

/** The adapters' factory, found at run time in @assistant/llm. */
export async function loadModelFactory(): Promise<ModelFactory> {
  const llm: Record<string, unknown> = await import('@assistant/llm');
  const factory = llm.createProviderChatModel;
  if (typeof factory !== 'function') {
    throw new Error('@assistant/llm has no createProviderChatModel: the provider adapters are not built yet.');
  }
  return factory as ModelFactory;
}

export interface RecordFixturesOptions {
  provider: ProviderKind;
  /** @default the adapter's default base URL of the provider (required for openai-compatible) */
  baseUrl?: string;
  /** @default every scenario of the suite */
  scenarios?: readonly string[];
  /** @default the suite's model for the provider */
  model?: string;
  /** The fixtures' root; files go to `<directory>/<provider>/`. */
  directory: string;
  /** Where keys are read from (see {@link apiKeyVariables}). */
  environment: Record<string, string | undefined>;
  suite: ScenarioSuite;
  createModel: ModelFactory;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/** One scenario's result: recorded (its checks), or skipped and why. */
export interface RecordedScenario {
  scenario: string;
  ok: boolean;
  skipped?: string;
  checks: ScenarioRunOutcome['checks'];
}

/** A problem with the command line or the environment, reported without a stack. */
export class RecordUsageError extends Error {
  override name = 'RecordUsageError';
}

/** The provider's key from the environment, or a usage error naming the variables to set. */
export function apiKeyFor(provider: ProviderKind, environment: Record<string, string | undefined>): string {
  for (const variable of apiKeyVariables[provider]) {
    const value = environment[variable];
    if (value !== undefined && value.trim() !== '') return value.trim();
  }
  throw new RecordUsageError(
    `No API key for ${provider}: set ${apiKeyVariables[provider].join(' or ')} to record against the real provider.`,
  );
}

/**
 * Runs the suite's scenarios against `provider` in `record` mode and writes their fixtures. A scenario whose checks
 * fail still leaves its fixtures (they are what the provider answered); the result says which failed. The
 * provider-switch scenario needs the key of the provider it switches to as well, and is skipped without it.
 */
export async function recordLlmFixtures(options: RecordFixturesOptions): Promise<RecordedScenario[]> {
  const log = options.log ?? (() => {});
  const unknown = (options.scenarios ?? []).filter((name) => !options.suite.names.includes(name));
  if (unknown.length > 0) {
    throw new RecordUsageError(
      `Unknown --scenario ${unknown.map((name) => JSON.stringify(name)).join(', ')}; expected one of ${options.suite.names.join(', ')}.`,
    );
  }
  if (options.provider === 'openai-compatible' && options.baseUrl === undefined) {
    throw new RecordUsageError('--provider openai-compatible needs --base-url (e.g. https://api.deepseek.com/v1).');
  }
  const apiKey = apiKeyFor(options.provider, options.environment);
  const recordedAt = new Date().toISOString().slice(0, 10);
  let current = '';
  const modelOf = (provider: ProviderKind, key: string, baseUrl: string | undefined, model: string): ChatModel => {
    const source = `Recorded from the ${provider} API (${model}) with npm run fixtures:record on ${recordedAt}; not edited.`;
    const fetch = createRecordReplayFetch({
      mode: 'record',
      directory: options.directory,
      provider,
      apiKey: key,
      label: () => current,
      source,
    });
    return options.createModel({
      provider,
      name: `fixtures-${provider}`,
      model,
      ...(baseUrl === undefined ? {} : { baseUrl }),
      apiKey: key,
      fetch,
      maxRetries: 2,
    });
  };
  const model = options.model ?? options.suite.models[options.provider];
  if (model === undefined) {
    throw new RecordUsageError(`The scenario suite has no model for ${options.provider}; pass --model.`);
  }
  const first = modelOf(options.provider, apiKey, options.baseUrl, model);
  const results: RecordedScenario[] = [];
  for (const scenario of options.scenarios ?? options.suite.names) {
    options.signal?.throwIfAborted();
    current = scenario;
    let next: ChatModel | undefined;
    if (scenario === options.suite.switchScenario) {
      const target = options.suite.switchTargets?.[options.provider];
      const targetModel = target === undefined ? undefined : options.suite.models[target];
      let targetKey: string | undefined;
      try {
        targetKey = target === undefined ? undefined : apiKeyFor(target, options.environment);
      } catch (error) {
        if (!(error instanceof RecordUsageError)) throw error;
      }
      if (target === undefined || targetModel === undefined || targetKey === undefined) {
        const why = `it switches to ${target ?? 'another provider'}, whose key (${target ? apiKeyVariables[target].join(' or ') : '?'}) is not set`;
        log(`${options.provider} ${scenario}: skipped, ${why}`);
        results.push({ scenario, ok: true, skipped: why, checks: [] });
        continue;
      }
      // The second provider's base URL is its default: --base-url is for the provider being recorded.
      next = modelOf(target, targetKey, undefined, targetModel);
    }
    const outcome = await options.suite.run(scenario, first, {
      ...(next === undefined ? {} : { next }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    const failed = outcome.checks.filter((check) => !check.ok);
    log(
      `${options.provider} ${scenario}: ${outcome.ok ? 'ok' : `checks failed: ${failed.map((check) => `${check.name} (${check.detail})`).join('; ')}`}`,
    );
    results.push({ scenario, ok: outcome.ok, checks: outcome.checks });
  }
  return results;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      provider: { type: 'string' },
      'base-url': { type: 'string' },
      scenario: { type: 'string', multiple: true },
      model: { type: 'string' },
      directory: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(
      'npm run fixtures:record -- --provider anthropic|google|openai|openai-compatible [--base-url URL] [--scenario NAME]... [--model ID] [--directory DIR]',
    );
    return 0;
  }
  const provider = providerKinds.find((kind) => kind === values.provider);
  if (provider === undefined) {
    throw new RecordUsageError(
      `${values.provider === undefined ? 'Missing --provider' : `Unknown --provider ${JSON.stringify(values.provider)}`}; expected one of ${providerKinds.join(', ')}.`,
    );
  }
  // Checked before anything is loaded, so a missing key is said at once.
  apiKeyFor(provider, process.env);
  const directory = path.resolve(values.directory ?? path.join(root, 'tests', 'fixtures', 'llm'));
  const results = await recordLlmFixtures({
    provider,
    ...(values['base-url'] === undefined ? {} : { baseUrl: values['base-url'] }),
    ...(values.scenario === undefined ? {} : { scenarios: values.scenario }),
    ...(values.model === undefined ? {} : { model: values.model }),
    directory,
    environment: process.env,
    suite: await loadScenarioSuite(),
    createModel: await loadModelFactory(),
    log: (line) => console.log(line),
  });
  console.log(`Fixtures written under ${path.relative(process.cwd(), path.join(directory, provider)) || '.'}/`);
  return results.every((result) => result.ok) ? 0 : 1;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      if (error instanceof RecordUsageError) {
        console.error(error.message);
        process.exitCode = 2;
        return;
      }
      console.error(error);
      process.exitCode = 1;
    },
  );
}

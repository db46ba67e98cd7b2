import { durationSchema, type QueueConfig, type QueuePolicy, queueSchema } from '@assistant/queue';
import * as z from 'zod';
import { machineTimeZone } from './machine-time-zone.ts';
import { mcpServerSchema } from './mcp-servers-schema.ts';
import { type Schedule, validateCron } from './schedule.ts';
import { Secret } from './secret.ts';
import { refuseUrlCredentials } from './url-credentials.ts';
import { Yolo } from './yolo.ts';
import { recordSchemas } from './zod-problems.ts';

// Every object here is strict: an unknown or mis-indented key is an error, never silently dropped.
// Output is normalised: durations in milliseconds, shorthands expanded, names in camelCase with units.

const identifierPattern = /^[a-z][a-z0-9_]*$/;
/** A name used in task types, conditions and file names: `human`, `requires_response`, `inbox`. */
export const identifier = z
  .string({ error: 'expected a name' })
  .regex(identifierPattern, { error: (issue) => `\`${String(issue.input)}\` is not a valid name: use a-z, 0-9 and _` });

/** An integration instance name: it travels in task files and URLs. */
export const instanceName = z.string({ error: 'expected a name' }).regex(/^[a-z][a-z0-9_-]*$/, {
  error: (issue) => `\`${String(issue.input)}\` is not a valid name: use a-z, 0-9, - and _`,
});

/** A duration such as `30m`, normalised to milliseconds (defined by the queue, the lowest layer that needs it). */
export const duration = durationSchema;

/**
 * A secret field: `!secret name` (preferred) or a value written inline, which loads with a warning.
 * Either way the value is a {@link Secret}, which never prints.
 */
export const secretField = z
  .union([z.instanceof(Secret), z.string().min(1)], { error: 'expected `!secret name` (or the value itself)' })
  .transform((value) => (typeof value === 'string' ? new Secret('inline', value) : value))
  .meta({ secret: true });

export const jsonValue: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([z.string(), z.number(), z.boolean(), z.null(), z.array(jsonValue), z.record(z.string(), jsonValue)]),
);
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** `null` (an empty YAML key) means "none" for optional collections. */
function orEmpty<T extends z.ZodType>(schema: T, empty: () => z.input<T>) {
  return z
    .union([z.null(), schema])
    .optional()
    .transform((value) => (value === null || value === undefined ? schema.parse(empty()) : value) as z.output<T>);
}

// ---------------------------------------------------------------------------------------------- llms

/**
 * The wire formats a profile can speak. The same list as `providerKinds` in @assistant/llm (which depends on this
 * package, not the other way round; a test there checks the two agree).
 */
export const llmProviders = ['openai-compatible', 'openai', 'anthropic', 'google'] as const;
export type LlmProvider = (typeof llmProviders)[number];

/** Where each provider's API is when `base_url` is not given; an `openai-compatible` server has no default. */
export const defaultLlmBaseUrls: Record<LlmProvider, string | undefined> = {
  'openai-compatible': undefined,
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
};

const price = z
  .number({
    error: (issue) => (issue.code === 'invalid_type' ? 'expected a price (a number, per million tokens)' : undefined),
  })
  .min(0);

/**
 * What a million tokens cost, in the owner's currency (`owner.currency`): for the dashboard's and `/metrics`'
 * estimated cost. Cached input (a prompt-cache read) and cache writes default to the input price.
 */
const llmPricesSchema = z
  .strictObject({ input: price, output: price, cached_input: price.optional(), cache_write: price.optional() })
  .transform((value) => ({
    input: value.input,
    output: value.output,
    cachedInput: value.cached_input ?? value.input,
    cacheWrite: value.cache_write ?? value.input,
  }));
export type LlmPrices = z.output<typeof llmPricesSchema>;

const llmProfileSchema = z
  .strictObject({
    /** The wire format: `openai-compatible` (Ollama, llama.cpp, vLLM, proxies), `openai`, `anthropic`, `google`. */
    provider: z.enum(llmProviders).default('openai-compatible'),
    /** Required for `openai-compatible`; the provider's own API otherwise (see {@link defaultLlmBaseUrls}). */
    base_url: z
      .url({ protocol: /^https?$/, error: 'expected an http(s) URL such as http://127.0.0.1:11434/v1' })
      .superRefine(
        refuseUrlCredentials(
          'remove `user:password@` from the URL; an API key goes in `api_key: !secret llm_key`, with `llm_key: …` in secrets.yaml',
        ),
      )
      .optional(),
    model: z.string().min(1),
    /** The API key. Required by `openai`, `anthropic` and `google`; a local server needs none. */
    api_key: secretField.optional(),
    /** The older name of `api_key`, still read. */
    token: secretField.optional(),
    parameters: z.record(z.string(), jsonValue).optional(),
    timeout: duration.optional(),
    /** The model's context window in tokens; default from the capability table (8192 when the model is unknown). */
    context_window: z.int().min(512).optional(),
    /** What the model can do, overriding the capability table: native tool calls, `response_format: json_schema`. */
    capabilities: z.strictObject({ tools: z.boolean().optional(), json_schema: z.boolean().optional() }).optional(),
    /** Retries of a request that failed with 429, 5xx or a broken connection. */
    max_retries: z.int().min(0).max(10).default(4),
    /**
     * Requests sent to the endpoint at once, fixed. Unset: the gate finds how many the endpoint serves at once from
     * its latency and its 429/5xx answers (decision 0076).
     */
    max_in_flight: z.int().min(1).max(256).optional(),
    /** Budgets over a sliding minute, for APIs that limit them; none by default. */
    requests_per_minute: z.int().min(1).optional(),
    tokens_per_minute: z.int().min(1).optional(),
    /** Per million tokens, in `owner.currency`: the estimated cost on the dashboard and in `/metrics`. */
    prices: llmPricesSchema.optional(),
    /** Anthropic `cache_control` on the system prompt's stable part and the tools (other providers cache by themselves). */
    prompt_cache: z.boolean().default(true),
  })
  .superRefine((profile, context) => {
    if (profile.api_key !== undefined && profile.token !== undefined) {
      context.addIssue({
        code: 'custom',
        path: ['api_key'],
        message: 'both `api_key` and `token` are given: they are the same setting (`token` is its older name)',
        params: { hint: 'keep `api_key: !secret …` and remove `token:`' },
      });
    }
    if (profile.provider === 'openai-compatible' && profile.base_url === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['base_url'],
        message: 'provider `openai-compatible` needs `base_url`: the server to talk to',
        params: {
          hint: 'e.g. `base_url: http://127.0.0.1:11434/v1` (Ollama); or set `provider: openai | anthropic | google`',
        },
      });
    }
    if (profile.provider !== 'openai-compatible' && profile.api_key === undefined && profile.token === undefined) {
      context.addIssue({
        code: 'custom',
        path: ['provider'],
        message: `provider ${profile.provider} needs \`api_key: !secret …\`: its API refuses a request without one`,
        params: {
          hint: `add \`api_key: !secret ${profile.provider}_key\`, with \`${profile.provider}_key: …\` in secrets.yaml`,
        },
      });
    }
  })
  .transform((profile) => {
    const baseUrl = profile.base_url ?? defaultLlmBaseUrls[profile.provider] ?? '';
    const apiKey = profile.api_key ?? profile.token;
    return {
      provider: profile.provider,
      baseUrl,
      model: profile.model,
      ...(apiKey ? { apiKey } : {}),
      parameters: profile.parameters ?? {},
      timeoutMs: profile.timeout ?? 120_000,
      ...(profile.context_window === undefined ? {} : { contextWindow: profile.context_window }),
      capabilities: {
        ...(profile.capabilities?.tools === undefined ? {} : { tools: profile.capabilities.tools }),
        ...(profile.capabilities?.json_schema === undefined ? {} : { jsonSchema: profile.capabilities.json_schema }),
      },
      maxRetries: profile.max_retries,
      ...(profile.max_in_flight === undefined ? {} : { maxInFlight: profile.max_in_flight }),
      ...(profile.requests_per_minute === undefined ? {} : { requestsPerMinute: profile.requests_per_minute }),
      ...(profile.tokens_per_minute === undefined ? {} : { tokensPerMinute: profile.tokens_per_minute }),
      ...(profile.prices === undefined ? {} : { prices: profile.prices }),
      promptCache: profile.prompt_cache,
    };
  });

/** The record/replay cache for LLM requests: for tests and development, off by default. */
const llmCacheSchema = z
  .strictObject({
    // `off` is the older name of `live`; both stay accepted.
    mode: z.enum(['live', 'off', 'record', 'replay', 'auto']).default('off'),
    directory: z.string().min(1).default('./llm-cache'),
  })
  .transform((value) => ({ mode: value.mode, directory: value.directory }));
export type LlmProfile = z.output<typeof llmProfileSchema>;

// ------------------------------------------------------------------------------------------ memory

/**
 * `embeddings:`: an OpenAI-compatible `/v1/embeddings` endpoint for memory's vector search (docs/memory.md). Absent =
 * the offline hashing embedder. An endpoint that is down leaves search lexical; it is never an error at start.
 */
const embeddingsSchema = z
  .strictObject({
    base_url: z
      .url({ protocol: /^https?$/, error: 'expected an http(s) URL such as http://127.0.0.1:11434/v1' })
      .superRefine(
        refuseUrlCredentials(
          'remove `user:password@` from the URL; an API key goes in `api_key: !secret embeddings_key`, with `embeddings_key: …` in secrets.yaml',
        ),
      ),
    model: z.string().min(1),
    api_key: secretField.optional(),
    timeout: duration.optional(),
  })
  .transform((value) => ({
    baseUrl: value.base_url,
    model: value.model,
    ...(value.api_key === undefined ? {} : { apiKey: value.api_key }),
    timeoutMs: value.timeout ?? 30_000,
  }));
export type EmbeddingsConfig = z.output<typeof embeddingsSchema>;

/** The domains whose items consolidation reads (docs/memory.md). */
export const memoryDomains = ['email', 'github', 'chat'] as const;
export type MemoryDomain = (typeof memoryDomains)[number];

/** `memory:`: what consolidation reads, with which profile, and how much memory a chat turn gets. */
const memorySchema = z
  .strictObject({
    /** The domains consolidated after collect/classify; `[]` turns consolidation off. @default all three */
    // Absent = all three; an empty key means "none" like everywhere in config.yaml, the same as `[]`.
    consolidate: z
      .union([
        z.null(),
        z.array(z.enum(memoryDomains)).refine((domains) => new Set(domains).size === domains.length, {
          error: 'a domain is listed twice',
        }),
      ])
      .optional()
      .transform((value): MemoryDomain[] => (value === undefined ? [...memoryDomains] : (value ?? []))),
    /** The LLM profile consolidation uses. @default default */
    llm: identifier.default('default'),
    /**
     * The owner's own addresses and handles (`me@example.org`, `github:jreyes`): consolidation never makes a contact
     * of them. The email instances' logins that are addresses count too. @default []
     */
    owner_identities: orEmpty(
      z.array(
        z
          .string()
          .trim()
          .regex(/^([^\s@:]+@[^\s@]+\.[^\s@]+|[a-z][a-z0-9_-]*:[^\s:@]+)$/i, {
            error: 'expected an address (me@example.org) or a handle as platform:handle (github:jreyes)',
          })
          .transform((value) => value.toLowerCase()),
      ),
      () => [],
    ),
    /** How many facts and guidance notes go into a chat turn's context. */
    context: z
      .strictObject({
        facts: z.int().min(0).max(50).default(5),
        guidance: z.int().min(0).max(20).default(2),
      })
      .prefault({}),
  })
  .transform((value) => ({
    consolidate: value.consolidate,
    llm: value.llm,
    ownerIdentities: value.owner_identities,
    context: value.context,
  }));
export type MemoryConfig = z.output<typeof memorySchema>;

// ------------------------------------------------------------------------------------ classifications

const classificationObject = z
  .strictObject({
    prompt: z.string().min(1),
    type: z.enum(['confidence', 'boolean', 'enum']).default('confidence'),
    values: z.array(z.string().min(1)).optional(),
  })
  .superRefine((value, context) => {
    if (value.type === 'enum') {
      if (!value.values || value.values.length < 2) {
        context.addIssue({
          code: 'custom',
          path: ['values'],
          message: 'an enum classification needs 2 or more values',
        });
      } else if (new Set(value.values).size !== value.values.length) {
        context.addIssue({ code: 'custom', path: ['values'], message: 'enum values must be unique' });
      }
    } else if (value.values !== undefined) {
      context.addIssue({ code: 'custom', path: ['values'], message: `\`values\` only applies to type enum` });
    }
  });

/** `human: "is this personal?"` or `{prompt, type: confidence|boolean|enum, values}`. */
export const classificationSchema = z
  .union([z.string().min(1), classificationObject], {
    error: 'expected a question (string) or {prompt, type}',
  })
  .transform((value): Classification => {
    if (typeof value === 'string') return { prompt: value, type: 'confidence' };
    if (value.type === 'enum') return { prompt: value.prompt, type: 'enum', values: value.values ?? [] };
    return { prompt: value.prompt, type: value.type };
  });
export type Classification =
  | { prompt: string; type: 'confidence' | 'boolean' }
  | { prompt: string; type: 'enum'; values: string[] };

// --------------------------------------------------------------------------------------- automations

const inputValue = z.union([z.string(), z.number(), z.boolean()]);

const scriptAction = z.strictObject({
  script: identifier,
  inputs: z.record(z.string(), inputValue).optional(),
});
/** `domain.instance.service`, or `domain.service` for the domain's default instance (named like the domain, or its only one). */
export const serviceCall = z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_-]*)?\.[a-z][a-z0-9_]*$/, {
  error: 'expected `domain.instance.service` or `domain.service`, e.g. research.research.web or research.web',
});
const serviceAction = z.strictObject({
  service: z.union([
    serviceCall,
    z.strictObject({
      call: serviceCall,
      inputs: z.record(z.string(), inputValue).optional(),
      human_log: z.string().optional(),
      on_result: z.array(z.record(z.string(), jsonValue)).optional(),
    }),
  ]),
});
const platformActionWithArgument = z.record(identifier, jsonValue).refine((value) => Object.keys(value).length === 1, {
  error: 'an action with an argument has exactly one key, e.g. `{move: Archive}`',
});

/** An action as written, without `!yolo`. */
const actionBody = z
  .union([identifier, scriptAction, serviceAction, platformActionWithArgument], {
    error: 'expected an action: a name like `archive`, `{move: Folder}`, `{script: name}` or `{service: {call: …}}`',
  })
  .transform((value): Action => {
    if (typeof value === 'string') return { kind: 'platform', action: value, yolo: false };
    if ('script' in value && typeof value.script === 'string') {
      const script = value as z.output<typeof scriptAction>;
      return { kind: 'script', script: script.script, inputs: script.inputs ?? {}, yolo: false };
    }
    if ('service' in value && typeof value.service === 'string') {
      return { kind: 'service', call: value.service, inputs: {}, yolo: false };
    }
    if ('service' in value && typeof value.service === 'object') {
      const service = (value as z.output<typeof serviceAction>).service as Exclude<
        z.output<typeof serviceAction>['service'],
        string
      >;
      return {
        kind: 'service',
        call: service.call,
        inputs: service.inputs ?? {},
        ...(service.human_log === undefined ? {} : { humanLog: service.human_log }),
        ...(service.on_result === undefined ? {} : { onResult: service.on_result }),
        yolo: false,
      };
    }
    const [action, argument] = Object.entries(value as Record<string, JsonValue>)[0] ?? ['', null];
    return { kind: 'platform', action, argument, yolo: false };
  });

const yoloTagged = <T extends z.ZodType>(inner: T) =>
  z
    .instanceof(Yolo)
    .transform((tagged) => tagged.value)
    .pipe(inner)
    .meta({ yolo: true });

const markYolo = (action: Action): Action => ({ ...action, yolo: true });
const action = z.union([actionBody, yoloTagged(actionBody).transform(markYolo)]);

/** `then:` one action or a list; `!yolo` on an action or on the whole list. */
const thenSchema = z.union([
  action.transform((single) => [single]),
  z.array(action).min(1, { error: '`then` needs at least one action' }),
  yoloTagged(z.array(actionBody).min(1)).transform((list) => list.map(markYolo)),
]);

export type Action =
  | { kind: 'platform'; action: string; argument?: JsonValue; yolo: boolean }
  | { kind: 'script'; script: string; inputs: Record<string, string | number | boolean>; yolo: boolean }
  | {
      kind: 'service';
      call: string;
      inputs: Record<string, string | number | boolean>;
      humanLog?: string;
      onResult?: Record<string, JsonValue>[];
      yolo: boolean;
    };

const conditionValue = z.union([inputValue, z.null(), z.array(inputValue)]);

/** A value a `when:` key tests. */
type ConditionValue = z.output<typeof conditionValue>;

/**
 * `when:` as written: every key must hold. Two keys group instead of testing: `any:` (a list of condition maps, one
 * of which must hold) and `not:` (a condition map that must not hold). They nest.
 */
export interface WhenConditions {
  [key: string]: ConditionValue | WhenConditions | WhenConditions[];
}

const groupHint =
  '`any:` takes a list of condition maps (`any: [{human: "> 0.8"}, {is_friend: true}]`) and `not:` one map (`not: {is_noreply: true}`)';

// The union accepts every shape; which shape suits which key (a map only under `not:`, maps only under `any:`) is
// checked in `superRefine`, so the message names the key and says what it takes instead of zod's "invalid input".
export const whenSchema: z.ZodType<WhenConditions> = z.lazy(() =>
  z
    .record(z.string().min(1), z.union([conditionValue, z.array(whenSchema), whenSchema]))
    .superRefine((value, context) => {
      const isMap = (entry: unknown): entry is WhenConditions =>
        entry !== null && typeof entry === 'object' && !Array.isArray(entry);
      for (const [key, entry] of Object.entries(value)) {
        if (key === 'any') {
          if (!Array.isArray(entry) || entry.length === 0 || !entry.every(isMap)) {
            context.addIssue({
              code: 'custom',
              path: [key],
              message: `\`any:\` needs a list of condition maps; ${groupHint}`,
            });
          } else {
            entry.forEach((item, index) => {
              if (Object.keys(item).length === 0)
                context.addIssue({
                  code: 'custom',
                  path: [key, index],
                  message: 'an `any:` entry needs at least one condition',
                });
            });
          }
        } else if (key === 'not') {
          if (!isMap(entry)) {
            context.addIssue({
              code: 'custom',
              path: [key],
              message: `\`not:\` needs one condition map; ${groupHint}`,
            });
          } else if (Object.keys(entry).length === 0) {
            context.addIssue({ code: 'custom', path: [key], message: '`not:` needs at least one condition' });
          }
        } else if (isMap(entry) || (Array.isArray(entry) && entry.some(isMap))) {
          context.addIssue({
            code: 'custom',
            path: [key],
            message: `\`${key}\` is tested against a value (a string, number, true/false, null or a list of them), not a condition map; only \`any:\` and \`not:\` group conditions: ${groupHint}`,
          });
        }
      }
    }),
);

export const automationSchema = z
  .strictObject({
    name: z.string().min(1).optional(),
    when: whenSchema,
    /** `true`: when this rule's conditions hold, no later rule of the platform is evaluated for the item. */
    stop: z.boolean({ error: '`stop` is true or false' }).optional(),
    // biome-ignore lint/suspicious/noThenProperty: `then:` is the config key people write; the output calls it `actions`.
    then: thenSchema,
    /** `required`: the rule's actions wait for a person to approve them (an approval note), then run. */
    approval: z.literal('required', { error: 'the only value is `required`' }).optional(),
    /** How long an approval request waits before it is dropped. @default `approvals.expires` */
    approval_expires: duration.optional(),
  })
  .transform((value) => ({
    ...(value.name === undefined ? {} : { name: value.name }),
    when: value.when,
    actions: value.then,
    ...(value.stop === true ? { stop: true } : {}),
    approval: value.approval === 'required',
    ...(value.approval_expires === undefined ? {} : { approvalExpiresMs: value.approval_expires }),
  }));
export type Automation = z.output<typeof automationSchema>;

// ----------------------------------------------------------------------------------------- schedules

export const scheduleSchema = z
  .strictObject({
    every: duration.optional(),
    cron: z.string().optional(),
    timezone: z.string().min(1).optional(),
    catch_up: z.boolean().default(true),
  })
  .superRefine((value, context) => {
    if ((value.every === undefined) === (value.cron === undefined)) {
      context.addIssue({
        code: 'custom',
        message: 'a schedule has exactly one of `every: 30m` or `cron: "0 8 * * *"`',
      });
      return;
    }
    if (value.every !== undefined && value.every < 1_000) {
      context.addIssue({ code: 'custom', path: ['every'], message: 'a schedule interval must be at least 1s' });
    }
    if (value.every !== undefined && value.timezone !== undefined) {
      context.addIssue({ code: 'custom', path: ['timezone'], message: '`timezone` only applies to `cron`' });
    }
    if (value.cron !== undefined) {
      const problem = validateCron(value.cron, value.timezone);
      if (problem) context.addIssue({ code: 'custom', path: ['cron'], message: problem });
    }
  })
  .transform(
    (value): Schedule =>
      value.every === undefined
        ? {
            kind: 'cron',
            expression: value.cron ?? '',
            ...(value.timezone ? { timezone: value.timezone } : {}),
            catchUp: value.catch_up,
          }
        : { kind: 'every', everyMs: value.every, catchUp: value.catch_up },
  );

// -------------------------------------------------------------------------------------- integrations

/** What an integration's manifest contributes to the config schema of its instances. */
export interface IntegrationConfigSchema {
  /** The integration type, as written in `type:`. */
  type: string;
  /** Keys of an instance beyond the common ones (`imap_server`, `password: !secret …`). */
  settings?: z.core.$ZodLooseShape;
  /** The platforms the integration offers, each with keys beyond `enabled`, `classifications`, `automations`. */
  platforms: Record<string, { settings?: z.core.$ZodLooseShape }>;
}

const platformBase = {
  enabled: z.boolean().default(true),
  classifications: orEmpty(z.record(identifier, classificationSchema), () => ({})),
  automations: orEmpty(z.array(automationSchema), () => []),
};

function platformSchema(settings: z.core.$ZodLooseShape = {}) {
  return z
    .strictObject({ ...settings, ...platformBase })
    .transform(({ enabled, classifications, automations, ...rest }) => ({
      enabled,
      classifications,
      automations,
      settings: rest as Record<string, unknown>,
    }));
}
export type PlatformConfig = z.output<ReturnType<typeof platformSchema>>;

const integrationBase = {
  type: identifier,
  name: instanceName,
  enabled: z.boolean().default(true),
  /**
   * Shadow mode: every action the instance's rules would take becomes a proposal (an approval request marked
   * `shadow`), and nothing is done to the mailbox or account (docs/decisions/0031). `assistant shadow off NAME` ends it.
   * @default false
   */
  shadow: z.boolean().default(false),
  schedule: scheduleSchema.optional(),
  llm: identifier.optional(),
};

function splitIntegration(
  value: {
    type: string;
    name: string;
    enabled: boolean;
    shadow: boolean;
    schedule?: Schedule | undefined;
    llm?: string | undefined;
    platforms?: Record<string, PlatformConfig | undefined> | undefined;
  } & Record<string, unknown>,
) {
  const { type, name, enabled, shadow, schedule, llm, platforms, ...settings } = value;
  const present: Record<string, PlatformConfig> = {};
  for (const [platform, config] of Object.entries(platforms ?? {})) if (config) present[platform] = config;
  return {
    type,
    name,
    enabled,
    shadow,
    ...(schedule ? { schedule } : {}),
    ...(llm ? { llm } : {}),
    platforms: present,
    settings,
  };
}
export type IntegrationInstance = ReturnType<typeof splitIntegration>;

/** An instance of a type whose manifest is known: every key is checked. */
function knownIntegration(definition: IntegrationConfigSchema) {
  const platforms: Record<string, z.ZodType> = {};
  for (const [platform, spec] of Object.entries(definition.platforms)) {
    platforms[platform] = platformSchema(spec.settings).optional();
  }
  return z
    .strictObject({
      ...definition.settings,
      ...integrationBase,
      type: z.literal(definition.type),
      platforms: orEmpty(z.strictObject(platforms), () => ({})),
    })
    .transform((value) => splitIntegration(value as Parameters<typeof splitIntegration>[0]));
}

/** An instance of a type with no manifest loaded: common keys are checked, its own settings are not. */
const unverifiedIntegration = z
  .looseObject({
    ...integrationBase,
    platforms: orEmpty(z.record(identifier, platformSchema()), () => ({})),
  })
  .transform((value) => splitIntegration(value as Parameters<typeof splitIntegration>[0]));

function integrationSchema(types: readonly IntegrationConfigSchema[] | undefined, forJsonSchema: boolean) {
  if (types === undefined) return unverifiedIntegration;
  const known = new Map(types.map((definition) => [definition.type, knownIntegration(definition)]));
  // JSON Schema cannot express the dispatch below; editors get the equivalent union of the known types.
  if (forJsonSchema) return z.union([z.never(), ...known.values()]);
  const names = [...known.keys()].sort();
  // z.unknown() rather than an object schema, so the nested parse sees the very object from the YAML: the
  // unknown-key hints find its schema by identity.
  return z.unknown().transform((value, context) => {
    const type = typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      context.issues.push({ code: 'invalid_type', expected: 'object', input: value });
      return z.NEVER;
    }
    if (typeof type !== 'string') {
      context.issues.push({
        code: 'custom',
        input: value,
        path: ['type'],
        message: 'every integration needs a `type`',
        params: { choices: names },
      });
      return z.NEVER;
    }
    const schema = known.get(type);
    if (!schema) {
      context.issues.push({
        code: 'custom',
        input: type,
        path: ['type'],
        message: `unknown integration type \`${type}\``,
        params: { choices: names },
      });
      return z.NEVER;
    }
    const result = schema.safeParse(value, { error: recordSchemas });
    if (!result.success) {
      for (const issue of result.error.issues) context.issues.push({ ...issue, input: value } as z.core.$ZodRawIssue);
      return z.NEVER;
    }
    return result.data;
  });
}

// ------------------------------------------------------------------------------------------- scripts

const scriptSchema = z
  .strictObject({
    description: z.string().optional(),
    shell: z.string().min(1).optional(),
    node: z.string().min(1).optional(),
    inputs: z.array(identifier).optional(),
    timeout: duration.optional(),
    reversible: z.boolean().default(false),
    /** Whether the script may use the network; without it, a sandboxed script has none. */
    network: z.boolean().default(false),
  })
  .superRefine((value, context) => {
    if ((value.shell === undefined) === (value.node === undefined)) {
      context.addIssue({ code: 'custom', message: 'a script has exactly one of `shell:` or `node:`' });
    }
  })
  .transform((value) => ({
    ...(value.description === undefined ? {} : { description: value.description }),
    ...(value.shell === undefined ? { node: value.node ?? '' } : { shell: value.shell }),
    inputs: value.inputs ?? [],
    timeoutMs: value.timeout ?? 300_000,
    reversible: value.reversible,
    network: value.network,
  }));
export type ScriptConfig = z.output<typeof scriptSchema>;

// --------------------------------------------------------------------------------------------- queue
// The queue owns its section's schema (@assistant/queue): config only places it under `queue:`.
export type { QueueConfig, QueuePolicy };

// ------------------------------------------------------------------------------------ server, worker

const serverSchema = z
  .strictObject({
    host: z.string().min(1).default('127.0.0.1'),
    port: z.int().min(0).max(65_535).default(6767),
    token: secretField.optional(),
    /**
     * Host names (without port) a request's `Host` header may carry besides `host` and the loopback names: the
     * names a reverse proxy or other machines reach the server by. Anything else gets 421 (DNS rebinding).
     */
    allowed_hosts: z
      .array(
        z
          .string()
          .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)$/, { error: 'expected a host name or address, without a port' }),
      )
      .default([]),
    /**
     * Event streams (`/api/chats/:id/events`, `/live`) one client (a remote address) may hold open at once. One more
     * is refused with 429, so one client cannot tie the server up with thousands.
     */
    event_streams_per_client: z.int().min(1).max(100_000).default(32),
    /** Whether the server serves the dashboard (`/` and its pages); the REST API is served either way. */
    dashboard: z.boolean().default(true),
  })
  .transform((value) => ({
    host: value.host,
    port: value.port,
    allowedHosts: value.allowed_hosts,
    eventStreamsPerClient: value.event_streams_per_client,
    dashboard: value.dashboard,
    ...(value.token ? { token: value.token } : {}),
  }));

const workerSchema = z
  .strictObject({
    concurrency: z.int().min(1).max(256).default(2),
    poll_interval: duration.default(1_000),
    shutdown_grace: duration.default(30_000),
    /**
     * How scripts run: `bubblewrap`, or the worker refuses them when bubblewrap does not work here; `none` runs
     * them unsandboxed, able to read and write whatever Assistant can (warned about at every start).
     */
    sandbox: z.enum(['bubblewrap', 'none']).default('bubblewrap'),
    /**
     * Pending tasks of an LLM stage (`llm: true` in its manifest) at which the worker stops claiming the stage that
     * feeds it, so a slow model does not pile up work it cannot take.
     */
    model_backlog: z.int().min(1).max(1_000_000).default(32),
  })
  .transform((value) => ({
    concurrency: value.concurrency,
    pollIntervalMs: value.poll_interval,
    shutdownGraceMs: value.shutdown_grace,
    sandbox: value.sandbox,
    modelBacklog: value.model_backlog,
  }));

const circuitBreakerSchema = z
  .strictObject({
    failures: z.int().min(1).max(1_000).default(5),
    pause: duration.default(300_000),
  })
  .transform((value) => ({ failures: value.failures, pauseMs: value.pause }));

const approvalsSchema = z
  .strictObject({ expires: duration.default(86_400_000) })
  .transform((value) => ({ expiresMs: value.expires }));

/** A tool name, or a glob over whole names where `*` stands for any run of characters: `notes_*`, `github__*`. */
export const toolPattern = z.string().regex(/^[A-Za-z0-9_*-]{1,128}$/, {
  error: 'expected a tool name or pattern of letters, digits, _, - and * (MCP tools are named server__tool)',
});

/**
 * What agent loops may call without asking (see docs/agents.md, "Tool gate"): deny beats approve beats allow beats
 * the tool's tier, so one pattern cannot open what another closes.
 */
const toolsSchema = z
  .strictObject({
    allow: orEmpty(z.array(toolPattern), () => []),
    deny: orEmpty(z.array(toolPattern), () => []),
    approve: orEmpty(z.array(toolPattern), () => []),
    approval_timeout: duration.default(1_800_000),
  })
  .transform((value) => ({
    allow: value.allow,
    deny: value.deny,
    approve: value.approve,
    approvalTimeoutMs: value.approval_timeout,
  }));

const directoriesSchema = z
  .strictObject({
    queue: z.string().min(1).optional(),
    notes: z.string().min(1).optional(),
    logs: z.string().min(1).optional(),
    control: z.string().min(1).optional(),
  })
  .default({});

// --------------------------------------------------------------------------------------------- owner

/** Whether Intl knows the IANA zone name (`Europe/Berlin`, `UTC`). */
function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** The event ledger, `data/events/` (docs/events.md). */
const eventsSchema = z
  .strictObject({
    /** Whole days of events older than this are removed. @default 90 */
    retention_days: z.int().min(1).max(36_500).default(90),
  })
  .transform((value) => ({ retentionDays: value.retention_days }));

/** The daily human log, `data/logs/YYYY-MM-DD.md` (docs/notes.md, "The human log"). */
const humanLogSchema = z
  .strictObject({
    /** Days of the log kept: older day files are removed by housekeeping. Unset: every day is kept. */
    retention_days: z.int().min(1).max(36_500).optional(),
  })
  .transform((value) => ({ retentionDays: value.retention_days }));

/** Sub-agents (docs/agents.md, "Sub-agents"): the cap over the whole installation. */
const agentsSchema = z
  .strictObject({
    /** Children alive at once, over every parent: a spawn beyond it is refused with AGENT_LIMIT. @default 20 */
    max_live: z.int().min(1).max(1_000).default(20),
  })
  .transform((value) => ({ maxLive: value.max_live }));

/**
 * Who Assistant works for: the time zone every prompt's current time and the dashboard's "today" are in, and the
 * currency `llms.*.prices` are written in.
 */
const ownerSchema = z
  .strictObject({
    /** An IANA zone name such as `Europe/Berlin`. @default the machine's zone */
    timezone: z
      .string({ error: 'expected a time zone name such as Europe/Berlin' })
      .refine(isTimeZone, {
        error: (issue) =>
          `\`${String(issue.input)}\` is not a time zone: use an IANA name such as Europe/Berlin, America/New_York or UTC`,
      })
      .optional(),
    /** A label for the prices under `llms.*.prices` (no conversion is made). @default USD */
    currency: z
      .string()
      .regex(/^[A-Za-z]{3}$/, { error: 'expected a three-letter currency code such as USD or EUR' })
      .default('USD'),
  })
  .transform((value) => ({ timeZone: value.timezone ?? machineTimeZone(), currency: value.currency.toUpperCase() }));
export type OwnerConfig = z.output<typeof ownerSchema>;

// ------------------------------------------------------------------------------------------ the file

export interface ConfigSchemaOptions {
  /**
   * Config schemas of the installed integrations, from their manifests. When given, an unknown `type` and any
   * unknown key of an instance are errors. When omitted, only the keys every integration shares are checked.
   */
  integrationTypes?: readonly IntegrationConfigSchema[];
}

/**
 * The schema of config.yaml, from the raw YAML data to the normalised {@link Config}.
 * `forJsonSchema` swaps parse-time dispatch for shapes JSON Schema can express; never parse with that variant.
 */
export function buildConfigSchema(options: ConfigSchemaOptions = {}, forJsonSchema = false) {
  return z
    .strictObject({
      data_dir: z.string().min(1).default('./data'),
      directories: directoriesSchema,
      integration_dirs: orEmpty(z.array(z.string().min(1)), () => []),
      integration_packages: orEmpty(z.array(z.string().min(1)), () => []),
      llms: orEmpty(z.record(identifier, llmProfileSchema), () => ({})),
      llm_cache: llmCacheSchema.prefault({}),
      integrations: orEmpty(z.array(integrationSchema(options.integrationTypes, forJsonSchema)), () => []),
      scripts: orEmpty(z.record(identifier, scriptSchema), () => ({})),
      mcp_servers: orEmpty(z.record(identifier, mcpServerSchema), () => ({})),
      queue: queueSchema.prefault({}),
      server: serverSchema.prefault({}),
      worker: workerSchema.prefault({}),
      circuit_breaker: circuitBreakerSchema.prefault({}),
      events: eventsSchema.prefault({}),
      human_log: humanLogSchema.prefault({}),
      agents: agentsSchema.prefault({}),
      approvals: approvalsSchema.prefault({}),
      tools: toolsSchema.prefault({}),
      owner: ownerSchema.prefault({}),
      embeddings: embeddingsSchema.optional(),
      memory: memorySchema.prefault({}),
      /**
       * Hooks written in config.yaml, each with a `name:` (docs/hooks.md). Checked by @assistant/hooks against the
       * event registry and the integrations, which this package does not know: here only a list of mappings.
       */
      hooks: orEmpty(
        z.array(
          z.record(z.string(), z.unknown(), { error: 'expected a hook: a mapping with `name:`, `on:` and `then:`' }),
        ),
        () => [],
      ),
    })
    .transform((value) => ({
      dataDir: value.data_dir,
      directories: value.directories,
      integrationDirs: value.integration_dirs,
      integrationPackages: value.integration_packages,
      llms: value.llms,
      llmCache: value.llm_cache,
      integrations: value.integrations,
      scripts: value.scripts,
      mcpServers: value.mcp_servers,
      queue: value.queue,
      server: value.server,
      worker: value.worker,
      circuitBreaker: value.circuit_breaker,
      events: value.events,
      humanLog: value.human_log,
      agents: value.agents,
      approvals: value.approvals,
      tools: value.tools,
      owner: value.owner,
      ...(value.embeddings === undefined ? {} : { embeddings: value.embeddings }),
      memory: value.memory,
      hooks: value.hooks,
    }));
}

/** config.yaml after validation and normalisation (paths still as written; see LoadedConfig). */
export type Config = z.output<ReturnType<typeof buildConfigSchema>>;

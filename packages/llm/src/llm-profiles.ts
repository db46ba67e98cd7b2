import path from 'node:path';
import { type LlmProfile, type LoadedConfig, machineTimeZone } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { ChatModel, TokenUsage } from './chat-types.ts';
import { ModelGate, type ModelProfileLimits, type ModelProfileStatus } from './model-gate.ts';
import { createProviderChatModel } from './providers/provider-chat-model.ts';
import { type CacheMode, createRecordReplayFetch } from './record-replay/record-replay-fetch.ts';
import { timeAwareChatModel } from './time-awareness.ts';

export interface LlmProfilesOptions {
  /** `owner.timezone` is the zone of the current time every prompt carries (default: the machine's). */
  config: Pick<LoadedConfig, 'llms' | 'llmCache' | 'paths'> & { owner?: Pick<LoadedConfig['owner'], 'timeZone'> };
  /** Overrides `llm_cache.mode`, e.g. from ASSISTANT_LLM_CACHE in tests. */
  cacheMode?: CacheMode;
  onUsage?: (profile: string, usage: TokenUsage, model: string) => void;
  /** Every successful request of a profile, with its latency (see the chat model's `onCall`). */
  onCall?: (profile: string, call: { model: string; latencyMs: number; usage?: TokenUsage }) => void;
  /** For tests: the fetch under the cache. */
  fetch?: typeof fetch;
  /**
   * A call that meets an open breaker waits for its trial when that is due within this long; otherwise it throws
   * ModelUnavailableError at once. @default 5_000
   */
  inlineWaitMs?: number;
  /** How long a breaker stays open after the first failure in a row, doubling with each. Tests shorten it. @default 1_000 */
  backoffBaseMs?: number;
  /** The longest a breaker stays open on its own backoff. @default 60_000 */
  backoffMaxMs?: number;
  /** The clock, in epoch milliseconds: the gates' and the current time in prompts. @default Date.now */
  now?: () => number;
}

/**
 * The LLM profiles of one process: each a model, and what it is doing. Every call to a profile's model goes through
 * the profile's gate: at most `max_in_flight` requests at once, the per-minute budgets, and a breaker that stops
 * sending while the endpoint is unavailable (calls then throw {@link ModelUnavailableError}).
 */
export interface LlmProfiles {
  /** The profile's model (`default` when no name is given), created on first use. */
  (profile?: string): ChatModel;
  /** Every configured profile's status, sorted by name; a profile never used reports zeros and a closed breaker. */
  status(): ModelProfileStatus[];
  /** Every configured profile's limit on requests at once (what `status` says of it), cheaply. */
  limits(): ModelProfileLimits[];
  /**
   * Whether a call to `profile` would be sent now (or wait only for a slot): false while its breaker is open before
   * its retry time, or while a trial call is out.
   */
  availability(profile: string, nowMs?: number): { available: true } | { available: false; retryAtMs: number };
  /**
   * Called with the profile's name whenever its in-flight or waiting count or its breaker changes, and when an open
   * breaker reaches its retry time (a trial may go: the profile is available again).
   */
  subscribe(listener: (profile: string) => void): () => void;
}

/** The named LLM profiles of config.yaml as models, created on first use. `llm()` is the `default` profile. */
export function createLlmProfiles(options: LlmProfilesOptions): LlmProfiles {
  const models = new Map<string, ChatModel>();
  const gates = new Map<string, ModelGate>();
  const listeners = new Set<(profile: string) => void>();
  const timeZone = options.config.owner?.timeZone ?? machineTimeZone();
  const clock = options.now ?? Date.now;
  const mode = options.cacheMode ?? options.config.llmCache.mode;
  const directory = path.resolve(path.dirname(options.config.paths.configFile), options.config.llmCache.directory);
  // One transport per profile: its fixtures live under `<directory>/<provider>/`, and it scrubs the profile's key.
  const fetchFor = (profile: LlmProfile): typeof fetch | undefined =>
    mode === 'off' || mode === 'live'
      ? options.fetch
      : createRecordReplayFetch({
          mode,
          directory,
          provider: profile.provider,
          ...(profile.apiKey ? { apiKey: profile.apiKey.reveal() } : {}),
          ...(options.fetch ? { fetch: options.fetch } : {}),
        });
  const notify = (profile: string): void => {
    for (const listener of listeners) {
      try {
        listener(profile);
      } catch {
        // A listener is an observer: its failure must not break the calls it watches.
      }
    }
  };
  const gateOf = (name: string, profile: LlmProfile): ModelGate => {
    let gate = gates.get(name);
    if (gate) return gate;
    gate = new ModelGate({
      profile: name,
      model: profile.model,
      baseUrl: profile.baseUrl,
      maxInFlight: profile.maxInFlight,
      requestsPerMinute: profile.requestsPerMinute,
      tokensPerMinute: profile.tokensPerMinute,
      ...(options.inlineWaitMs === undefined ? {} : { inlineWaitMs: options.inlineWaitMs }),
      ...(options.backoffBaseMs === undefined ? {} : { backoffBaseMs: options.backoffBaseMs }),
      ...(options.backoffMaxMs === undefined ? {} : { backoffMaxMs: options.backoffMaxMs }),
      ...(options.now === undefined ? {} : { now: options.now }),
      onChange: () => notify(name),
    });
    gates.set(name, gate);
    return gate;
  };
  const get = (name = 'default'): ChatModel => {
    let model = models.get(name);
    if (model) return model;
    const profile = options.config.llms[name];
    if (!profile) {
      const names = Object.keys(options.config.llms);
      throw new AssistantError('CONFIG_INVALID', `there is no LLM profile \`${name}\` under \`llms:\``, {
        hint: names.length > 0 ? `profiles: ${names.join(', ')}` : 'add one under `llms:` in config.yaml',
      });
    }
    const transport = fetchFor(profile);
    const created = createProviderChatModel({
      provider: profile.provider,
      name,
      baseUrl: profile.baseUrl,
      model: profile.model,
      apiKey: profile.apiKey?.reveal(),
      parameters: profile.parameters,
      timeoutMs: profile.timeoutMs,
      maxRetries: profile.maxRetries,
      capabilities: {
        ...profile.capabilities,
        ...(profile.contextWindow ? { contextWindow: profile.contextWindow } : {}),
      },
      gate: gateOf(name, profile),
      promptCache: profile.promptCache,
      ...(transport ? { fetch: transport } : {}),
      ...(options.onUsage ? { onUsage: (usage, model) => options.onUsage?.(name, usage, model) } : {}),
      ...(options.onCall ? { onCall: (call) => options.onCall?.(name, call) } : {}),
    });
    // Here, once, so every caller's prompts carry the time (see time-awareness.ts), and no caller can forget it.
    model = timeAwareChatModel(created, { timeZone, now: () => new Date(clock()) });
    models.set(name, model);
    return model;
  };
  const status = (): ModelProfileStatus[] =>
    Object.entries(options.config.llms)
      .sort(([left], [right]) => left.localeCompare(right))
      .map(([name, profile]) => gateOf(name, profile).status());
  const limits = (): ModelProfileLimits[] =>
    Object.entries(options.config.llms).map(([name, profile]) => gateOf(name, profile).limits());
  const availability = (name: string, nowMs?: number) => {
    const profile = options.config.llms[name];
    // An unknown profile is the call's problem to report (CONFIG_INVALID), not a reason to hold tasks back.
    if (!profile) return { available: true } as const;
    return gateOf(name, profile).availability(nowMs);
  };
  const subscribe = (listener: (profile: string) => void): (() => void) => {
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  };
  return Object.assign(get, { status, limits, availability, subscribe });
}

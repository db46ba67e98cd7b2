import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type TokenUsage, zonedDay } from '@assistant/llm';
import * as z from 'zod';
import { updateLockedFile } from './update-locked-file.ts';

/**
 * Tokens and estimated cost per LLM profile (issue 32): per day of the owner's calendar (`owner.timezone`, so "today"
 * rolls over at their midnight) and in total since the file began, in `data/metrics/llm-usage.json`. Kept in a file,
 * like the History rings, so today's figure survives a worker restart and the server reads what every worker added.
 * The cost of a call is worked out when it is counted, from the prices then configured: changing `prices:` later
 * does not rewrite the past.
 */

/** Days kept per file: enough for "today" and a month back; older days are dropped as new ones are added. */
export const usageDaysKept = 35;
/** Profiles one day (and the totals) keep apart; more add up under `other`, so the file stays small. */
const maxProfiles = 64;

const count = z.int().min(0);
const usageCountsSchema = z.object({
  calls: count,
  prompt_tokens: count,
  cached_prompt_tokens: count,
  cache_write_tokens: count,
  completion_tokens: count,
  /** In the owner's currency; calls of a profile without prices add nothing. */
  cost: z.number().min(0),
  /** Calls counted without prices: their cost is unknown, not zero. */
  unpriced_calls: count,
});
export type UsageCounts = z.infer<typeof usageCountsSchema>;
const usageFileSchema = z.object({
  version: z.literal(1),
  /** `2026-11-28` (the owner's calendar) → profile → counts. */
  days: z.record(z.string().regex(/^\d{4}-\d{2}-\d{2}$/), z.record(z.string(), usageCountsSchema)),
  /** Since the file began, per profile: the `/metrics` counters. */
  totals: z.record(z.string(), usageCountsSchema),
});
export type UsageFile = z.infer<typeof usageFileSchema>;

/** A profile's `prices:` (per million tokens), as config normalises them. */
export interface UsagePrices {
  input: number;
  output: number;
  cachedInput: number;
  cacheWrite: number;
}

/** Where a data directory keeps the usage: `metrics/llm-usage.json`. */
export function llmUsageFile(dataDir: string): string {
  return path.join(dataDir, 'metrics', 'llm-usage.json');
}

/** One model call's usage, ready to count. */
export interface UsageEvent {
  profile: string;
  /** The owner's calendar day of the call, `2026-11-28`. */
  day: string;
  promptTokens: number;
  cachedPromptTokens: number;
  cacheWriteTokens: number;
  completionTokens: number;
  /** Undefined when the profile has no prices. */
  cost: number | undefined;
}

/**
 * The estimated cost of a call, in the prices' currency: prices are per million tokens; prompt tokens read from the
 * cache are billed at `cachedInput`, those written to it at `cacheWrite`, the rest of the prompt at `input`.
 */
export function usageCost(usage: TokenUsage, prices: UsagePrices): number {
  const cached = Math.max(0, usage.cachedPromptTokens ?? 0);
  const written = Math.max(0, usage.cacheWriteTokens ?? 0);
  const plain = Math.max(0, usage.promptTokens - cached - written);
  return (
    (plain * prices.input +
      cached * prices.cachedInput +
      written * prices.cacheWrite +
      Math.max(0, usage.completionTokens) * prices.output) /
    1_000_000
  );
}

/** A call's usage as an event: its day in `timeZone`, its cost from `prices` when there are any. */
export function usageEvent(options: {
  profile: string;
  usage: TokenUsage;
  prices?: UsagePrices | undefined;
  timeZone: string;
  at: Date;
}): UsageEvent {
  const { usage } = options;
  return {
    profile: options.profile,
    day: zonedDay(options.at, options.timeZone),
    promptTokens: Math.max(0, Math.round(usage.promptTokens)),
    cachedPromptTokens: Math.max(0, Math.round(usage.cachedPromptTokens ?? 0)),
    cacheWriteTokens: Math.max(0, Math.round(usage.cacheWriteTokens ?? 0)),
    completionTokens: Math.max(0, Math.round(usage.completionTokens)),
    cost: options.prices ? usageCost(usage, options.prices) : undefined,
  };
}

export function emptyUsage(): UsageFile {
  return { version: 1, days: {}, totals: {} };
}

function emptyCounts(): UsageCounts {
  return {
    calls: 0,
    prompt_tokens: 0,
    cached_prompt_tokens: 0,
    cache_write_tokens: 0,
    completion_tokens: 0,
    cost: 0,
    unpriced_calls: 0,
  };
}

function addTo(map: Record<string, UsageCounts>, event: UsageEvent): void {
  const key = event.profile in map || Object.keys(map).length < maxProfiles ? event.profile : 'other';
  const counts = map[key] ?? emptyCounts();
  counts.calls += 1;
  counts.prompt_tokens += event.promptTokens;
  counts.cached_prompt_tokens += event.cachedPromptTokens;
  counts.cache_write_tokens += event.cacheWriteTokens;
  counts.completion_tokens += event.completionTokens;
  if (event.cost === undefined) counts.unpriced_calls += 1;
  else counts.cost += event.cost;
  map[key] = counts;
}

/** Counts events into a usage file (in place) and returns it; only the newest {@link usageDaysKept} days stay. */
export function addToUsage(usage: UsageFile, events: readonly UsageEvent[]): UsageFile {
  for (const event of events) {
    const day = usage.days[event.day] ?? {};
    addTo(day, event);
    usage.days[event.day] = day;
    addTo(usage.totals, event);
  }
  const days = Object.keys(usage.days).sort();
  for (const old of days.slice(0, Math.max(0, days.length - usageDaysKept))) delete usage.days[old];
  return usage;
}

/** The usage in a file, or an empty one when there is none or it cannot be read (it is statistics, not state). */
export async function readUsage(file: string): Promise<UsageFile> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  if (text === undefined) return emptyUsage();
  try {
    const parsed = usageFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : emptyUsage();
  } catch {
    return emptyUsage();
  }
}

/** Per profile, the owner's today (by `timeZone` at `now`): what the dashboard's Models card shows. */
export function usageToday(
  usage: UsageFile,
  options: { timeZone: string; now: Date },
): Readonly<Record<string, UsageCounts>> {
  return usage.days[zonedDay(options.now, options.timeZone)] ?? {};
}

/**
 * Adds events to the usage file as `appendHistory` does to the history: under a lock directory, read, add, write a
 * temporary file, fsync, rename. Resolves `false` (adding nothing) when the lock is busy.
 */
export async function appendUsage(options: { file: string; events: readonly UsageEvent[] }): Promise<boolean> {
  if (options.events.length === 0) return true;
  return updateLockedFile({
    file: options.file,
    read: readUsage,
    update: (current) => addToUsage(current, options.events),
  });
}

/**
 * Collects usage in memory and adds it to the file now and then (the worker flushes it with the History). Events a
 * busy lock or a failed write kept back go with the next flush, up to `maxPendingEvents`.
 */
export class UsageRecorder {
  readonly #file: string;
  #pending: UsageEvent[] = [];
  #flushing: Promise<void> = Promise.resolve();
  static readonly maxPendingEvents = 10_000;

  constructor(options: { file: string }) {
    this.#file = options.file;
  }

  record(event: UsageEvent): void {
    this.#pending.push(event);
    if (this.#pending.length > UsageRecorder.maxPendingEvents) {
      this.#pending.splice(0, this.#pending.length - UsageRecorder.maxPendingEvents);
    }
  }

  /** Writes what was recorded since the last flush; never throws. */
  flush(): Promise<void> {
    this.#flushing = this.#flushing.then(async () => {
      const events = this.#pending;
      if (events.length === 0) return;
      this.#pending = [];
      const written = await appendUsage({ file: this.#file, events }).catch(() => false);
      if (!written) this.#pending = [...events, ...this.#pending];
    });
    return this.#flushing;
  }
}

/** Prometheus lines for the totals: tokens by kind and the estimated cost, per profile. */
export function renderUsagePrometheus(options: {
  usage: UsageFile;
  currency: string;
  /** The label set as Prometheus text (task-metrics' escaping). */
  labels: (values: Record<string, string>) => string;
}): string[] {
  const lines: string[] = [];
  const totals = Object.entries(options.usage.totals).sort(([left], [right]) => left.localeCompare(right));
  lines.push(
    '# HELP assistant_llm_tokens_total Tokens per LLM profile by kind: prompt (all input, cached included), cached_prompt and cache_write (of the prompt), completion.',
    '# TYPE assistant_llm_tokens_total counter',
  );
  for (const [profile, counts] of totals) {
    for (const [kind, value] of [
      ['prompt', counts.prompt_tokens],
      ['cached_prompt', counts.cached_prompt_tokens],
      ['cache_write', counts.cache_write_tokens],
      ['completion', counts.completion_tokens],
    ] as const) {
      lines.push(`assistant_llm_tokens_total${options.labels({ profile, kind })} ${value}`);
    }
  }
  lines.push(
    '# HELP assistant_llm_cost_total Estimated cost per LLM profile from its `prices:`, in the owner currency.',
    '# TYPE assistant_llm_cost_total counter',
  );
  for (const [profile, counts] of totals) {
    lines.push(`assistant_llm_cost_total${options.labels({ profile, currency: options.currency })} ${counts.cost}`);
  }
  lines.push(
    '# HELP assistant_llm_unpriced_calls_total Calls of LLM profiles without `prices:` (their cost is not in assistant_llm_cost_total).',
    '# TYPE assistant_llm_unpriced_calls_total counter',
  );
  for (const [profile, counts] of totals) {
    lines.push(`assistant_llm_unpriced_calls_total${options.labels({ profile })} ${counts.unpriced_calls}`);
  }
  return lines;
}

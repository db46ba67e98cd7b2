import { registerSecretValue } from '@assistant/errors';
import * as z from 'zod';
import { durationExamples, parseDuration } from './duration.ts';

/** A duration such as `30m`, normalised to milliseconds. */
export const durationSchema = z
  .string({ error: `expected a duration such as ${durationExamples}` })
  .transform((text, context) => {
    const ms = parseDuration(text);
    if (ms === undefined) {
      context.issues.push({
        code: 'custom',
        input: text,
        message: `\`${text}\` is not a duration: use a number and a unit (ms, s, m, h, d, w), e.g. ${durationExamples}`,
      });
      return z.NEVER;
    }
    return ms;
  });

const duration = durationSchema;

const rateLimitSchema = z
  .strictObject({ max: z.int().positive(), per: duration })
  .transform((value) => ({ max: value.max, perMs: value.per }));

const backoffSchema = z
  .strictObject({
    type: z.enum(['fixed', 'exponential']).default('exponential'),
    delay: duration.default(30_000),
    max: duration.optional(),
  })
  .superRefine((value, context) => {
    if (value.max !== undefined && value.max < value.delay) {
      context.addIssue({
        code: 'custom',
        path: ['max'],
        message: 'the longest backoff `max` is shorter than the first `delay`',
      });
    }
  })
  // Without `max`, backoff stops growing at an hour, or at `delay` when that is longer.
  .transform((value) => ({
    type: value.type,
    delayMs: value.delay,
    maxMs: value.max ?? Math.max(3_600_000, value.delay),
  }));

const policyFields = {
  dedup: z.boolean(),
  rate_limit: z.union([z.null(), rateLimitSchema]),
  max_attempts: z.int().min(1).max(100),
  backoff: backoffSchema,
  timeout: duration,
};
const toPolicy = (value: {
  dedup?: boolean | undefined;
  rate_limit?: z.output<typeof rateLimitSchema> | null | undefined;
  max_attempts?: number | undefined;
  backoff?: z.output<typeof backoffSchema> | undefined;
  timeout?: number | undefined;
}) => ({
  ...(value.dedup === undefined ? {} : { dedup: value.dedup }),
  ...(value.rate_limit === undefined ? {} : { rateLimit: value.rate_limit }),
  ...(value.max_attempts === undefined ? {} : { maxAttempts: value.max_attempts }),
  ...(value.backoff === undefined ? {} : { backoff: value.backoff }),
  ...(value.timeout === undefined ? {} : { timeoutMs: value.timeout }),
});

interface QueuePolicyShape {
  dedup: boolean;
  rateLimit: { max: number; perMs: number } | null;
  maxAttempts: number;
  backoff: { type: 'fixed' | 'exponential'; delayMs: number; maxMs: number };
  timeoutMs: number;
}

/** The policy of a task type no setting names. */
export const defaultPolicy: QueuePolicyShape = {
  dedup: true,
  rateLimit: null,
  maxAttempts: 3,
  backoff: { type: 'exponential', delayMs: 30_000, maxMs: 3_600_000 },
  timeoutMs: 600_000,
};

/** How long finished tasks are kept when no setting says. */
export const defaultRetention = { doneMs: 604_800_000, failedMs: 2_592_000_000 };

const policyOverride = z.strictObject({
  dedup: policyFields.dedup.optional(),
  rate_limit: policyFields.rate_limit.optional(),
  max_attempts: policyFields.max_attempts.optional(),
  backoff: policyFields.backoff.optional(),
  timeout: policyFields.timeout.optional(),
});

/** A task type or a pattern over task types: `email.inbox.classify`, `service.*`. */
const taskTypePattern = z
  .string()
  .regex(/^[a-z0-9_*-]+(\.[a-z0-9_*-]+)*$/, { error: 'expected a task type such as email.inbox.check or service.*' });

/** A secret from secrets.yaml as config hands it over (config's `Secret`), or the value written inline. */
interface SecretValue {
  reveal(): string;
}
const secretValue = z
  .union(
    [
      z.custom<SecretValue>(
        (value) => typeof value === 'object' && value !== null && typeof Reflect.get(value, 'reveal') === 'function',
      ),
      z.string().min(1),
    ],
    { error: 'expected `!secret name` (or the value itself)' },
  )
  .transform((value): SecretValue => {
    if (typeof value !== 'string') return value;
    // Written inline: scrubbed from everything this process writes, as secrets.yaml's values are.
    registerSecretValue(value);
    return { reveal: () => value, toJSON: () => '[secret inline]' } as SecretValue;
  })
  .meta({ secret: true });

const redisSchema = z.strictObject({
  url: z
    .string()
    .default('redis://127.0.0.1:6379')
    .superRefine((text, context) => {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        context.addIssue({ code: 'custom', message: `\`${text}\` is not a URL such as redis://127.0.0.1:6379` });
        return;
      }
      if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
        context.addIssue({ code: 'custom', message: 'expected a redis:// or rediss:// (TLS) URL' });
      }
      // config.yaml is shown, copied and committed; the password belongs in secrets.yaml.
      if (url.password !== '') {
        context.addIssue({
          code: 'custom',
          message: 'the URL holds a password: write `password: !secret redis_password` and put it in secrets.yaml',
        });
      }
    }),
  /** What every key of this install starts with: several installs (or tests) can share one Redis. */
  prefix: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, { error: 'expected letters, digits, `_`, `.` or `-` (at most 64)' })
    .default('assistant'),
  password: secretValue.optional(),
});

export const queueSchema = z
  .strictObject({
    /**
     * Where tasks live: `file` (data/queue, nothing to install) or `redis` (BullMQ on Redis or Valkey, for workers
     * on several machines; docs/scale-out.md).
     */
    backend: z.enum(['file', 'redis']).default('file'),
    redis: redisSchema.prefault({}),
    /**
     * How long a worker's claim holds without its heartbeat: a worker that vanished without a word (a machine off
     * the network) gets its tasks taken back after this. A worker that stopped on this machine is noticed at once.
     */
    lease: duration
      .refine((ms) => ms >= 1_000, { error: 'a lease under 1s would be lost between two heartbeats' })
      .default(60_000),
    durability: z.enum(['os', 'strict']).default('os'),
    max_task_bytes: z.int().min(1024).default(1_048_576),
    claim_grace: duration
      .refine((ms) => ms >= 100, {
        error: 'a claim grace under 100ms could recover tasks while they are being claimed',
      })
      .default(30_000),
    retention: z
      .strictObject({ done: duration.default(604_800_000), failed: duration.default(2_592_000_000) })
      .prefault({}),
    policies: z
      .strictObject({
        defaults: policyOverride.prefault({}),
        overrides: z.record(taskTypePattern, policyOverride).default({}),
      })
      .prefault({}),
  })
  .transform((value) => ({
    backend: value.backend,
    redis: value.redis,
    leaseMs: value.lease,
    durability: value.durability,
    maxTaskBytes: value.max_task_bytes,
    claimGraceMs: value.claim_grace,
    retention: { doneMs: value.retention.done, failedMs: value.retention.failed },
    policies: {
      defaults: { ...defaultPolicy, ...toPolicy(value.policies.defaults) },
      overrides: Object.fromEntries(
        Object.entries(value.policies.overrides).map(([pattern, override]) => [pattern, toPolicy(override)]),
      ),
    },
  }));
export type QueueConfig = z.output<typeof queueSchema>;
export type QueuePolicy = QueueConfig['policies']['defaults'];

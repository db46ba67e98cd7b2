import { formatDuration } from '@assistant/queue';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfig } from './load-config.ts';
import { formatProblem } from './problems.ts';
import { Secret } from './secret.ts';
import { serializeConfig, toYamlText } from './serialize-config.ts';
import { emailType } from './testing/email-type.ts';
import { Yolo } from './yolo.ts';

const secretsText = 'alpha: first secret\nbeta: "2"\n';
const secret = fc.constantFrom(new Secret('alpha', ''), new Secret('beta', ''));

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/);
const text = fc.string({ minLength: 1, maxLength: 30 }).filter((value) => value.trim() !== '');
const scalar = fc.oneof(text, fc.integer(), fc.boolean());
/** The same duration written the many ways people write it. */
const duration = fc.oneof(
  fc.integer({ min: 1, max: 500 }).map((value) => `${value}s`),
  fc.integer({ min: 1, max: 500 }).map((value) => `${value}m`),
  fc.integer({ min: 1, max: 48 }).map((value) => `${value}h`),
  fc.integer({ min: 1, max: 60 }).map((value) => `${value}d`),
  fc.integer({ min: 1, max: 8 }).map((value) => `${value}w`),
  fc.integer({ min: 1_000, max: 100_000_000 }).map((value) => formatDuration(value)),
);
const optional = <T>(shape: { [K in keyof T]: fc.Arbitrary<T[K]> }) => fc.record(shape, { requiredKeys: [] });

const classification = fc.oneof(
  text,
  fc.record({ prompt: text, type: fc.constantFrom('confidence', 'boolean') }),
  fc.record({ prompt: text, type: fc.constant('enum'), values: fc.uniqueArray(text, { minLength: 2, maxLength: 4 }) }),
);

const config = fc
  .record({
    llmNames: fc.uniqueArray(name, { maxLength: 3 }),
    scriptNames: fc.uniqueArray(name, { maxLength: 3 }),
  })
  .chain(({ llmNames, scriptNames }) => {
    const llmName = fc.constantFrom('default', ...llmNames);
    const action = fc.oneof(
      name,
      fc.dictionary(name, scalar, { minKeys: 1, maxKeys: 1 }),
      fc.record({
        service: optional({
          call: fc.constant('research.web.search'),
          inputs: fc.dictionary(name, scalar, { maxKeys: 2 }),
          human_log: text,
        }).map((service) => ({ ...service, call: 'research.web.search' })),
      }),
      ...(scriptNames.length > 0
        ? [
            optional({
              script: fc.constantFrom(...scriptNames),
              inputs: fc.dictionary(name, scalar, { maxKeys: 2 }),
            }).map((value) => ({ script: scriptNames[0], ...value })),
          ]
        : []),
    );
    const then = fc.oneof(
      action,
      fc.array(action, { minLength: 1, maxLength: 3 }),
      action.map((value) => new Yolo(value)),
      fc.array(action, { minLength: 1, maxLength: 2 }).map((list) => new Yolo(list)),
      fc.array(
        fc.oneof(
          action,
          action.map((value) => new Yolo(value)),
        ),
        { minLength: 1, maxLength: 3 },
      ),
    );
    const platform = optional({
      enabled: fc.boolean(),
      classifications: fc.dictionary(name, classification, { maxKeys: 3 }),
      automations: fc.array(
        fc.record(
          {
            name: text,
            when: fc.dictionary(text, fc.oneof(scalar, fc.array(scalar, { maxLength: 3 })), { maxKeys: 3 }),
            then,
          },
          { requiredKeys: ['when', 'then'] },
        ),
        { maxLength: 3 },
      ),
    });
    const schedule = fc.oneof(
      fc.record({ every: duration }),
      fc.record({ cron: fc.constantFrom('0 8-18 * * 1-5', '*/15 * * * *', '0 0 1 * *') }),
      fc.record({ cron: fc.constant('30 7 * * *'), timezone: fc.constantFrom('UTC', 'Europe/Berlin') }),
    );
    const integration = fc.record(
      {
        type: fc.constant('email'),
        name: fc.constant('placeholder'),
        imap_server: text,
        port: fc.integer({ min: 1, max: 65_535 }),
        password: fc.oneof(secret, text),
        enabled: fc.boolean(),
        shadow: fc.boolean(),
        schedule,
        llm: llmName,
        platforms: optional({ inbox: platform }),
      },
      { requiredKeys: ['type', 'name', 'imap_server'] },
    );
    const policy = optional({
      dedup: fc.boolean(),
      rate_limit: fc.oneof(fc.constant(null), fc.record({ max: fc.integer({ min: 1, max: 100 }), per: duration })),
      max_attempts: fc.integer({ min: 1, max: 100 }),
      // `max` is never shorter than `delay`: the schema refuses that.
      backoff: fc
        .record({
          type: fc.constantFrom('fixed', 'exponential'),
          delayMs: fc.integer({ min: 1_000, max: 10_000_000 }),
          extraMs: fc.integer({ min: 0, max: 10_000_000 }),
          withMax: fc.boolean(),
        })
        .map(({ type, delayMs, extraMs, withMax }) => ({
          type,
          delay: formatDuration(delayMs),
          ...(withMax ? { max: formatDuration(delayMs + extraMs) } : {}),
        })),
      timeout: duration,
    });
    return fc.record({
      data_dir: fc.constantFrom('./data', '/var/lib/assistant', 'state'),
      directories: optional({ queue: text, notes: text }),
      llms: fc.constant(null).chain(() =>
        fc
          .tuple(
            ...['default', ...llmNames].map(() =>
              optional({
                token: fc.oneof(secret, text),
                parameters: fc.dictionary(name, fc.oneof(scalar, fc.constant(null)), { maxKeys: 2 }),
                timeout: duration,
                max_in_flight: fc.integer({ min: 1, max: 256 }),
                requests_per_minute: fc.integer({ min: 1, max: 10_000 }),
                tokens_per_minute: fc.integer({ min: 1, max: 10_000_000 }),
              }),
            ),
          )
          .map((profiles) =>
            Object.fromEntries(
              ['default', ...llmNames].map((profile, index) => [
                profile,
                { base_url: 'http://127.0.0.1:11434/v1', model: `model-${index}`, ...profiles[index] },
              ]),
            ),
          ),
      ),
      integrations: fc
        .array(integration, { maxLength: 3 })
        .map((list) => list.map((entry, index) => ({ ...entry, name: `instance-${index}` }))),
      scripts: fc.constant(scriptNames).chain((names) =>
        fc
          .tuple(
            ...names.map(() =>
              fc.record(
                {
                  description: text,
                  shell: text,
                  inputs: fc.uniqueArray(name, { maxLength: 3 }),
                  timeout: duration,
                  reversible: fc.boolean(),
                },
                { requiredKeys: ['shell'] },
              ),
            ),
          )
          .map((scripts) => Object.fromEntries(names.map((script, index) => [script, scripts[index]]))),
      ),
      queue: optional({
        durability: fc.constantFrom('os', 'strict'),
        max_task_bytes: fc.integer({ min: 1024, max: 10_000_000 }),
        retention: optional({ done: duration, failed: duration }),
        policies: optional({
          defaults: policy,
          overrides: fc.dictionary(fc.constantFrom('email.inbox.check', 'service.*'), policy),
        }),
      }),
      server: optional({
        host: fc.constantFrom('127.0.0.1', 'localhost', '::1'),
        port: fc.integer({ min: 0, max: 65_535 }),
        event_streams_per_client: fc.integer({ min: 1, max: 100_000 }),
        dashboard: fc.boolean(),
      }),
      worker: optional({
        concurrency: fc.integer({ min: 1, max: 256 }),
        poll_interval: duration,
        shutdown_grace: duration,
        sandbox: fc.constantFrom('bubblewrap', 'none'),
        model_backlog: fc.integer({ min: 1, max: 1_000_000 }),
      }),
    });
  });

/** Secrets compare by name and value; everything else structurally. */
const comparable = (value: unknown): unknown =>
  JSON.parse(
    JSON.stringify(value, (_key, item: unknown) =>
      item instanceof Secret ? { secret: item.name, value: item.reveal() } : item,
    ),
  );

describe('normalisation round trip', () => {
  it('any config the normaliser accepts loads again, unchanged, from its canonical YAML', () => {
    let accepted = 0;
    fc.assert(
      fc.property(config, (input) => {
        const text = toYamlText(input);
        const first = parseConfig({ text, secretsText, integrationTypes: [emailType] });
        if (!first.config) {
          // Generated configs are meant to be valid; a rejection is worth seeing rather than skipping silently.
          throw new Error(`generated config rejected:\n${first.errors.map(formatProblem).join('\n')}\n---\n${text}`);
        }
        accepted++;
        const canonical = serializeConfig(first.config);
        const second = parseConfig({ text: canonical, secretsText, integrationTypes: [emailType] });
        expect(second.errors.map(formatProblem)).toEqual([]);
        expect(comparable(second.config)).toEqual(comparable(first.config));
        if (second.config) expect(serializeConfig(second.config)).toBe(canonical);
      }),
      { numRuns: 200 },
    );
    expect(accepted).toBe(200);
  });
});

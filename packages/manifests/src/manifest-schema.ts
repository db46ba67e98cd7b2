import { classificationSchema, identifierSchema, instanceNameSchema, scheduleSchema } from '@assistant/config';
import * as z from 'zod';
import { settingSpecSchema } from './setting-spec.ts';

/** `./src/check.ts#check`: a module path relative to the manifest and the name of the function it exports. */
export const handlerReferencePattern = /^(\.\/[^#\s]+)#([A-Za-z_$][\w$]*)$/;

const handlerReference = z.string().regex(handlerReferencePattern, {
  error: (issue) =>
    `\`${String(issue.input)}\` is not a handler reference: write \`./path/to/module.ts#exportName\`, relative to the manifest`,
});

const priority = z.int().min(0).max(9);

/** Reversibility tiers, from harmless to the kind that needs a person: see docs/integrations.md. */
export const reversibilityTiers = ['read_only', 'soft', 'hard', 'irreversible'] as const;
export type ReversibilityTier = (typeof reversibilityTiers)[number];

const settings = z.record(identifierSchema, settingSpecSchema).default({});

const stageSchema = z.strictObject({
  handler: handlerReference,
  /** Queue priority of tasks of this stage, 0 (first) to 9. */
  priority: priority.default(5),
  description: z.string().optional(),
  /**
   * The stage's work is one LLM call per task (a classify stage): its tasks wait for the instance's LLM profile, not
   * for worker slots, and are not claimed while the profile's breaker is open. The stage listed just before it feeds
   * it and is held back while the LLM stage's backlog is full. @default false
   */
  llm: z.boolean().default(false),
  /**
   * What running a task of this type does, on the reversibility tiers: a hook that enqueues it (`then: {enqueue:
   * …}`) takes an action of this tier. Undeclared, a hook's enqueue of it counts as irreversible.
   */
  tier: z.enum(reversibilityTiers).optional(),
});

const fieldTypes = ['boolean', 'string', 'number', 'date', 'list'] as const;
const fieldSchema = z.union([
  z.enum(fieldTypes),
  z.strictObject({
    type: z.enum(fieldTypes),
    description: z.string().optional(),
    /**
     * Whether the field is computed from our own state or a configured authentication server (an IMAP flag, an
     * `authserv_ids` result), not from what the item's sender wrote. A rule that tests any untrusted field is not
     * deterministic for irreversible actions: they need `approval: required` or `!yolo`. @default false
     */
    trusted: z.boolean().default(false),
  }),
]);

const actionSchema = z
  .strictObject({
    tier: z.enum(reversibilityTiers),
    /** The type of the action's argument when it takes one: `{move: Archive}` has a string argument. */
    argument: z.enum(['string', 'number', 'boolean']).optional(),
    /**
     * The argument may be left out (`then: comment` as well as `{comment: "Thanks!"}`): without it the action does its
     * default. Only with `argument`. @default false
     */
    argument_optional: z.boolean().optional(),
    /**
     * The item's field that says what the action will be done to (`unsubscribe_target`: the address or host an
     * unsubscribe goes to; `from_address`: who a reply goes to). Approval requests show its value, so a person approves
     * the target, not just the action's name.
     */
    target: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected the name of a field of the item, e.g. unsubscribe_target' })
      .optional(),
    description: z.string().optional(),
    /**
     * Instance settings the action cannot run without (`send_reply` needs `smtp`). `assistant config check` warns
     * about a rule that takes the action on an instance where one is not set; `for` says when it is needed, for an
     * action that needs it only sometimes (a mailto: unsubscribe, not a one-click one).
     */
    needs: z.array(z.strictObject({ setting: identifierSchema, for: z.string().optional() })).optional(),
  })
  .refine((action) => action.argument_optional !== true || action.argument !== undefined, {
    error: '`argument_optional` is only for an action with an `argument`',
    path: ['argument_optional'],
  });

const platformSchema = z
  .strictObject({
    description: z.string().optional(),
    /** The stage a schedule or a trigger enqueues; it discovers work and enqueues the next stages. */
    entry: identifierSchema,
    stages: z.record(identifierSchema, stageSchema),
    /** Settings of the platform beyond `enabled`, `classifications` and `automations`. */
    config: settings,
    /**
     * Built-in questions for the LLM, which an instance's `classifications:` extends (a classification of the same
     * name in config.yaml replaces the built-in one).
     */
    classifications: z.record(identifierSchema, classificationSchema).default({}),
    /** Facts the platform computes without an LLM, which automations may test (`is_noreply`, `from_domain`). */
    fields: z.record(identifierSchema, fieldSchema).default({}),
    /** What automations may do to an item of this platform, each with its reversibility tier. */
    actions: z.record(identifierSchema, actionSchema).default({}),
  })
  .superRefine((platform, context) => {
    if (!(platform.entry in platform.stages)) {
      context.addIssue({
        code: 'custom',
        path: ['entry'],
        message: `entry stage \`${platform.entry}\` is not one of the stages (${Object.keys(platform.stages).join(', ')})`,
      });
    }
  });

const serviceSchema = z.strictObject({
  handler: handlerReference,
  description: z.string().optional(),
  /** A liquid template for the human-log line written when a result is stored: `Researched {{ inputs.query }}`. */
  human_log: z.string().optional(),
  /** Whether what the service does can be undone. Services are irreversible unless they say otherwise. */
  reversible: z.boolean().default(false),
  priority: priority.default(5),
});

const taskSchema = z.strictObject({
  handler: handlerReference,
  description: z.string().optional(),
  priority: priority.default(5),
  /**
   * What running a task of this type does, on the reversibility tiers: a hook that enqueues it (`then: {enqueue:
   * …}`) takes an action of this tier. Undeclared, a hook's enqueue of it counts as irreversible.
   */
  tier: z.enum(reversibilityTiers).optional(),
});

/**
 * A process-lifetime handler the server starts for every enabled instance (a chat bot's long-polling loop). It
 * hands work to the queue as tasks of its own domain; one that throws or returns is restarted with backoff.
 */
const listenerSchema = z.strictObject({
  handler: handlerReference,
  description: z.string().optional(),
});

/** How a webhook request is authenticated before its handler runs; there is no unauthenticated webhook. */
export const webhookAuthKinds = ['hmac-sha256', 'standard-webhooks', 'slack', 'token'] as const;
export type WebhookAuthKind = (typeof webhookAuthKinds)[number];

const headerName = z
  .string()
  .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, { error: 'expected an HTTP header name such as X-Hub-Signature-256' })
  .transform((name) => name.toLowerCase());

/** A setting, or a field of an object setting: `webhook_secret`, `webhooks.secret`. */
const settingPath = z.string().regex(/^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$/, {
  error: 'expected a setting name, or `object.field` for a field of an object setting',
});

/** Methods whose requests carry no body, so an HMAC of the body authenticates nothing. */
const bodylessMethods = new Set(['GET', 'HEAD', 'DELETE']);

/** `/api/integrations/:instance/hooks/:name`: a route the server mounts for every enabled instance. */
const webhookSchema = z
  .strictObject({
    handler: handlerReference,
    description: z.string().optional(),
    /** @default [POST] */
    methods: z
      .array(z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']))
      .min(1)
      .default(['POST']),
    /** The largest body accepted, in bytes; a larger one is refused with 413 before the handler runs. @default 1 MiB */
    max_body: z
      .int()
      .min(1)
      .max(25 * 1024 * 1024)
      .default(1024 * 1024),
    /**
     * `hmac-sha256`: the server checks `signature_header` against the HMAC-SHA256 of the raw body keyed with the
     * instance's `secret_setting`, in constant time. `standard-webhooks`: the server checks the Standard Webhooks
     * headers (`webhook-id`, `webhook-timestamp` within 5 minutes, `webhook-signature` over `id.timestamp.body`) with
     * the `whsec_` secret of `secret_setting`; an instance without that secret has no such webhook (404/401).
     * `slack`: the server checks Slack's request signing (`x-slack-signature`: `v0=` and the HMAC-SHA256 of
     * `v0:<x-slack-request-timestamp>:<body>` keyed with `secret_setting`, the timestamp within 5 minutes); an
     * instance without that secret has no such webhook, as for `standard-webhooks`.
     * `token`: the request carries the API token, as every other route.
     */
    auth: z.enum(webhookAuthKinds, {
      error:
        'every webhook says how its requests are authenticated: `auth: hmac-sha256`, `auth: standard-webhooks`, `auth: slack` or `auth: token`',
    }),
    /**
     * For `hmac-sha256` and `standard-webhooks`: the instance setting (of type `secret`) that holds the shared secret;
     * `object.field` names a field of an object setting.
     */
    secret_setting: settingPath.optional(),
    /** For `hmac-sha256`: the header that carries the signature, e.g. `X-Hub-Signature-256`. */
    signature_header: headerName.optional(),
    /** For `hmac-sha256`: what precedes the hex digest in the header. @default `sha256=` */
    signature_prefix: z.string().max(32).optional(),
  })
  .superRefine((hook, context) => {
    if (hook.auth === 'standard-webhooks' || hook.auth === 'slack') {
      if (hook.secret_setting === undefined)
        context.addIssue({
          code: 'custom',
          path: ['secret_setting'],
          message: `\`auth: ${hook.auth}\` needs \`secret_setting\``,
        });
      const bodyless = hook.methods.filter((method) => bodylessMethods.has(method));
      if (bodyless.length > 0)
        context.addIssue({
          code: 'custom',
          path: ['methods'],
          message: `\`auth: ${hook.auth}\` signs the body, which ${bodyless.join(' and ')} requests do not have; use only POST, PUT or PATCH`,
        });
      for (const key of ['signature_header', 'signature_prefix'] as const) {
        if (hook[key] !== undefined)
          context.addIssue({ code: 'custom', path: [key], message: `\`${key}\` is only for \`auth: hmac-sha256\`` });
      }
    } else if (hook.auth === 'hmac-sha256') {
      for (const key of ['secret_setting', 'signature_header'] as const) {
        if (hook[key] === undefined)
          context.addIssue({ code: 'custom', path: [key], message: `\`auth: hmac-sha256\` needs \`${key}\`` });
      }
      // The signature covers only the body: a request without one would be authenticated by a MAC of nothing, the
      // same for every such request, so one seen signature would open the hook to anyone.
      const bodyless = hook.methods.filter((method) => bodylessMethods.has(method));
      if (bodyless.length > 0)
        context.addIssue({
          code: 'custom',
          path: ['methods'],
          message: `\`auth: hmac-sha256\` signs the body, which ${bodyless.join(' and ')} requests do not have; use \`auth: token\` for them, or only methods with a body (POST, PUT, PATCH)`,
        });
    } else {
      for (const key of ['secret_setting', 'signature_header', 'signature_prefix'] as const) {
        if (hook[key] !== undefined)
          context.addIssue({ code: 'custom', path: [key], message: `\`${key}\` is only for \`auth: hmac-sha256\`` });
      }
    }
  });

/** manifest.yaml: what an integration offers and how its instances are configured. */
export const manifestSchema = z.strictObject({
  /** The integration's name: the `type:` of its instances in config.yaml and the first part of its task types. */
  domain: identifierSchema,
  description: z.string().optional(),
  /** Settings of an instance beyond the shared keys (type, name, enabled, schedule, llm, platforms). */
  config: settings,
  platforms: z.record(identifierSchema, platformSchema).default({}),
  services: z.record(identifierSchema, serviceSchema).default({}),
  /** Task types of their own, outside any platform: `{domain}.{task}`, e.g. `system.echo`. */
  tasks: z.record(identifierSchema, taskSchema).default({}),
  /** Long-lived inbound loops the server runs for every enabled instance: `{poll: {handler: ./src/poll.ts#listen}}`. */
  listeners: z.record(identifierSchema, listenerSchema).default({}),
  /** Routes the server mounts under `/api/integrations/:instance/hooks/:name` for every enabled instance. */
  webhooks: z.record(identifierSchema, webhookSchema).default({}),
  /**
   * `assistant doctor`'s check of an instance (`./src/doctor.ts#checkAccount`): logs in, says exactly what is wrong.
   * Called with `{instance: {name, settings}, signal}`; answers `{ok, message, hint?}`.
   */
  doctor: handlerReference.optional(),
  /**
   * Event types of its own, registered in the event ledger as `{integration}.{name}`: what hooks may react to.
   * `fields` are what a hook's `when:` may test (the same field declarations as a platform's).
   */
  events: z
    .record(
      identifierSchema,
      z.strictObject({ description: z.string(), fields: z.record(identifierSchema, fieldSchema).default({}) }),
    )
    .default({}),
  /** An instance that exists without being listed in config.yaml (the builtin `system` integration's). */
  default_instance: z.strictObject({ name: instanceNameSchema, schedule: scheduleSchema.optional() }).optional(),
});

export type Manifest = z.output<typeof manifestSchema>;
export type ManifestPlatform = Manifest['platforms'][string];
export type ManifestService = Manifest['services'][string];
export type ManifestListener = Manifest['listeners'][string];
export type ManifestWebhook = Manifest['webhooks'][string];

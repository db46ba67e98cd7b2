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

const actionSchema = z.strictObject({
  tier: z.enum(reversibilityTiers),
  /** The type of the action's argument when it takes one: `{move: Archive}` has a string argument. */
  argument: z.enum(['string', 'number', 'boolean']).optional(),
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
  /**
   * `assistant doctor`'s check of an instance (`./src/doctor.ts#checkAccount`): logs in, says exactly what is wrong.
   * Called with `{instance: {name, settings}, signal}`; answers `{ok, message, hint?}`.
   */
  doctor: handlerReference.optional(),
  /** An instance that exists without being listed in config.yaml (the builtin `system` integration's). */
  default_instance: z.strictObject({ name: instanceNameSchema, schedule: scheduleSchema.optional() }).optional(),
});

export type Manifest = z.output<typeof manifestSchema>;
export type ManifestPlatform = Manifest['platforms'][string];
export type ManifestService = Manifest['services'][string];

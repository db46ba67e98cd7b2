import { durationSchema, refuseUrlCredentials, secretField } from '@assistant/config';
import * as z from 'zod';

/**
 * How a manifest declares one setting of its instances, in YAML: `port: {type: integer, default: 993}`, or just
 * the type name, `mailbox: string`. Kept small on purpose: every type here has a clear YAML spelling, a clear error
 * message and a JSON Schema, so `assistant config schema` can describe integration settings to editors too.
 */
export const settingTypes = [
  'string',
  'integer',
  'number',
  'boolean',
  'duration',
  'secret',
  'enum',
  'list',
  'path',
  'url',
  'object',
] as const;
export type SettingType = (typeof settingTypes)[number];

export interface SettingSpec {
  type: SettingType;
  description?: string | undefined;
  required: boolean;
  default?: unknown;
  min?: number | undefined;
  max?: number | undefined;
  /** For `enum`. */
  values?: string[] | undefined;
  /** For `list`: the type of each item. */
  items?: SettingSpec | undefined;
  /** For `object`: its keys, checked as strictly as the instance's own. */
  fields?: Record<string, SettingSpec> | undefined;
}

const settingObject: z.ZodType<SettingSpec, unknown> = z.lazy(() =>
  z
    .strictObject({
      type: z.enum(settingTypes),
      description: z.string().optional(),
      required: z.boolean().default(false),
      default: z.unknown().optional(),
      min: z.number().optional(),
      max: z.number().optional(),
      values: z.array(z.string().min(1)).min(1).optional(),
      items: settingSpecSchema.optional(),
      fields: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), settingSpecSchema).optional(),
    })
    .superRefine((spec, context) => {
      if (spec.type === 'enum' && spec.values === undefined) {
        context.addIssue({ code: 'custom', path: ['values'], message: 'an `enum` setting lists its `values`' });
      }
      if (spec.type === 'list' && spec.items === undefined) {
        context.addIssue({ code: 'custom', path: ['items'], message: 'a `list` setting says the type of its `items`' });
      }
      if (spec.type === 'object' && spec.fields === undefined) {
        context.addIssue({ code: 'custom', path: ['fields'], message: 'an `object` setting lists its `fields`' });
      }
      if (spec.type === 'secret' && spec.default !== undefined) {
        context.addIssue({ code: 'custom', path: ['default'], message: 'a secret has no default' });
      }
      if (spec.required && spec.default !== undefined) {
        context.addIssue({ code: 'custom', path: ['required'], message: 'a setting with a default is not required' });
      }
    }),
);

/** One setting's declaration: a type name, or `{type, required, default, description, …}`. */
export const settingSpecSchema: z.ZodType<SettingSpec, unknown> = z.union([
  z.enum(settingTypes).transform((type): SettingSpec => ({ type, required: false })),
  settingObject,
]);

/** The zod schema that checks a setting's value in config.yaml. */
function settingValueSchema(spec: SettingSpec): z.ZodType {
  let schema: z.ZodType;
  switch (spec.type) {
    case 'string':
    case 'path':
      schema = z.string().min(1);
      break;
    case 'url':
      schema = z
        .url({ error: 'expected a URL such as https://example.com' })
        .superRefine(
          refuseUrlCredentials(
            "remove `user:password@` from the URL; a credential goes in the integration's secret setting (`!secret name`) where it has one",
          ),
        );
      break;
    case 'integer':
    case 'number': {
      let number = spec.type === 'integer' ? z.int() : z.number();
      if (spec.min !== undefined) number = number.min(spec.min);
      if (spec.max !== undefined) number = number.max(spec.max);
      schema = number;
      break;
    }
    case 'boolean':
      schema = z.boolean();
      break;
    case 'duration':
      schema = durationSchema;
      break;
    case 'secret':
      schema = secretField;
      break;
    case 'enum':
      schema = z.enum((spec.values ?? []) as [string, ...string[]]);
      break;
    case 'list':
      schema = z.array(settingValueSchema(spec.items ?? { type: 'string', required: false }));
      break;
    case 'object':
      schema = z.strictObject(settingsShape(spec.fields ?? {}));
      break;
  }
  if (spec.description !== undefined) schema = schema.describe(spec.description);
  if (spec.required) return schema;
  // prefault, not default: the default goes through the schema like a written value (`5m` becomes 300000).
  if (spec.default !== undefined) return schema.prefault(spec.default as never);
  return schema.optional();
}

/** The zod shape of a group of settings, for the config schema of an integration's instances. */
export function settingsShape(specs: Record<string, SettingSpec>): Record<string, z.ZodType> {
  return Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, settingValueSchema(spec)]));
}

/** A default must itself be a valid value: a manifest's mistake is reported against the manifest. */
export function checkSettingDefaults(specs: Record<string, SettingSpec>, path: (string | number)[] = []) {
  const problems: { path: (string | number)[]; message: string }[] = [];
  for (const [name, spec] of Object.entries(specs)) {
    if (spec.default !== undefined) {
      const checked = settingValueSchema({ ...spec, default: undefined, required: true }).safeParse(spec.default);
      if (!checked.success) {
        problems.push({
          path: [...path, name, 'default'],
          message: `the default is not a valid ${spec.type}: ${checked.error.issues[0]?.message}`,
        });
      }
    }
    if (spec.fields) problems.push(...checkSettingDefaults(spec.fields, [...path, name, 'fields']));
  }
  return problems;
}

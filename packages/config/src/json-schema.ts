import * as z from 'zod';
import { buildConfigSchema, type ConfigSchemaOptions } from './schema.ts';

/**
 * A JSON Schema (draft 2020-12) of config.yaml as written, for editor completion (yaml-language-server:
 * `# yaml-language-server: $schema=./config.schema.json`). `!secret` fields appear as strings; `!yolo` is a tag
 * the editor sees through.
 */
export function configJsonSchema(options: ConfigSchemaOptions = {}): Record<string, unknown> {
  const schema = z.toJSONSchema(buildConfigSchema(options, true), {
    io: 'input',
    unrepresentable: 'any',
    override: (context) => {
      const meta = z.globalRegistry.get(context.zodSchema as unknown as z.ZodType) as
        | Record<string, unknown>
        | undefined;
      if (meta?.secret) {
        for (const key of Object.keys(context.jsonSchema)) delete context.jsonSchema[key];
        Object.assign(context.jsonSchema, {
          type: 'string',
          description: 'A secret: write `!secret name` and put `name: value` in secrets.yaml.',
        });
      }
    },
  }) as Record<string, unknown>;
  return {
    ...schema,
    title: 'Assistant config.yaml',
    description: 'Configuration of Assistant. See docs/configuration.md.',
  };
}

// docs/configuration.md is the reference for config.yaml: every key the schema accepts must be in it, so a new
// key cannot ship undocumented.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { configJsonSchema } from '@assistant/config';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';

/** Keywords whose value is a single subschema. */
const subschemaKeywords = ['additionalProperties', 'items', 'not', 'propertyNames', 'contains', 'if', 'then', 'else'];
/** Keywords whose value is a list of subschemas. */
const subschemaListKeywords = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
/** Keywords whose value maps names to subschemas; only `properties` names are config keys. */
const subschemaMapKeywords = ['$defs', 'definitions', 'patternProperties', 'dependentSchemas'];

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * Every property name anywhere in a JSON Schema: `properties`, recursing through nested subschemas. Values of
 * `default`, `const`, `enum` and `examples` are data, not schemas, and are not walked.
 */
function propertyNames(schema: unknown, names = new Set<string>()): Set<string> {
  if (!isRecord(schema)) return names;
  const properties = schema.properties;
  if (isRecord(properties)) {
    for (const [name, property] of Object.entries(properties)) {
      names.add(name);
      propertyNames(property, names);
    }
  }
  for (const keyword of subschemaKeywords) propertyNames(schema[keyword], names);
  for (const keyword of subschemaListKeywords) {
    const list = schema[keyword];
    if (Array.isArray(list)) for (const item of list) propertyNames(item, names);
  }
  for (const keyword of subschemaMapKeywords) {
    const map = schema[keyword];
    if (isRecord(map)) for (const item of Object.values(map)) propertyNames(item, names);
  }
  return names;
}

describe('docs/configuration.md', () => {
  it('finds keys through nested subschemas', () => {
    const schema = {
      properties: { top: { anyOf: [{ type: 'null' }, { $ref: '#/$defs/thing' }] } },
      $defs: { thing: { properties: { inner: { items: { properties: { deep: {} } } } } } },
      additionalProperties: { oneOf: [{ properties: { extra: { default: { properties: { notAKey: 1 } } } } }] },
    };
    expect([...propertyNames(schema)].sort()).toEqual(['deep', 'extra', 'inner', 'top']);
  });

  it('mentions every key of config.yaml as `name`', async () => {
    const text = await readFile(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
    const names = [...propertyNames(configJsonSchema())].sort();
    // The walk reaches the nested keys (`base_url`, `every`, `rate_limit`, …), not just the top level.
    expect(names).toEqual(expect.arrayContaining(['data_dir', 'base_url', 'every', 'values', 'rate_limit', 'per']));
    const missing = names.filter((name) => !text.includes(`\`${name}\``));
    expect(missing, `keys not mentioned as \`name\` in docs/configuration.md: ${missing.join(', ')}`).toEqual([]);
  });
});

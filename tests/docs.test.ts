// docs/configuration.md is the reference for config.yaml: every key the schema accepts must be in it, so a new
// key cannot ship undocumented.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { configJsonSchema } from '@assistant/config';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';

/** Every property name anywhere in a JSON Schema. */
function propertyNames(schema: unknown, names = new Set<string>()): Set<string> {
  if (Array.isArray(schema)) {
    for (const item of schema) propertyNames(item, names);
    return names;
  }
  if (schema === null || typeof schema !== 'object') return names;
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' && value !== null && typeof value === 'object') {
      for (const [name, property] of Object.entries(value)) {
        names.add(name);
        propertyNames(property, names);
      }
    } else if (typeof value === 'object') {
      // additionalProperties, items, anyOf, oneOf, allOf, $defs, …
      propertyNames(value, names);
    }
  }
  return names;
}

describe('docs/configuration.md', () => {
  it('mentions every key of config.yaml', async () => {
    const text = await readFile(path.join(repoRoot, 'docs/configuration.md'), 'utf8');
    const names = [...propertyNames(configJsonSchema())];
    expect(names.length).toBeGreaterThan(30);
    const missing = names.filter((name) => !text.includes(`\`${name}\``));
    expect(missing, 'keys without a `backticked` mention in docs/configuration.md').toEqual([]);
  });
});

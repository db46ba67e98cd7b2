// A persona's tool pattern without `*` must name a tool that exists, or it is a typo (docs/agents.md, "Personas").
// The names it is checked against (`builtinToolNames`) are a list; this test keeps the list in step with every
// `defineTool({name: …})` of apps/, packages/ and integrations/, so a new tool cannot make a persona naming it fail.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { agentToolNames, builtinToolNames } from '@assistant/agents';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';

async function definedToolNames(): Promise<Set<string>> {
  const names = new Set<string>();
  for (const group of ['apps', 'packages', 'integrations']) {
    const entries = await readdir(path.join(repoRoot, group), { recursive: true, withFileTypes: true });
    for (const entry of entries) {
      const file = path.join(entry.parentPath, entry.name);
      if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
      if (file.includes(`${path.sep}node_modules${path.sep}`) || file.includes(`${path.sep}testing${path.sep}`))
        continue;
      const text = await readFile(file, 'utf8');
      // The name is the first property of every definition in the code base: `defineTool({ name: 'x', …`.
      for (const match of text.matchAll(/defineTool\(\{\s*name:\s*'([^']+)'/g)) names.add(match[1] ?? '');
    }
  }
  return names;
}

describe('builtinToolNames', () => {
  it('lists every tool the code defines, and the sub-agent tools', async () => {
    const defined = await definedToolNames();
    // The scan finds tools (a scan that found none would pass anything).
    expect(defined.size).toBeGreaterThan(10);
    expect([...defined].filter((name) => !builtinToolNames.includes(name))).toEqual([]);
    expect(builtinToolNames).toEqual(expect.arrayContaining([...agentToolNames]));
  });
});

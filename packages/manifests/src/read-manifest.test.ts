import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManifestError, manifestCacheEntry, parseManifest, readManifest } from './read-manifest.ts';

const integrations = fileURLToPath(new URL('../../../integrations', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'read-manifest-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A manifest of its own (a unique domain), so its cache entry is this test's. */
const manifestText = (domain: string) =>
  `domain: ${domain}\ndescription: a test integration\ntasks:\n  ping:\n    handler: ./ping.ts#ping\n    tier: read_only\n`;

describe('readManifest and its cache', () => {
  it('keeps every built-in manifest exactly through JSON (what the cache stores)', async () => {
    const names = (await readdir(integrations)).sort();
    expect(names.length).toBeGreaterThan(5);
    for (const name of names) {
      const text = await readFile(path.join(integrations, name, 'manifest.yaml'), 'utf8').catch(() => undefined);
      if (text === undefined) continue;
      const { manifest } = parseManifest(text, `${name}/manifest.yaml`);
      // Strict: a key whose value is undefined, which JSON would drop, fails it too.
      expect(JSON.parse(JSON.stringify(manifest)), name).toStrictEqual(manifest);
    }
  });

  it('reads a kept manifest from its entry, with the same positions, and parses a broken one every time', async () => {
    const domain = `cache${process.pid}x${Date.now()}`;
    const file = path.join(dir, 'manifest.yaml');
    const text = manifestText(domain);
    await writeFile(file, text);
    const first = await readManifest(file);
    const entry = await manifestCacheEntry(text);
    expect(JSON.parse(await readFile(entry, 'utf8'))).toStrictEqual(first.manifest);
    const second = await readManifest(file);
    expect(second.manifest).toStrictEqual(first.manifest);
    expect(second.source.positionOf(['tasks', 'ping', 'tier'])).toEqual({ line: 6, col: 5 });
    expect(second.source.positionOf(['tasks', 'ping', 'tier'])).toEqual(
      first.source.positionOf(['tasks', 'ping', 'tier']),
    );
    // What is read is the entry (which only whoever can change the code can write), not the YAML again.
    await writeFile(entry, JSON.stringify({ ...first.manifest, description: 'from the cache' }));
    expect((await readManifest(file)).manifest.description).toBe('from the cache');
    // A changed text is another entry; a broken one is never kept, and reported at every read.
    await writeFile(file, `${text}tasks: {}\n`);
    for (let round = 0; round < 2; round += 1) {
      await expect(readManifest(file, 'broken/manifest.yaml')).rejects.toBeInstanceOf(ManifestError);
    }
    await expect(readFile(await manifestCacheEntry(`${text}tasks: {}\n`))).rejects.toMatchObject({ code: 'ENOENT' });
    await rm(entry, { force: true });
  });
});

import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { readManifest, settingsTypeFile, settingsTypeSource } from '@assistant/manifests';
import { describe, expect, it } from 'vitest';
import { repoRoot } from './helpers/node-process.ts';

describe('generated settings types', () => {
  it('match every builtin manifest that declares settings (run `npm run generate:settings` when this fails)', async () => {
    const checked: string[] = [];
    for (const name of await readdir(path.join(repoRoot, 'integrations'))) {
      const manifestFile = path.join(repoRoot, 'integrations', name, 'manifest.yaml');
      const { manifest } = await readManifest(manifestFile);
      const target = path.join(repoRoot, 'integrations', name, settingsTypeFile);
      const hasSettings =
        Object.keys(manifest.config).length > 0 ||
        Object.values(manifest.platforms).some((platform) => Object.keys(platform.config).length > 0);
      const current = await readFile(target, 'utf8').catch(() => undefined);
      if (!hasSettings) {
        expect(current, `${target} is left over from settings the manifest no longer declares`).toBeUndefined();
        continue;
      }
      expect(current, `${path.relative(repoRoot, target)} is stale or missing`).toBe(settingsTypeSource(manifest));
      checked.push(name);
    }
    expect(checked).toContain('email');
  });
});

// `npm run generate:settings`: writes src/settings.generated.ts for every builtin integration whose manifest declares
// settings, from the manifest (see settingsTypeSource). `--check` writes nothing and exits 1 naming stale files.

import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  formatManifestProblem,
  ManifestError,
  readManifest,
  settingsTypeFile,
  settingsTypeSource,
} from '@assistant/manifests';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const stale: string[] = [];
try {
  for (const name of (await readdir(path.join(root, 'integrations'))).sort()) {
    const manifestFile = path.join(root, 'integrations', name, 'manifest.yaml');
    const found = await readFile(manifestFile, 'utf8').then(
      () => true,
      () => false,
    );
    if (!found) continue;
    const { manifest } = await readManifest(manifestFile, path.relative(root, manifestFile));
    const hasSettings =
      Object.keys(manifest.config).length > 0 ||
      Object.values(manifest.platforms).some((platform) => Object.keys(platform.config).length > 0);
    if (!hasSettings) continue;
    const target = path.join(root, 'integrations', name, settingsTypeFile);
    const wanted = settingsTypeSource(manifest);
    const current = await readFile(target, 'utf8').catch(() => undefined);
    if (current === wanted) continue;
    stale.push(path.relative(root, target));
    if (!check) await writeFile(target, wanted);
  }
} catch (error) {
  if (!(error instanceof ManifestError)) throw error;
  process.stderr.write(`${error.problems.map(formatManifestProblem).join('\n')}\n`);
  process.exit(2);
}
if (check && stale.length > 0) {
  process.stderr.write(`stale, run \`npm run generate:settings\`: ${stale.join(', ')}\n`);
  process.exitCode = 1;
} else {
  process.stdout.write(stale.length === 0 ? 'settings types are up to date\n' : `wrote ${stale.join(', ')}\n`);
}

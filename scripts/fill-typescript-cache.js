// `npm install` runs this (postinstall): it strips the types of Assistant's own TypeScript once, into the cache the
// server and the worker load it from (packages/process/src/typescript-cache.js, decision 0083), so that their first
// start after an install or an update does not start Node's stripper and keep its memory for as long as it runs.
// It never fails an install: a Node without what it needs, or a cache it cannot write, leaves the filling to the
// first start.
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = realpathSync(path.dirname(path.dirname(fileURLToPath(import.meta.url))));

/** The TypeScript a process can load: every `.ts` under a package's `src/`, tests and declarations aside. */
function sources() {
  const files = [];
  for (const group of ['apps', 'packages', 'integrations']) {
    let packages = [];
    try {
      packages = readdirSync(path.join(root, group), { withFileTypes: true }).filter((entry) => entry.isDirectory());
    } catch {
      continue;
    }
    for (const entry of packages) {
      const src = path.join(root, group, entry.name, 'src');
      let names = [];
      try {
        names = readdirSync(src, { recursive: true });
      } catch {
        continue;
      }
      for (const name of names) {
        if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts'))
          files.push(path.join(src, name));
      }
    }
  }
  return files;
}

if (
  typeof process.getBuiltinModule === 'function' &&
  typeof process.getBuiltinModule('node:module').stripTypeScriptTypes === 'function'
) {
  try {
    const { strippedTypeScript } = await import('../packages/process/src/typescript-cache.js');
    const started = performance.now();
    let stripped = 0;
    const files = sources();
    for (const file of files) {
      if (!strippedTypeScript(pathToFileURL(file).href, readFileSync(file, 'utf8')).cached) stripped += 1;
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    process.stdout.write(
      `assistant: ${files.length} TypeScript files in the stripped cache (${stripped} stripped now, ${seconds} s)\n`,
    );
  } catch (error) {
    process.stdout.write(
      `assistant: the stripped TypeScript cache is left to the first start (${error instanceof Error ? error.message : String(error)})\n`,
    );
  }
}

// Assistant's own cache of TypeScript stripped of its types, for the processes that stay up (the server and the
// worker): decision 0083 says why it replaced Node's compile cache there. Plain JavaScript, so that it runs before
// any TypeScript can: typescript-cache-hook.js registers it first in such a process, and `npm install` fills it
// (scripts/fill-typescript-cache.js). Node's own modules come through process.getBuiltinModule: an `import` of them
// would build their whole namespace, and `node:http`'s alone loads undici, HTTP/2 and TLS (14 MB).

const fs = process.getBuiltinModule('node:fs');
const { createHash } = process.getBuiltinModule('node:crypto');
const module = process.getBuiltinModule('node:module');
const path = process.getBuiltinModule('node:path');
const { threadId } = process.getBuiltinModule('node:worker_threads');
const { fileURLToPath } = process.getBuiltinModule('node:url');

/**
 * Where the stripped sources are kept: beside the code, where only whoever can change the code can write, unless
 * ASSISTANT_TYPESCRIPT_CACHE names another directory (the tests' own).
 */
const typescriptCacheDirectory = () =>
  process.env.ASSISTANT_TYPESCRIPT_CACHE ||
  fileURLToPath(new URL('../../../node_modules/.cache/assistant-stripped-typescript/', import.meta.url));

/** Ends each cached file, after the stripped source: the hash of what it was stripped from, by which Node. */
const marker = '\n// assistant: stripped from ';

/** The hash a cached file must name to stand for `source` at `url`: the text, its place, and Node's stripper. */
const sourceHash = (url, source) =>
  createHash('sha256').update(process.version).update('\0').update(url).update('\0').update(source).digest('hex');

/** One file per source file (its URL's hash): a changed source overwrites its entry, so the cache does not grow. */
const entryPath = (directory, url) =>
  path.join(directory, `${createHash('sha256').update(url).digest('hex').slice(0, 40)}.js`);

/**
 * `source` (the TypeScript at `url`) without its types, as Node strips them (types become blanks, so every line and
 * column stays where it was), from the cache when an entry names this very source, else stripped here and kept.
 * Stripping starts Node's stripper, a WebAssembly instance whose memory never shrinks (about 25 MB): a process that
 * finds everything it loads here never starts it. A cache that cannot be read or written is only slower.
 */
export function strippedTypeScript(url, source) {
  const hash = sourceHash(url, source);
  const directory = typescriptCacheDirectory();
  const entry = entryPath(directory, url);
  try {
    const text = fs.readFileSync(entry, 'utf8');
    const at = text.lastIndexOf(marker);
    if (at !== -1 && text.slice(at + marker.length) === hash) return { code: text.slice(0, at), cached: true };
  } catch {
    // No entry yet: strip below.
  }
  const code = stripQuietly(source);
  try {
    fs.mkdirSync(directory, { recursive: true, mode: 0o700 });
    // Per thread: a code-mode cell's worker thread inherits the hook, and may write the same entry at once.
    const temporary = `${entry}.${process.pid}-${threadId}.tmp`;
    fs.writeFileSync(temporary, `${code}${marker}${hash}`, { mode: 0o600 });
    fs.renameSync(temporary, entry);
  } catch {
    // A read-only installation: every start strips again.
  }
  return { code, cached: false };
}

/**
 * module.stripTypeScriptTypes, without the one-time warning that it is experimental: the stripping is the same Node
 * does for every TypeScript file it loads (`--experimental-strip-types`, on by default), and a warning on the server's
 * or the worker's stderr would say otherwise.
 */
function stripQuietly(source) {
  const { emitWarning } = process;
  process.emitWarning = (warning, ...rest) => {
    const name = typeof rest[0] === 'string' ? rest[0] : rest[0]?.type;
    if (name !== 'ExperimentalWarning') emitWarning.call(process, warning, ...rest);
  };
  try {
    return module.stripTypeScriptTypes(source, { mode: 'strip' });
  } finally {
    process.emitWarning = emitWarning;
  }
}

import { randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/** `data/hooks`: the runner's state, files a person can `ls` and read (docs/hooks.md "How hooks run"). */
export function hooksDataDir(dataDir: string): string {
  return path.join(dataDir, 'hooks');
}

/** Writes `value` as JSON to `file` whole or not at all: a temp file, fsynced, renamed over it. */
export async function writeJsonAtomic(file: string, value: unknown, options: { sync?: boolean } = {}): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`);
    if (options.sync !== false) await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}

/**
 * Creates `file` with `value` only if it does not exist, whole or not at all: the JSON is written to a temp file and
 * fsynced, then linked to `file` (link fails when the name exists, like O_EXCL, and a crash cannot leave the file
 * empty or half-written, as one opened with O_EXCL and then written could). True when this call created it. The
 * record that a firing happened: whoever creates it performs the firing, and nobody else ever does.
 */
export async function createJsonOnce(file: string, value: unknown): Promise<boolean> {
  const directory = path.dirname(file);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await link(tmp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    await unlink(tmp).catch(() => {});
  }
  // The directory entry too: a power cut must not forget that the firing happened.
  const entry = await open(directory, 'r');
  try {
    await entry.sync();
  } finally {
    await entry.close();
  }
  return true;
}

/** The JSON in `file`, or undefined when it is missing or unreadable (a torn temp file never is: see above). */
export async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** The `.json` files of a folder (none when it does not exist). */
export async function jsonFiles(directory: string): Promise<string[]> {
  try {
    return (await readdir(directory))
      .filter((name) => name.endsWith('.json'))
      .map((name) => path.join(directory, name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

export async function removeFile(file: string): Promise<void> {
  await unlink(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * A JSON file of the integration's own state under `data/github/<instance>/` (a search's ETag, the delivery ids
 * seen). Missing or damaged reads as undefined: the state is a cache, and starting over costs a request, loses nothing.
 */
export async function readStateFile<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Writes the state atomically (a temporary file in the same folder, then rename), readable by the owner only. */
export async function writeStateFile(file: string, value: unknown): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface TempDir extends AsyncDisposable {
  path: string;
  /** Writes a file under the directory and returns its absolute path. */
  write(name: string, text: string, mode?: number): Promise<string>;
}

/** A fresh directory per test, removed by `await using`. */
export async function tempDir(): Promise<TempDir> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-test-'));
  return {
    path: directory,
    async write(name, text, mode = 0o644) {
      const file = path.join(directory, name);
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(file, text, { mode });
      return file;
    },
    async [Symbol.asyncDispose]() {
      await rm(directory, { recursive: true, force: true });
    },
  };
}

import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ConfigPaths } from '@assistant/config';
import { dataDirectories } from '@assistant/worker';
import type { DoctorCheck } from './doctor-check.ts';

export interface CheckDataDirectoriesOptions {
  paths: ConfigPaths;
}

/** Creates each data directory and writes and removes a probe file in it: the only proof that it is writable. */
export async function checkDataDirectories(options: CheckDataDirectoriesOptions): Promise<DoctorCheck[]> {
  const failures: DoctorCheck[] = [];
  const directories = dataDirectories(options.paths);
  for (const directory of directories) {
    const probe = path.join(directory, `.assistant-doctor-${process.pid}`);
    try {
      await mkdir(directory, { recursive: true, mode: 0o700 });
      await writeFile(probe, 'probe\n', { mode: 0o600 });
      await rm(probe);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
      failures.push({
        ok: false,
        message: `data directory ${directory} is not writable (${code})`,
        hint: 'check its owner and permissions, or point `data_dir` (or --data) somewhere writable',
      });
    }
  }
  if (failures.length > 0) return failures;
  return [{ ok: true, message: `data directories writable (${directories.length} under ${options.paths.dataDir})` }];
}

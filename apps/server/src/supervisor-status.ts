import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecrets } from '@assistant/errors';
import * as z from 'zod';

/** apps/cli/src/start-supervisor.js writes it (supervisorStateFileName); this side only reads it. */
const supervisorStateFileName = 'supervisor.json';

/** A child of `assistant start` as /health shows it: how many times it was started again, and the last time why. */
export interface SupervisedProcessStatus {
  /** `server` or `worker`. */
  name: string;
  /** False while it waits to be started again. No pid: responses never name one (hole 13); the file has it. */
  running: boolean;
  restarts: number;
  last_restart?: { at: string; reason: string; code: number | null; signal: string | null };
  next_start_at?: string;
}

const stateSchema = z.object({
  supervisor_pid: z.int(),
  processes: z.record(
    z.string(),
    z.object({
      pid: z.int().nullable(),
      restarts: z.int().nonnegative(),
      last_restart: z
        .object({
          at: z.string(),
          reason: z.string(),
          code: z.int().nullable(),
          signal: z.string().nullable(),
        })
        .optional(),
      next_start_at: z.string().optional(),
    }),
  ),
});

export interface SupervisorStatusOptions {
  dataDir: string;
  /** Makes the data directory's absolute path relative in the reasons (a crash message may name a file). */
  scrubPaths: (text: string) => string;
  /** The pid the file must name: this process's parent, so a file an earlier `assistant start` left is not news. */
  supervisorPid?: number;
}

/**
 * What `assistant start` recorded in data/supervisor.json about its children (restarts, with why), or nothing when
 * this server does not run under it (`assistant serve`), or the file is missing or not what start writes. Reasons are
 * a crashed process's last error line, so they are scrubbed of secrets and of the data directory's path.
 */
export async function readSupervisorStatus(options: SupervisorStatusOptions): Promise<SupervisedProcessStatus[]> {
  let parsed: z.infer<typeof stateSchema>;
  try {
    const text = await readFile(path.join(options.dataDir, supervisorStateFileName), 'utf8');
    const checked = stateSchema.safeParse(JSON.parse(text));
    if (!checked.success) return [];
    parsed = checked.data;
  } catch {
    return [];
  }
  if (parsed.supervisor_pid !== (options.supervisorPid ?? process.ppid)) return [];
  return Object.entries(parsed.processes)
    .map(([name, child]) => ({
      name,
      running: child.pid !== null,
      restarts: child.restarts,
      ...(child.last_restart === undefined
        ? {}
        : {
            last_restart: {
              ...child.last_restart,
              reason: options.scrubPaths(scrubSecrets(child.last_restart.reason)),
            },
          }),
      ...(child.next_start_at === undefined ? {} : { next_start_at: child.next_start_at }),
    }))
    .sort((left, right) => left.name.localeCompare(right.name));
}

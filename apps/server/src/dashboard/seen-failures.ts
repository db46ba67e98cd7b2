import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Until when the owner has seen the failed tasks: the Overview lists the tasks that failed for good after it, and
 * "Mark as seen" moves it on. One small file, `data/dashboard/seen.json` (`{"failed_seen_until": "<ISO time>"}`),
 * shared by every browser and kept across restarts: the owner is one person, whichever tab they look from
 * (decision 0028).
 */
export function seenFile(dataDir: string): string {
  return path.join(dataDir, 'dashboard', 'seen.json');
}

/** The time up to which failures were seen, in ms since the epoch; 0 when never (or the file is not ours to read). */
export async function readFailuresSeenUntil(dataDir: string): Promise<number> {
  let text: string;
  try {
    text = await readFile(seenFile(dataDir), 'utf8');
  } catch {
    return 0;
  }
  try {
    const parsed = JSON.parse(text) as unknown;
    const value =
      parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>).failed_seen_until : undefined;
    const ms = typeof value === 'string' ? Date.parse(value) : Number.NaN;
    return Number.isFinite(ms) ? ms : 0;
  } catch {
    // A file broken by hand counts as never seen: every failure shows again, nothing is hidden.
    return 0;
  }
}

/** Records that failures up to `untilMs` were seen (never moving backwards), atomically. */
export async function markFailuresSeen(options: { dataDir: string; untilMs: number }): Promise<void> {
  const current = await readFailuresSeenUntil(options.dataDir);
  if (options.untilMs <= current) return;
  const file = seenFile(options.dataDir);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify({ failed_seen_until: new Date(options.untilMs).toISOString() })}\n`, {
    mode: 0o600,
  });
  await rename(temporary, file);
}

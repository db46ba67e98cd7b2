import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { holdClaims } from './claims-hold.ts';
import { decodeStateName, isScratchName, queuePaths, reasonSuffix } from './file-layout.ts';
import { isMissing } from './file-worker-directory.ts';
import { type TaskState, taskStates } from './interfaces.ts';

export interface SnapshotQueueFilesOptions {
  /** The queue's root directory (data/queue). */
  queueRoot: string;
  /** Who holds the claims meanwhile, for a person reading data/queue/claims-hold.json. */
  holder: string;
  /**
   * How long the claims may be held at most; the snapshot fails rather than hold them longer.
   * @default 30_000
   */
  holdMs?: number;
  signal?: AbortSignal;
}

/** One file of a state directory, as it was at the snapshot's moment. */
export interface QueueSnapshotFile {
  /** Relative to the queue root, with `/`: `done/0_2026…--system.echo.yaml`. */
  path: string;
  content: Buffer;
}

export interface QueueSnapshot {
  files: QueueSnapshotFile[];
  /** Tasks per state, counted as `assistant queue stats` counts them. */
  counts: Record<TaskState, number>;
  /** When the listing was found stable: the moment the snapshot shows. */
  atMs: number;
  /** How many listings it took (1 when nothing moved). */
  passes: number;
  /** How long the claims were held. */
  heldMs: number;
}

/** The snapshot could not find a moment when nothing moved within its hold. */
export class QueueSnapshotBusyError extends Error {
  override readonly name = 'QueueSnapshotBusyError';
}

const pauseBetweenPassesMs = 50;

/** Where a task leaves from is listed before where it goes (snapshotQueueFiles says why). */
const listingOrder: readonly TaskState[] = ['active', 'failed', 'done', 'pending'];

/**
 * A consistent copy of the queue's four state directories while workers run: holds the claims (so only running tasks
 * finishing or put back, and new tasks, still move files), then lists every state, reads what is new, and lists
 * again, until the second listing differs from the first only by tasks that arrived in pending/ meanwhile. Every
 * name of the first listing then stood in the same directory at both listings, so the files read are the queue as
 * it was at the first: each task exactly once, in the state it had. New tasks keep arriving while the server runs;
 * they are after the snapshot's moment, so they do not make it wait (a quiet moment may never come). A listing reads
 * the directories a task leaves before those it enters (active, failed, done, then pending): a task moving during a
 * listing is seen at least once, and a task seen twice or only half-moved differs at the next listing. A name in a
 * state directory never changes content (moves are renames to new names; a rewrite writes a new file and renames
 * it), so a file is read once however many passes it takes. tmp/ (writes in progress) and workers/ (heartbeats of
 * this machine's processes) are not part of it: a restored queue recovers the active tasks of workers that are
 * gone, as after a power cut.
 */
export async function snapshotQueueFiles(options: SnapshotQueueFilesOptions): Promise<QueueSnapshot> {
  const holdMs = options.holdMs ?? 30_000;
  const paths = queuePaths(options.queueRoot);
  const contents = new Map<string, Buffer>();
  const startedMs = Date.now();
  // A data directory no worker has started in yet: nothing to hold, but the hold's file needs its directory.
  await mkdir(options.queueRoot, { recursive: true, mode: 0o700 });
  const held = await holdClaims({ queueRoot: options.queueRoot, holder: options.holder, durationMs: holdMs });
  try {
    let before = await listStates(paths);
    for (let passes = 1; ; passes += 1) {
      options.signal?.throwIfAborted();
      let vanished = false;
      for (const [state, names] of before) {
        for (const name of names) {
          const key = `${state}/${name}`;
          if (contents.has(key)) continue;
          try {
            contents.set(key, await readFile(path.join(paths[state], name)));
          } catch (error) {
            if (!isMissing(error)) throw error;
            // Moved on since the listing: the next listing differs anyway.
            vanished = true;
          }
        }
      }
      const after = await listStates(paths);
      const atMs = Date.now();
      if (!vanished && onlyArrivals(before, after)) {
        const files: QueueSnapshotFile[] = [];
        const counts = { pending: 0, active: 0, done: 0, failed: 0 };
        // A task finishing writes done/x before it removes active/x@owner: a listing in between shows both. Recovery
        // drops such an active copy (the task is already elsewhere); the snapshot drops it the same way.
        const settledIds = new Set<string>();
        for (const [state, names] of before) {
          if (state === 'active') continue;
          for (const name of names) {
            const id = decodeStateName(state, name)?.id;
            if (id !== undefined) settledIds.add(id);
          }
        }
        for (const [state, names] of before) {
          const reasons = new Set(names.filter((name) => name.endsWith(reasonSuffix)));
          for (const name of names) {
            const decoded = decodeStateName(state, name);
            if (state === 'active' && decoded !== undefined && settledIds.has(decoded.id)) continue;
            const content = contents.get(`${state}/${name}`);
            if (content !== undefined) files.push({ path: `${state}/${name}`, content });
            // The rule of FileTaskQueue.entries, which `queue stats` counts.
            if (name.endsWith(reasonSuffix)) continue;
            if (decoded !== undefined || (state === 'failed' && reasons.has(name + reasonSuffix))) counts[state] += 1;
          }
        }
        return { files, counts, atMs, passes, heldMs: atMs - startedMs };
      }
      if (atMs - startedMs + pauseBetweenPassesMs >= holdMs) {
        throw new QueueSnapshotBusyError(
          `the queue kept changing for ${Math.round((atMs - startedMs) / 1_000)} s while its claims were held (${passes} listings): tasks kept finishing or arriving`,
        );
      }
      // Forget what left, so the map holds only files of the latest listing.
      const present = new Set([...after].flatMap(([state, names]) => names.map((name) => `${state}/${name}`)));
      for (const key of contents.keys()) if (!present.has(key)) contents.delete(key);
      before = after;
      // A breath between listings, so a task that is finishing right now has finished at the next one.
      await delay(pauseBetweenPassesMs, undefined, options.signal ? { signal: options.signal } : {});
    }
  } finally {
    await held.release();
  }
}

type Listing = Map<TaskState, string[]>;

async function listStates(paths: ReturnType<typeof queuePaths>): Promise<Listing> {
  const listing: Listing = new Map();
  for (const state of listingOrder) {
    let names: string[];
    try {
      // Files only: a directory or a link someone put there is not a task, and is not copied.
      names = (await readdir(paths[state], { withFileTypes: true }))
        .filter((entry) => entry.isFile())
        .map((entry) => entry.name);
    } catch (error) {
      if (!isMissing(error)) throw error;
      names = [];
    }
    // Editors' and writers' leftovers are not the queue's; a reason file belongs to its task in failed/.
    listing.set(state, names.filter((name) => name.endsWith(reasonSuffix) || !isScratchName(name)).sort());
  }
  return listing;
}

/**
 * Whether `after` is `before` plus tasks that arrived in pending/ only: nothing of `before` left its directory, no
 * other directory gained a file, and each new pending file is a task `before` did not hold anywhere (a task put
 * back or retried into pending/ has moved, and is not an arrival).
 */
function onlyArrivals(before: Listing, after: Listing): boolean {
  const idsBefore = new Set<string>();
  for (const [state, names] of before) {
    for (const name of names) {
      const id = decodeStateName(state, name)?.id;
      if (id !== undefined) idsBefore.add(id);
    }
  }
  for (const state of taskStates) {
    const earlier = before.get(state) ?? [];
    const later = new Set(after.get(state) ?? []);
    if (earlier.some((name) => !later.has(name))) return false;
    if (later.size === earlier.length) continue;
    if (state !== 'pending') return false;
    const known = new Set(earlier);
    for (const name of later) {
      if (known.has(name)) continue;
      const id = decodeStateName(state, name)?.id;
      if (id === undefined || idsBefore.has(id)) return false;
    }
  }
  return true;
}

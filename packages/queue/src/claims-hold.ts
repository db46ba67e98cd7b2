import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as z from 'zod';
import { pidAlive } from './file-worker-directory.ts';

// A claims hold: a file beside the state directories that asks every file-backend worker to claim nothing until it
// ends, so `assistant backup` can list the queue while only completions and enqueues still move files. It is a
// request, not a lock: it is bounded (`until`), and one whose process is gone is ignored, so a backup killed mid-way
// never stops a worker for longer than the hold it asked for, and a stale file needs no one to clean it up.

/** The hold's file in the queue root (data/queue/claims-hold.json). Not a state directory, never a task. */
export const claimsHoldFileName = 'claims-hold.json';

/** The longest hold anyone may ask for: a worker ignores the rest of a longer one. */
export const maxClaimsHoldMs = 120_000;

const holdSchema = z.object({
  holder: z.string().max(200),
  pid: z.int().positive(),
  host: z.string().max(255),
  since: z.iso.datetime(),
  until: z.iso.datetime(),
});

/** Who holds the claims, and until when. */
export type ClaimsHold = z.infer<typeof holdSchema>;

export interface HoldClaimsOptions {
  /** The queue's root directory (data/queue). */
  queueRoot: string;
  /** Who asks, for a person reading the file: `assistant backup`. */
  holder: string;
  /** How long the hold lasts at most, even if its holder never releases it. At most 120 s. */
  durationMs: number;
  /** @default Date.now */
  now?: () => number;
}

/** A hold taken: release it in a `finally`; releasing twice is harmless. */
export interface HeldClaims extends AsyncDisposable {
  hold: ClaimsHold;
  release(): Promise<void>;
}

/**
 * Asks every worker on this queue directory to stop claiming until released (or `durationMs` passes). Running tasks
 * go on and finish; nothing else changes. Refuses when another live holder already holds the claims.
 */
export async function holdClaims(options: HoldClaimsOptions): Promise<HeldClaims> {
  if (!(options.durationMs > 0 && options.durationMs <= maxClaimsHoldMs)) {
    throw new RangeError(`Expected a claims hold of 1 ms to ${maxClaimsHoldMs} ms, got ${options.durationMs}`);
  }
  const now = options.now ?? Date.now;
  const file = path.join(options.queueRoot, claimsHoldFileName);
  const existing = await readClaimsHold({ queueRoot: options.queueRoot, nowMs: now() });
  if (existing !== undefined) {
    throw new Error(
      `the queue's claims are already held by ${existing.holder} (pid ${existing.pid} on ${existing.host}) until ${existing.until}; try again after that`,
    );
  }
  const nowMs = now();
  const hold: ClaimsHold = {
    holder: options.holder,
    pid: process.pid,
    host: os.hostname(),
    since: new Date(nowMs).toISOString(),
    until: new Date(nowMs + options.durationMs).toISOString(),
  };
  // Written whole, then renamed over any stale hold: a worker never reads half a file.
  const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify(hold)}\n`, { mode: 0o600 });
  await rename(temporary, file);
  let released: Promise<void> | undefined;
  const release = () => {
    released ??= (async () => {
      // Only our own: a hold that expired and was replaced by someone else's is theirs.
      const current = await readHoldFile(file);
      if (current?.pid === hold.pid && current.host === hold.host && current.since === hold.since) {
        await rm(file, { force: true });
      }
    })();
    return released;
  };
  return { hold, release, [Symbol.asyncDispose]: release };
}

export interface ReadClaimsHoldOptions {
  queueRoot: string;
  nowMs: number;
}

/**
 * The hold in force now, or undefined: none, expired, unreadable, or its holder's process gone (on this host; a hold
 * from another host counts until it expires). At most {@link maxClaimsHoldMs} from its start, whatever it says.
 */
export async function readClaimsHold(options: ReadClaimsHoldOptions): Promise<ClaimsHold | undefined> {
  const file = path.join(options.queueRoot, claimsHoldFileName);
  // Asked before every claim, and almost always answered "none": one access(2) on this thread costs a few
  // microseconds, where a read that fails costs a trip through the thread pool and an ENOENT error with its stack.
  if (!existsSync(file)) return undefined;
  const hold = await readHoldFile(file);
  if (hold === undefined) return undefined;
  const sinceMs = Date.parse(hold.since);
  const untilMs = Math.min(Date.parse(hold.until), sinceMs + maxClaimsHoldMs);
  if (!(options.nowMs < untilMs)) return undefined;
  if (hold.host === os.hostname() && !pidAlive(hold.pid)) return undefined;
  return { ...hold, until: new Date(untilMs).toISOString() };
}

async function readHoldFile(file: string): Promise<ClaimsHold | undefined> {
  // A hold that cannot be read (none, a directory, truncated, hand-made, too large) holds nothing: it must never
  // stop a worker, and a worker must not fail its claims over it.
  try {
    const text = await readFile(file, 'utf8');
    if (text.length > 4_096) return undefined;
    const parsed = holdSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

import { createHash, randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';

/**
 * Both settings make an acknowledged task durable: an enqueue, a retry, and the next state's file of a task leaving
 * active/ (done/, failed/, back to pending/) are on disk, file and directory entry, before the call returns.
 * `os` leaves the rest to the OS's flush (seconds): a claim, and the removal of the file a task left, so a power cut
 * can undo a claim or bring back a copy that recovery then removes. `strict` fsyncs those directories too, so every
 * move is on disk when its call returns.
 */
export type Durability = 'os' | 'strict';

/** A directory opened for fsync: the part of a FileHandle the group commit uses. */
export interface SyncHandle {
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** One fsync of a directory: it takes in callers until it calls fsync. */
interface SyncBatch {
  done: Promise<void>;
}

/** One directory's group commit: the batch still taking callers, and the last one started. */
interface DirectorySyncState {
  joinable: SyncBatch | undefined;
  last: Promise<void> | undefined;
}

/**
 * Group commit of directory fsyncs. A caller needs an fsync that starts after its own rename, which has returned
 * when it calls: so it joins the batch whose fsync has not been called yet, or starts one. A batch waits for the one
 * before it to end first, and meanwhile every caller that arrives joins it: a burst of enqueues costs about two
 * fsyncs per fsync's duration, not one each.
 */
export class DirectorySyncs {
  readonly #open: (directory: string) => Promise<SyncHandle>;
  readonly #states = new Map<string, DirectorySyncState>();

  /** `openDirectory` is for tests. @default opens the directory read-only */
  constructor(openDirectory: (directory: string) => Promise<SyncHandle> = (directory) => open(directory, 'r')) {
    this.#open = openDirectory;
  }

  /** Resolves once an fsync of `directory` that was called after this call has finished. */
  sync(directory: string): Promise<void> {
    let state = this.#states.get(directory);
    if (!state) {
      state = { joinable: undefined, last: undefined };
      this.#states.set(directory, state);
    }
    if (state.joinable) return state.joinable.done;
    const current = state;
    const before = state.last;
    const batch: SyncBatch = { done: Promise.resolve() };
    batch.done = (async () => {
      await before?.catch(() => undefined);
      const handle = await this.#open(directory);
      try {
        // From here on a caller's rename may come after the fsync has begun: it waits for the next batch.
        if (current.joinable === batch) current.joinable = undefined;
        await handle.sync();
      } finally {
        if (current.joinable === batch) current.joinable = undefined;
        await handle.close();
      }
    })();
    state.joinable = batch;
    state.last = batch.done;
    const forget = () => {
      if (current.last === batch.done && current.joinable === undefined) this.#states.delete(directory);
    };
    batch.done.then(forget, forget);
    return batch.done;
  }
}

/**
 * The name in tmp/ of a task file being written for a state's directory: `{state}.{digest}.{random}.{file name}.tmp`,
 * the digest being the first 16 hex digits of the text's SHA-256. It says where the file belongs and what it must
 * hold, so recovery can tell a complete write that a crash stopped before its rename from a torn one, and put the
 * complete one in place. At most 211 bytes with the longest task name, within the 255 a file name may have.
 */
export function taskTmpName(state: 'pending' | 'done' | 'failed', fileName: string, text: string): string {
  return `${state}.${textDigest(text)}.${randomBytes(4).toString('hex')}.${fileName}.tmp`;
}

function textDigest(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

const taskTmpPattern = /^(pending|done|failed)\.([0-9a-f]{16})\.[0-9a-f]{8}\.(.+\.yaml)\.tmp$/;

/** Where a tmp/ file named by {@link taskTmpName} belongs; undefined for any other name (heartbeats, reasons). */
export function parseTaskTmpName(
  tmpName: string,
): { state: 'pending' | 'done' | 'failed'; fileName: string; digest: string } | undefined {
  const match = taskTmpPattern.exec(tmpName);
  if (!match) return undefined;
  return { state: match[1] as 'pending' | 'done' | 'failed', digest: match[2] as string, fileName: match[3] as string };
}

/** Whether `text` is what a file named by {@link taskTmpName} was to hold, in full. */
export function isCompleteTmpText(digest: string, text: string): boolean {
  return textDigest(text) === digest;
}

export interface WriteFileDurablyOptions {
  /** Where the file is written before it is renamed into place: the queue's tmp/, on the same filesystem. */
  tmpDir: string;
  target: string;
  text: string;
  /**
   * When given, the target's directory is fsynced after the rename (through this group commit), so the file is on
   * disk under its name when the call returns. Without it the name reaches the disk when the OS flushes.
   */
  directorySyncs?: DirectorySyncs | undefined;
  /** The file's name in tmpDir. @default `{pid}-{random}.tmp` */
  tmpName?: string;
}

/** Writes `text` to a fresh file in tmpDir, fsyncs it, and renames it over `target`: readers see all or nothing. */
export async function writeFileDurably(options: WriteFileDurablyOptions): Promise<void> {
  // A short name of its own, not the target's: a target name near the 255-byte limit must not overflow it. The
  // `.tmp` ending marks it as scratch; recovery sweeps what a crash left in tmp/ by age.
  const tmp = path.join(options.tmpDir, options.tmpName ?? `${process.pid}-${randomBytes(8).toString('hex')}.tmp`);
  // 0o600: payloads hold mail and issue text, which is nobody else's business on a shared machine.
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(options.text);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(tmp).catch(() => {});
    throw error;
  }
  await handle.close();
  try {
    await rename(tmp, options.target);
  } catch (error) {
    await unlink(tmp).catch(() => {});
    throw error;
  }
  await options.directorySyncs?.sync(path.dirname(options.target));
}

import { createHash, randomBytes } from 'node:crypto';
import { link, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChildRecord, ChildResult } from '../subagent-types.ts';

/**
 * Where sub-agents keep their state, one folder per parent task under `data/agents/`:
 *
 * - `<parent>/children/<child>.json`: the spawn record, written before the child's task is enqueued;
 * - `<parent>/inbox/<child>.json`: the child's result, written once, before the child's task counts as done;
 * - `.live/<child>`: a child with no result yet, holding its parent's task id — what the installation-wide cap
 *   counts (`countLiveChildren`), so a spawn reads one folder instead of every parent's, which grow with history.
 *
 * Both are whole or absent (a temp file fsynced, then linked or renamed into place), so a crash at any instant leaves
 * either nothing or the complete file.
 */

/** Task ids and child ids become file names: only these, so no id can reach outside `data/agents/`. */
const safeName = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;

const isSafeId = (id: string) => safeName.test(id) && !id.includes('..');

function assertSafeId(kind: string, id: string): void {
  if (!isSafeId(id))
    throw new TypeError(`Expected a ${kind} id usable as a file name, got ${JSON.stringify(id.slice(0, 80))}`);
}

export function agentsRoot(dataDir: string): string {
  return path.join(dataDir, 'agents');
}

export function childrenDir(root: string, parentTask: string): string {
  assertSafeId('task', parentTask);
  return path.join(root, parentTask, 'children');
}

export function inboxDir(root: string, parentTask: string): string {
  assertSafeId('task', parentTask);
  return path.join(root, parentTask, 'inbox');
}

/** A child's id: the same parent and key give the same child, so a replayed spawn finds the child it started. */
export function childIdFor(parentTask: string, key: string): string {
  return `ag-${createHash('sha256').update(parentTask).update('\0').update(key).digest('hex').slice(0, 16)}`;
}

async function writeTemp(directory: string, text: string): Promise<string> {
  await mkdir(directory, { recursive: true });
  const temp = path.join(directory, `.${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
  const handle = await open(temp, 'wx', 0o600);
  try {
    await handle.writeFile(text);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return temp;
}

async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r').catch(() => undefined);
  if (handle === undefined) return;
  try {
    await handle.sync();
  } catch {
    // Some file systems cannot fsync a directory; the link is still there, only its durability is the OS's.
  } finally {
    await handle.close();
  }
}

/** Creates `file` with `text` unless it exists: `written`, or `present` when another writer was first. */
export async function writeOnce(file: string, text: string): Promise<'written' | 'present'> {
  const directory = path.dirname(file);
  const temp = await writeTemp(directory, text);
  try {
    await link(temp, file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return 'present';
    throw error;
  } finally {
    await unlink(temp).catch(() => {});
  }
  await syncDirectory(directory);
  return 'written';
}

/** Replaces `file` with `text` whole (a reader sees the old text or the new, never a mix). */
export async function writeReplace(file: string, text: string): Promise<void> {
  const directory = path.dirname(file);
  const temp = await writeTemp(directory, text);
  try {
    await rename(temp, file);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(directory);
}

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file} cannot be read: ${(error as Error).message}`);
  }
}

export function readChildRecord(root: string, parentTask: string, childId: string): Promise<ChildRecord | undefined> {
  assertSafeId('child', childId);
  return readJson<ChildRecord>(path.join(childrenDir(root, parentTask), `${childId}.json`));
}

export function readChildResult(root: string, parentTask: string, childId: string): Promise<ChildResult | undefined> {
  assertSafeId('child', childId);
  return readJson<ChildResult>(path.join(inboxDir(root, parentTask), `${childId}.json`));
}

export function recordFile(root: string, parentTask: string, childId: string): string {
  assertSafeId('child', childId);
  return path.join(childrenDir(root, parentTask), `${childId}.json`);
}

function resultFile(root: string, parentTask: string, childId: string): string {
  assertSafeId('child', childId);
  return path.join(inboxDir(root, parentTask), `${childId}.json`);
}

/** The `.json` files of a folder (none when it does not exist), without their ending. */
export async function listIds(directory: string): Promise<string[]> {
  try {
    return (await readdir(directory))
      .filter((name) => name.endsWith('.json') && !name.startsWith('.'))
      .map((name) => name.slice(0, -'.json'.length))
      .sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/**
 * Writes a child's result into its parent's inbox, once: the first result of a child is the one its parent gets, so
 * a child task run twice (a crash after the write, a duplicate task) delivers once.
 */
export async function deliverChildResult(options: {
  root: string;
  record: Pick<ChildRecord, 'id' | 'parent_task'>;
  result: ChildResult;
}): Promise<'written' | 'present'> {
  const outcome = await writeOnce(
    resultFile(options.root, options.record.parent_task, options.record.id),
    `${JSON.stringify(options.result, null, 2)}\n`,
  );
  // After the result: a crash in between leaves a marker of a finished child, which the next process's first count
  // removes (`reconcileLive`); the other order could leave a running child uncounted.
  await unmarkLive(options.root, options.record.id);
  return outcome;
}

const liveDir = (root: string) => path.join(root, '.live');

/**
 * Marks a spawned child live: called once its record is written (the record is the truth; the marker only counts
 * it). Not fsynced: a marker lost with the power is made again by the next process's first count.
 */
export async function markLive(root: string, parentTask: string, childId: string): Promise<void> {
  assertSafeId('task', parentTask);
  assertSafeId('child', childId);
  await mkdir(liveDir(root), { recursive: true });
  await writeFile(path.join(liveDir(root), childId), `${parentTask}\n`, { mode: 0o600 });
}

async function unmarkLive(root: string, childId: string): Promise<void> {
  assertSafeId('child', childId);
  await unlink(path.join(liveDir(root), childId)).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
}

/**
 * When this process last brought each root's markers in line with the records (`performance.now()`): at its first
 * count, and again every 10 minutes, which also takes away the markers of children whose parent's folder was removed
 * (a task pruned by housekeeping while its child ran).
 */
const reconciledAt = new Map<string, number>();
const reconcileEveryMs = 10 * 60_000;

/**
 * Brings `.live/` in line with the records: a marker for every child with a record and no result, none for any
 * other. Reads every parent's folders, as every count once did: at a process's first count and then every 10 minutes,
 * which covers children spawned before the markers existed, and a crash or power cut between a write and its marker's.
 */
async function reconcileLive(root: string): Promise<void> {
  const startedAt = performance.now();
  const markers = await readdir(liveDir(root)).catch(() => [] as string[]);
  // Listed before the scan: a marker made meanwhile by another process is not in the list, and stays.
  const live = new Map<string, string>();
  // A folder or file no spawn would name (a person's) is not a parent or a child: it must not stop every count.
  for (const parent of (await readdir(root).catch(() => [] as string[])).filter(isSafeId)) {
    for (const id of await liveChildIds(root, parent)) if (isSafeId(id)) live.set(id, parent);
  }
  for (const name of markers) {
    // Its record was written before it, so the scan saw the child: not live there means finished, or removed.
    if (!live.has(name) && isSafeId(name)) await unmarkLive(root, name);
  }
  const listed = new Set(markers);
  for (const [child, parent] of live) {
    if (listed.has(child)) continue;
    await markLive(root, parent, child);
    // Delivered between the scan and the marker: take it away again.
    if (
      await stat(resultFile(root, parent, child)).then(
        () => true,
        () => false,
      )
    )
      await unmarkLive(root, child);
  }
  reconciledAt.set(root, startedAt);
}

/**
 * Children with no result yet: of one parent (its folders read), or over every parent when none is given — what
 * `agents.max_live` caps, counted from `.live/` (one folder, however many parents there have been).
 */
export async function countLiveChildren(root: string, parentTask?: string): Promise<number> {
  if (parentTask !== undefined) return (await liveChildIds(root, parentTask)).length;
  const last = reconciledAt.get(root);
  if (last === undefined || performance.now() - last > reconcileEveryMs) await reconcileLive(root);
  return (await readdir(liveDir(root)).catch(() => [] as string[])).filter(isSafeId).length;
}

/** A parent's children with a record and no result yet, from its two folders. */
async function liveChildIds(root: string, parentTask: string): Promise<string[]> {
  const finished = new Set(await listIds(inboxDir(root, parentTask)));
  return (await listIds(childrenDir(root, parentTask))).filter((id) => !finished.has(id));
}

/**
 * `children/<child>.claim`: the id of the task that runs the child, written once by that task as it starts. A crash
 * between enqueuing a child's task and recording it can leave two tasks for one child; the first to claim it runs it,
 * the other ends at once as a duplicate, so one child never runs twice (nor spawns its own children twice).
 */
function claimFile(root: string, parentTask: string, childId: string): string {
  assertSafeId('child', childId);
  return path.join(childrenDir(root, parentTask), `${childId}.claim`);
}

/** Claims the child for `taskId`; answers the task that holds the claim (this one, or the one that was first). */
export async function claimChild(options: {
  root: string;
  parentTask: string;
  childId: string;
  taskId: string;
}): Promise<string> {
  const file = claimFile(options.root, options.parentTask, options.childId);
  if ((await writeOnce(file, `${options.taskId}\n`)) === 'written') return options.taskId;
  return (await readFile(file, 'utf8')).trim();
}

/** The task that claimed the child, when one has. */
export async function childOwner(root: string, parentTask: string, childId: string): Promise<string | undefined> {
  try {
    return (await readFile(claimFile(root, parentTask, childId), 'utf8')).trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

import type { TaskQueue, TaskState } from '@assistant/queue';
import type { DashboardContext } from './dashboard-context.ts';
import { itemNoteOfTask } from './item-subjects.ts';

/**
 * Which tasks are about which item, for an item's timeline (its note page lists its check, collect, classify,
 * evaluate and act tasks in order). A task names its item in its payload or result, never in its file name, so the
 * files have to be read: this index reads each task once (and again when it changes state, which is when a collect
 * task's result names the note it wrote), keeps a few fields per task, and follows the queue by listing names and
 * diffing them with what it holds. The first build reads every task file, in the background; later ones read only
 * tasks that are new or moved. Memory follows the queue's size (retention prunes done and failed tasks), at about
 * 200 bytes a task, and at most {@link maxIndexedTasks} tasks are held.
 */
export interface IndexedTask {
  id: string;
  type: string;
  state: TaskState;
  integration: string | undefined;
  /** The item note it is about, if any. */
  item: string | undefined;
  createdAt: string;
  startedAt: string | undefined;
  finishedAt: string | undefined;
  /** The error's message for a failed task. */
  error: string | undefined;
}

/** The most tasks held; a queue larger than this (retention set very long) indexes its newest. */
const maxIndexedTasks = 200_000;
/** How long a pass may be skipped while the queue's counts per state stay the same. */
const unchangedPassMs = 10_000;
/** Task files read at once. */
const readConcurrency = 16;
/** The longest error excerpt kept. */
const errorExcerptLength = 200;

export class ItemTimelineIndex {
  readonly #queue: () => TaskQueue;
  readonly #tasks = new Map<string, IndexedTask>();
  readonly #byItem = new Map<string, Set<string>>();
  #refreshing: Promise<void> | undefined;
  #again = false;
  #built = false;
  #toRead = 0;
  #read = 0;
  #lastCounts = '';
  #lastPassMs = 0;

  constructor(queue: () => TaskQueue) {
    this.#queue = queue;
  }

  /** Whether the first full read is done; until then a timeline may miss tasks (`progress` says how far it is). */
  get ready(): boolean {
    return this.#built;
  }

  /** How far the current build is: task files read of those to read. */
  get progress(): { read: number; toRead: number } {
    return { read: this.#read, toRead: this.#toRead };
  }

  /**
   * Brings the index up to date with the queue. Concurrent calls share one pass (and a call during a pass runs one
   * more after it, so what it asked for is seen).
   */
  refresh(): Promise<void> {
    if (this.#refreshing) {
      this.#again = true;
      return this.#refreshing;
    }
    const run = async () => {
      do {
        this.#again = false;
        await this.#pass();
      } while (this.#again);
    };
    this.#refreshing = run().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  /** Refreshes, but waits at most `waitMs` for it (a page shows what the index holds then, and says so). */
  async refreshWithin(waitMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.refresh().catch(() => {}),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs);
      }),
    ]);
    clearTimeout(timer);
  }

  /** The tasks about an item, oldest first. */
  tasksOf(notePath: string): IndexedTask[] {
    const ids = this.#byItem.get(notePath);
    if (!ids) return [];
    return [...ids]
      .map((id) => this.#tasks.get(id))
      .filter((task): task is IndexedTask => task !== undefined)
      .sort((left, right) => left.createdAt.localeCompare(right.createdAt) || left.id.localeCompare(right.id));
  }

  /**
   * The tasks of a type prefix (`email.inbox.`) that ran while `atIso` passed, about no item: the check that found an
   * item is the one running when the item's first task was enqueued.
   */
  entryTaskAround(options: { typePrefix: string; integration: string | undefined; atIso: string }): IndexedTask[] {
    const at = Date.parse(options.atIso);
    const found: IndexedTask[] = [];
    for (const task of this.#tasks.values()) {
      if (task.item !== undefined || !task.type.startsWith(options.typePrefix)) continue;
      if (options.integration !== undefined && task.integration !== options.integration) continue;
      if (task.startedAt === undefined || task.finishedAt === undefined) continue;
      if (Date.parse(task.startedAt) <= at && at <= Date.parse(task.finishedAt)) found.push(task);
    }
    return found;
  }

  async #pass(): Promise<void> {
    const queue = this.#queue();
    // Listing every task costs about 0.1 s at 10,000: while the counts per state are what they were at the last pass,
    // and it was recent, nothing moved (a move changes two counts; an enqueue and a removal in between are caught by
    // the next full pass, at most `unchangedPassMs` later).
    const stats = await queue.stats();
    const counts = `${stats.pending}:${stats.active}:${stats.done}:${stats.failed}`;
    if (this.#built && counts === this.#lastCounts && Date.now() - this.#lastPassMs < unchangedPassMs) {
      this.#toRead = 0;
      this.#read = 0;
      return;
    }
    this.#lastCounts = counts;
    this.#lastPassMs = Date.now();
    // Pending and active first, then finished newest first: a queue past the bound keeps its newest tasks.
    const entries = (await queue.list()).slice(0, maxIndexedTasks);
    const present = new Map<string, TaskState>();
    for (const entry of entries) if (entry.name) present.set(entry.name.id, entry.state);
    for (const id of [...this.#tasks.keys()]) if (!present.has(id)) this.#forget(id);
    const stale = [...present].filter(([id, state]) => this.#tasks.get(id)?.state !== state).map(([id]) => id);
    this.#toRead = stale.length;
    this.#read = 0;
    let next = 0;
    const work = async () => {
      while (next < stale.length) {
        const id = stale[next] as string;
        next += 1;
        const record = await queue.get(id).catch(() => undefined);
        this.#read += 1;
        const task = record?.task;
        if (!record || !task) {
          this.#forget(id);
          continue;
        }
        this.#forget(id);
        const item = itemNoteOfTask(task);
        const message = task.error?.message;
        this.#tasks.set(id, {
          id,
          type: task.type,
          state: record.state,
          integration: task.integration,
          item,
          createdAt: task.createdAt,
          startedAt: task.startedAt,
          finishedAt: task.finishedAt,
          error:
            message === undefined
              ? undefined
              : message.length > errorExcerptLength
                ? `${message.slice(0, errorExcerptLength)}…`
                : message,
        });
        if (item !== undefined) {
          let ids = this.#byItem.get(item);
          if (!ids) {
            ids = new Set();
            this.#byItem.set(item, ids);
          }
          ids.add(id);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(readConcurrency, stale.length) }, work));
    this.#built = true;
  }

  #forget(id: string): void {
    const known = this.#tasks.get(id);
    if (!known) return;
    this.#tasks.delete(id);
    if (known.item !== undefined) {
      const ids = this.#byItem.get(known.item);
      ids?.delete(id);
      if (ids?.size === 0) this.#byItem.delete(known.item);
    }
  }
}

const indexes = new WeakMap<DashboardContext, ItemTimelineIndex>();

/** The server's one item timeline index, made the first time a page needs it. */
export function itemTimelineIndex(context: DashboardContext): ItemTimelineIndex {
  let index = indexes.get(context);
  if (!index) {
    index = new ItemTimelineIndex(context.queue);
    indexes.set(context, index);
  }
  return index;
}

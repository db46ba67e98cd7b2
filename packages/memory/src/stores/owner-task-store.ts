import type { Note, NoteStore } from '@assistant/notes';
import * as z from 'zod';
import { type MemoryProblem, memoryFolders, type OwnerTask } from '../memory-types.ts';
import {
  baseName,
  checkDue,
  checkName,
  datedRandomId,
  dueMs,
  invalidInput,
  isAlreadyThere,
  isSafeName,
  normaliseText,
  notFound,
  parseData,
  readFolder,
  readOne,
  shortHash,
} from './memory-notes.ts';

export interface NewOwnerTask {
  title: string;
  /** `YYYY-MM-DD` or an ISO instant. */
  due?: string;
  about?: string[];
  source?: string;
  createdBy: OwnerTask['created_by'];
  body?: string;
}

export interface OwnerTaskStore {
  /**
   * Tasks, soonest due first (undated last). `dueBefore` (`YYYY-MM-DD` or an instant; a bare date is midnight UTC)
   * keeps the dated ones due before it.
   */
  list(options?: {
    status?: OwnerTask['status'];
    dueBefore?: string;
  }): Promise<{ tasks: OwnerTask[]; problems: MemoryProblem[] }>;
  get(id: string): Promise<OwnerTask | undefined>;
  /** Idempotent for extraction (and chat with a source): the id is a hash of source and title. */
  add(task: NewOwnerTask): Promise<OwnerTask>;
  /** Changes only the keys given; `due: null` removes the due date. */
  update(
    id: string,
    changes: { status?: OwnerTask['status']; due?: string | null; title?: string },
  ): Promise<OwnerTask>;
}

const statuses = ['open', 'done', 'dropped'] as const;

const taskSchema = z.looseObject({
  title: z.string().trim().min(1),
  due: z
    .union([z.string(), z.date().transform((date) => date.toISOString().slice(0, 10))])
    .nullish()
    .refine((value) => value === null || value === undefined || isDue(value), {
      message: 'is not a date YYYY-MM-DD or an ISO instant',
    }),
  status: z.enum(statuses).nullish(),
  source: z.string().nullish(),
  created_by: z.enum(['owner', 'extraction', 'chat']).nullish(),
  about: z.array(z.string()).nullish(),
});

function isDue(value: string): boolean {
  try {
    checkDue(value);
    return true;
  } catch {
    return false;
  }
}

function taskPath(id: string): string {
  return `${memoryFolders.tasks}/${id}.md`;
}

/** A task note as the OwnerTask shape; throws (naming the field) when it does not fit. */
function parseOwnerTask(note: Note): OwnerTask {
  const data = parseData(taskSchema, note);
  return {
    path: note.path,
    id: baseName(note.path),
    title: data.title,
    ...(data.due ? { due: data.due } : {}),
    status: data.status ?? 'open',
    ...(data.source ? { source: data.source } : {}),
    // A task the owner wrote by hand has no `created_by`: it is the owner's.
    created_by: data.created_by ?? 'owner',
    about: data.about ?? [],
  };
}

/** The id of a task read from an item: the same follow-up from the same item is one task, however often it is read. */
export function extractedTaskId(options: { source: string; title: string }): string {
  return `t-${shortHash(options.source, normaliseText(options.title))}`;
}

/** The owner's follow-ups and to-dos under `tasks/` (not queue tasks). */
export function ownerTaskStore(options: { notes: NoteStore; nowMs?: () => number }): OwnerTaskStore {
  const { notes } = options;
  const now = options.nowMs ?? Date.now;
  const get = async (id: string) =>
    isSafeName(id) ? readOne({ notes, path: taskPath(id), parse: parseOwnerTask }) : undefined;

  return {
    get,
    async list(filter = {}) {
      if (filter.status !== undefined && !statuses.includes(filter.status)) {
        throw invalidInput(
          `Expected \`status\` to be one of open, done, dropped; got ${JSON.stringify(filter.status)}`,
        );
      }
      const beforeMs = filter.dueBefore === undefined ? undefined : dueMs(checkDue(filter.dueBefore, 'dueBefore'));
      const { items, problems } = await readFolder({ notes, folder: memoryFolders.tasks, parse: parseOwnerTask });
      const tasks = items
        .filter((task) => filter.status === undefined || task.status === filter.status)
        .filter((task) => beforeMs === undefined || (task.due !== undefined && dueMs(task.due) < beforeMs))
        .sort((left, right) => {
          const leftMs = left.due === undefined ? Number.POSITIVE_INFINITY : dueMs(left.due);
          const rightMs = right.due === undefined ? Number.POSITIVE_INFINITY : dueMs(right.due);
          return leftMs - rightMs || left.id.localeCompare(right.id);
        });
      return { tasks, problems };
    },
    async add(task) {
      const title = task.title.trim().replace(/\s+/g, ' ');
      if (!title) throw invalidInput(`Expected \`title\` to say what is to be done, got ${JSON.stringify(task.title)}`);
      if (!['owner', 'extraction', 'chat'].includes(task.createdBy)) {
        throw invalidInput(
          `Expected \`createdBy\` to be owner, extraction or chat; got ${JSON.stringify(task.createdBy)}`,
        );
      }
      const due = task.due === undefined ? undefined : checkDue(task.due);
      const source = task.source?.trim() || undefined;
      // Read from an item, a task has an id of its source and title, so reading the item again finds it again.
      const deterministic = task.createdBy !== 'owner' && source !== undefined;
      const id = deterministic ? extractedTaskId({ source, title }) : datedRandomId('t', now());
      const data: Record<string, unknown> = {
        id,
        title,
        ...(due ? { due } : {}),
        status: 'open',
        ...(source ? { source } : {}),
        created_by: task.createdBy,
        about: [...new Set((task.about ?? []).map((entry) => entry.trim()).filter(Boolean))],
      };
      try {
        return parseOwnerTask(
          await notes.create(taskPath(id), { data, body: task.body ? `${task.body.trim()}\n` : '' }),
        );
      } catch (error) {
        // Already there: its status and due date are the owner's now, and stay as they are.
        if (!deterministic || !isAlreadyThere(error)) throw error;
        const existing = await get(id);
        if (!existing) throw error;
        return existing;
      }
    },
    async update(id, changes) {
      const set: Record<string, unknown> = {};
      if (changes.status !== undefined) {
        if (!statuses.includes(changes.status)) {
          throw invalidInput(
            `Expected \`status\` to be one of open, done, dropped; got ${JSON.stringify(changes.status)}`,
          );
        }
        set.status = changes.status;
      }
      if (changes.due !== undefined) set.due = changes.due === null ? undefined : checkDue(changes.due);
      if (changes.title !== undefined) {
        const title = changes.title.trim().replace(/\s+/g, ' ');
        if (!title)
          throw invalidInput(`Expected \`title\` to say what is to be done, got ${JSON.stringify(changes.title)}`);
        set.title = title;
      }
      const existing = await notes.read(taskPath(checkName(id, 'id')));
      if (!existing) throw notFound(`No task \`${id}\` (${taskPath(id)})`);
      parseOwnerTask(existing);
      return parseOwnerTask(await notes.update(taskPath(id), { set, basedOn: existing }));
    },
  };
}

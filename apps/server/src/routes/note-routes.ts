import { mkdir } from 'node:fs/promises';
import { AssistantError } from '@assistant/errors';
import {
  BrokenNoteError,
  type FrontmatterData,
  NotePathError,
  type NoteStore,
  noteContainsText,
} from '@assistant/notes';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

/** A folder or note path relative to the notes root; anything with `..`, a leading `/` or a NUL never reaches disk. */
const notePath = z
  .string()
  .max(1_024)
  .refine((value) => !value.split(/[\\/]/).includes('..') && !value.startsWith('/') && !value.includes('\0'), {
    error: 'must be a path inside the notes folder, without `..`',
  });

const listQuery = z.strictObject({
  path: notePath.optional(),
  q: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1_000).default(200),
});

const summary = z.object({ path: z.string(), title: z.string().optional() });
const brokenNote = z.object({ path: z.string(), message: z.string() });

export interface NoteRoutesOptions {
  notes: NoteStore;
  /** The notes root, created on first use so a fresh data directory lists nothing instead of failing. */
  root: string;
}

/** `/api/notes`: list, search and read the notes people and the system keep under `data/notes`. */
export function registerNoteRoutes(app: AssistantServer, routes: RouteTable, options: NoteRoutesOptions): void {
  const { notes } = options;
  routes.add(app, {
    method: 'GET',
    url: '/api/notes',
    tag: 'notes',
    summary: 'List or search notes',
    description:
      'Notes under `path` (default: all). With `q`, only those whose frontmatter or body contains it, in any case. Broken notes are reported in `broken`, never fail the request.',
    query: listQuery,
    responses: {
      200: {
        description: 'the notes',
        schema: z.object({ notes: z.array(summary), broken: z.array(brokenNote) }),
      },
      400: { description: 'a path outside the notes folder', schema: errorBodySchema },
    },
    handler: async ({ query }) => {
      await mkdir(options.root, { recursive: true, mode: 0o700 });
      const broken: { path: string; message: string }[] = [];
      const needle = query.q?.toLowerCase();
      let found: { path: string; data: FrontmatterData; body: string }[];
      try {
        found = await notes.query({
          ...(query.path ? { folder: query.path } : {}),
          onBroken: (error) => broken.push({ path: error.path, message: error.message }),
        });
      } catch (error) {
        if (error instanceof NotePathError) throw new AssistantError('BAD_REQUEST', error.message);
        throw error;
      }
      const matching = needle === undefined ? found : found.filter((note) => noteContainsText(note, needle));
      return {
        notes: matching.slice(0, query.limit).map((note) => ({ path: note.path, ...titleOf(note.data) })),
        broken,
      };
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/notes/*',
    tag: 'notes',
    summary: 'Read one note',
    description: 'Its frontmatter as `data` and its markdown `body`. The path is relative to the notes folder.',
    params: z.object({ '*': notePath }),
    responses: {
      200: {
        description: 'the note',
        schema: z.object({ path: z.string(), data: z.record(z.string(), z.unknown()), body: z.string() }),
      },
      400: {
        description: 'a path outside the notes folder, or a note whose frontmatter is broken',
        schema: errorBodySchema,
      },
      404: { description: 'no such note', schema: errorBodySchema },
    },
    handler: async ({ params }) => {
      const relative = params['*'];
      try {
        await mkdir(options.root, { recursive: true, mode: 0o700 });
        const note = await notes.read(relative);
        if (!note) throw new AssistantError('NOT_FOUND', `no note ${relative}`);
        return { path: note.path, data: note.data, body: note.body };
      } catch (error) {
        if (error instanceof NotePathError) throw new AssistantError('BAD_REQUEST', error.message);
        if (error instanceof BrokenNoteError) throw new AssistantError('BAD_REQUEST', `broken note: ${error.message}`);
        if ((error as NodeJS.ErrnoException).code === 'EISDIR') {
          throw new AssistantError('NOT_FOUND', `${relative} is a folder; list it with /api/notes?path=${relative}`);
        }
        throw error;
      }
    },
  });
}

/** A note's title as lists show it: its `title`, `subject` or `name`, if any. */
export function titleOf(data: FrontmatterData): { title?: string } {
  for (const key of ['title', 'subject', 'name']) {
    const value = data[key];
    if (typeof value === 'string' && value !== '') return { title: value };
  }
  return {};
}

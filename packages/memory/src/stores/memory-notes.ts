import { createHash, randomBytes } from 'node:crypto';
import { AssistantError } from '@assistant/errors';
import { BrokenNoteError, type Note, type NoteStore } from '@assistant/notes';
import type * as z from 'zod';
import type { MemoryProblem } from '../memory-types.ts';

/** A store's notes read through a schema: the good ones, and the broken ones as problems (never rewritten). */
export async function readFolder<T>(options: {
  notes: NoteStore;
  folder: string;
  parse: (note: Note) => T;
}): Promise<{ items: T[]; problems: MemoryProblem[] }> {
  const problems: MemoryProblem[] = [];
  const notes = await options.notes.query({
    folder: options.folder,
    onBroken: (error) => problems.push({ path: error.path, message: error.message }),
  });
  const items: T[] = [];
  for (const note of notes) {
    if (!note.path.endsWith('.md')) continue;
    try {
      items.push(options.parse(note));
    } catch (error) {
      problems.push({ path: note.path, message: error instanceof Error ? error.message : String(error) });
    }
  }
  return { items, problems };
}

/** Reads one note of a store; a broken one is `undefined` here (list reports it), so a lookup never crashes. */
export async function readOne<T>(options: {
  notes: NoteStore;
  path: string;
  parse: (note: Note) => T;
}): Promise<T | undefined> {
  let note: Note | undefined;
  try {
    note = await options.notes.read(options.path);
  } catch (error) {
    if (error instanceof BrokenNoteError) return undefined;
    throw error;
  }
  if (!note) return undefined;
  try {
    return options.parse(note);
  } catch {
    return undefined;
  }
}

/** Parses a note's data with a schema, naming the note, the field and what was there when it does not fit. */
export function parseData<S extends z.ZodType>(schema: S, note: Note): z.infer<S> {
  const result = schema.safeParse(note.data);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const field = issue?.path.map(String).join('.') || '(frontmatter)';
  const received = issue?.path.reduce<unknown>(
    (value, key) => (value && typeof value === 'object' ? (value as Record<PropertyKey, unknown>)[key] : undefined),
    note.data,
  );
  throw new Error(
    `${note.path}: \`${field}\` ${issue?.message ?? 'is not valid'} (got ${received === undefined ? 'nothing' : JSON.stringify(received)})`,
  );
}

const safeName = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** True for a slug or id that names a note directly in its folder (no `/`, no `..`, no leading dot). */
export function isSafeName(value: string): boolean {
  return safeName.test(value) && !value.includes('..');
}

/** Throws MEMORY_INPUT_INVALID for a slug or id that is not a plain file name. */
export function checkName(value: string, field: string): string {
  if (!isSafeName(value)) {
    throw invalidInput(
      `Expected \`${field}\` to be a plain name (letters, digits, \`.\`, \`_\`, \`-\`; no \`/\` or \`..\`), got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** The last path segment without `.md`: a note's slug or id. */
export function baseName(notePath: string): string {
  return (notePath.split('/').at(-1) ?? notePath).replace(/\.md$/, '');
}

/** Lower case ASCII words joined by `-`: a file name anyone can type. */
export function slugify(text: string, fallback: string): string {
  const slug = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return slug || fallback;
}

/** Lower case, single spaces, no trailing full stop: the same statement written twice hashes the same. */
export function normaliseText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.!\s]+$/, '');
}

export function shortHash(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 16);
}

/** `<prefix>-<yyyymmdd>-<random>`: an id for what the owner writes (two equal statements are two facts). */
export function datedRandomId(prefix: string, nowMs: number): string {
  const day = new Date(nowMs).toISOString().slice(0, 10).replace(/-/g, '');
  return `${prefix}-${day}-${randomBytes(4).toString('hex')}`;
}

export function invalidInput(message: string): AssistantError {
  return new AssistantError('MEMORY_INPUT_INVALID', message);
}

export function notFound(message: string): AssistantError {
  return new AssistantError('MEMORY_NOT_FOUND', message);
}

/** True for a `create` that failed because the note already exists. */
export function isAlreadyThere(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'EEXIST';
}

const datePattern = /^\d{4}-\d{2}-\d{2}$/;
const instantPattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

/** A due date: `YYYY-MM-DD` (a real day) or an ISO instant with its offset. Throws MEMORY_INPUT_INVALID otherwise. */
export function checkDue(value: string, field = 'due'): string {
  const trimmed = value.trim();
  const valid =
    (datePattern.test(trimmed) && new Date(`${trimmed}T00:00:00Z`).toISOString().startsWith(trimmed)) ||
    (instantPattern.test(trimmed) && Number.isFinite(Date.parse(trimmed)));
  if (!valid) {
    throw invalidInput(
      `Expected \`${field}\` to be a date YYYY-MM-DD (2026-12-01) or an ISO instant with an offset (2026-12-01T09:00:00Z), got ${JSON.stringify(value)}`,
    );
  }
  return trimmed;
}

/** Milliseconds of a due date: a bare date counts from midnight UTC. */
export function dueMs(value: string): number {
  return datePattern.test(value) ? Date.parse(`${value}T00:00:00Z`) : Date.parse(value);
}

import * as z from 'zod';
import { FrontmatterError } from '../frontmatter.ts';
import { NotePathError } from '../note-path.ts';
import type { FieldCondition, NoteWhere } from '../note-query.ts';
import { BrokenNoteError, type Note, NoteConflictError, type UpdateNoteOptions } from '../note-store.ts';

/**
 * What a remote worker and the server say to each other about notes and the human log: the routes, the bodies
 * (zod, so both ends check the same shapes and the server's OpenAPI document shows them) and how the note store's
 * errors travel. The server's routes and HttpNoteStore/HttpHumanLog both import it, so they cannot drift apart.
 */
export const remoteStoreRoutes = {
  read: '/api/store/notes/read',
  readText: '/api/store/notes/text',
  listFolder: '/api/store/notes/folder',
  list: '/api/store/notes/list',
  query: '/api/store/notes/query',
  create: '/api/store/notes/create',
  update: '/api/store/notes/update',
  replaceText: '/api/store/notes/replace-text',
  delete: '/api/store/notes/delete',
  move: '/api/store/notes/move',
  log: '/api/store/log',
} as const;

/**
 * A note or folder path as sent; where it may point is checked by `confineRemoteNotePath` on the server (a refusal
 * there travels as NotePathError, as the file store's own refusals do).
 */
const pathText = z.string().max(1_024);
const frontmatterData = z.record(z.string(), z.unknown());

const noteWire = z.object({ path: z.string(), data: frontmatterData, body: z.string(), hash: z.string() });
const noteTextWire = z.object({ path: z.string(), text: z.string(), hash: z.string() });
const folderListingWire = z.object({ folders: z.array(z.string()), notes: z.array(z.string()) });

const fieldCondition: z.ZodType<FieldCondition> = z.union([
  z.string(),
  z.number(),
  z.boolean(),
  z.null(),
  z.array(z.unknown()),
  z.strictObject({
    eq: z.unknown().optional(),
    ne: z.unknown().optional(),
    gt: z.union([z.string(), z.number()]).optional(),
    gte: z.union([z.string(), z.number()]).optional(),
    lt: z.union([z.string(), z.number()]).optional(),
    lte: z.union([z.string(), z.number()]).optional(),
    exists: z.boolean().optional(),
    in: z.array(z.unknown()).optional(),
  }),
]);
const noteWhereWire: z.ZodType<NoteWhere> = z.record(z.string(), fieldCondition);

export const pathQueryWire = z.strictObject({ path: pathText });
export const folderQueryWire = z.strictObject({ folder: pathText.optional() });
export const queryRequestWire = z.strictObject({ folder: pathText.optional(), where: noteWhereWire.optional() });
export const createRequestWire = z.strictObject({
  path: pathText,
  data: frontmatterData,
  body: z.string().optional(),
});
export const updateRequestWire = z.strictObject({
  path: pathText,
  /** Keys to set. A key to remove is named in `unset` instead: JSON has no `undefined`. */
  set: frontmatterData.optional(),
  unset: z.array(z.string()).optional(),
  body: z.string().optional(),
  /** The note as the worker read it: the server runs the same key-overlap check as for a local update. */
  basedOn: z.strictObject({ hash: z.string(), data: frontmatterData, body: z.string() }).optional(),
  /** Write only if the file's hash is still this (checked under the note's lock), else `stale`. */
  ifHash: z.string().optional(),
});
export const replaceTextRequestWire = z.strictObject({ path: pathText, text: z.string(), basedOnHash: z.string() });
export const deleteRequestWire = z.strictObject({ path: pathText });
export const moveRequestWire = z.strictObject({ from: pathText, to: pathText });
export const logRequestWire = z.strictObject({
  source: z.string(),
  message: z.string(),
  reason: z.string().optional(),
  link: z.string().optional(),
  /** When it happened, as an ISO instant; the server writes it in its own time zone, as its local lines are. */
  at: z.iso.datetime({ offset: true }).optional(),
});

export const readAnswerWire = z.object({ note: noteWire.nullable() });
export const readTextAnswerWire = z.object({ note: noteTextWire.nullable() });
export const listFolderAnswerWire = z.object({ listing: folderListingWire.nullable() });
export const listAnswerWire = z.object({ paths: z.array(z.string()) });
export const noteAnswerWire = z.object({ note: noteWire });
export const deleteAnswerWire = z.object({ deleted: z.boolean() });
export const emptyAnswerWire = z.object({});

const brokenWire = z.object({
  kind: z.literal('broken'),
  path: z.string(),
  line: z.number(),
  column: z.number(),
  reason: z.string(),
});
export const queryAnswerWire = z.object({ notes: z.array(noteWire), broken: z.array(brokenWire.omit({ kind: true })) });

/** The file errors callers act on (`EEXIST` on create, `ENOENT` on update of a missing note); others stay server-side. */
const travellingErrnos = ['ENOENT', 'EEXIST', 'ENOTDIR', 'EISDIR'] as const;

/** Why a store call failed, beside the error body's `code` and `message`, so the client can rethrow the same error. */
const noteFailureWire = z.discriminatedUnion('kind', [
  brokenWire,
  z.object({ kind: z.literal('conflict'), path: z.string(), keys: z.array(z.string()) }),
  /** The file's hash was no longer `ifHash`: the client re-reads and tries again. */
  z.object({ kind: z.literal('stale'), path: z.string() }),
  z.object({ kind: z.literal('path') }),
  z.object({ kind: z.literal('errno'), errno: z.enum(travellingErrnos) }),
]);
export type NoteFailure = z.infer<typeof noteFailureWire>;

/** The error body of the store routes: the usual `{code, message}`, plus `failure` for a note store error. */
export const storeErrorBodyWire = z.object({
  error: z.object({ code: z.string(), message: z.string(), failure: noteFailureWire.optional() }),
});

/** A write refused because the file is no longer the version the worker decided its change from. */
export class StaleNoteError extends Error {
  override name = 'StaleNoteError';
  readonly path: string;

  constructor(notePath: string) {
    super(`${notePath} changed since it was read; read it again and decide the change anew`);
    this.path = notePath;
  }
}

/**
 * Refuses a path with a `..` segment, an absolute one or a NUL before anything touches the disk (the file store's
 * own checks, links included, still run after). Stricter than the file store, which allows `a/../b.md`: a remote
 * caller has no reason to send one.
 */
export function confineRemoteNotePath(value: string, options: { folder: boolean }): string {
  const refused =
    value.includes('\0') ||
    value.startsWith('/') ||
    value.split(/[\\/]/).includes('..') ||
    (!options.folder && value === '');
  if (refused) throw new NotePathError(`note path \`${value}\` must be a path inside the notes folder, without \`..\``);
  return value;
}

/** The HTTP answer for a note store error, or undefined for any other error (which the server treats as its own). */
export function noteFailureOf(
  error: unknown,
):
  | { status: number; code: 'BAD_REQUEST' | 'CONFLICT' | 'NOT_FOUND'; message: string; failure: NoteFailure }
  | undefined {
  if (error instanceof BrokenNoteError) {
    const cause = error.cause instanceof FrontmatterError ? error.cause : undefined;
    const reason = (cause?.message ?? error.message).replace(/^line \d+, column \d+: /, '');
    return {
      status: 409,
      code: 'CONFLICT',
      message: error.message,
      failure: { kind: 'broken', path: error.path, line: error.line, column: cause?.column ?? 0, reason },
    };
  }
  if (error instanceof NoteConflictError) {
    return {
      status: 409,
      code: 'CONFLICT',
      message: error.message,
      failure: { kind: 'conflict', path: error.path, keys: error.keys },
    };
  }
  if (error instanceof StaleNoteError) {
    return { status: 409, code: 'CONFLICT', message: error.message, failure: { kind: 'stale', path: error.path } };
  }
  if (error instanceof NotePathError) {
    return { status: 400, code: 'BAD_REQUEST', message: error.message, failure: { kind: 'path' } };
  }
  const errno = (error as NodeJS.ErrnoException | undefined)?.code;
  const known = travellingErrnos.find((candidate) => candidate === errno);
  if (known) {
    // Node's message names the absolute file (and a temp file): only the code and a relative description travel.
    const what = {
      ENOENT: 'there is no such note or folder',
      EEXIST: 'a note exists at that path already',
      ENOTDIR: 'a part of the path is a note, not a folder',
      EISDIR: 'the path is a folder, not a note',
    }[known];
    return {
      status: known === 'ENOENT' ? 404 : known === 'EEXIST' ? 409 : 400,
      code: known === 'ENOENT' ? 'NOT_FOUND' : known === 'EEXIST' ? 'CONFLICT' : 'BAD_REQUEST',
      message: `${known}: ${what}`,
      failure: { kind: 'errno', errno: known },
    };
  }
  return undefined;
}

/** The error the file store would have thrown, rebuilt from what the server sent (the inverse of noteFailureOf). */
export function errorFromNoteFailure(failure: NoteFailure, message: string): Error {
  switch (failure.kind) {
    case 'broken':
      return new BrokenNoteError(failure.path, new FrontmatterError(failure.reason, failure.line, failure.column));
    case 'conflict':
      return new NoteConflictError(failure.path, failure.keys);
    case 'stale':
      return new StaleNoteError(failure.path);
    case 'path':
      return new NotePathError(message);
    case 'errno':
      return Object.assign(new Error(message), { code: failure.errno });
  }
}

/**
 * The update a worker asked for, as the file store takes it: removals back to `undefined` keys, and `ifHash` as a
 * `change` that runs under the note's lock, so "only if still this version" is checked and written atomically.
 */
export function updateOptionsFromWire(request: z.infer<typeof updateRequestWire>): UpdateNoteOptions {
  const set =
    request.set === undefined && request.unset === undefined
      ? undefined
      : { ...request.set, ...Object.fromEntries((request.unset ?? []).map((key) => [key, undefined])) };
  const ifHash = request.ifHash;
  return {
    ...(set === undefined ? {} : { set }),
    ...(request.body === undefined ? {} : { body: request.body }),
    ...(request.basedOn === undefined ? {} : { basedOn: { path: request.path, ...request.basedOn } }),
    ...(ifHash === undefined
      ? {}
      : {
          change: (current: Note) => {
            if (current.hash !== ifHash) throw new StaleNoteError(request.path);
            return {};
          },
        }),
  };
}

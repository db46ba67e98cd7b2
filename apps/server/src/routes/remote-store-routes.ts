import { scrubSecrets } from '@assistant/errors';
import {
  confineRemoteNotePath,
  createRequestWire,
  deleteAnswerWire,
  deleteRequestWire,
  emptyAnswerWire,
  type FileHumanLog,
  type FileNoteStore,
  folderQueryWire,
  listAnswerWire,
  listFolderAnswerWire,
  logRequestWire,
  moveRequestWire,
  noteAnswerWire,
  noteFailureOf,
  pathQueryWire,
  queryAnswerWire,
  queryRequestWire,
  readAnswerWire,
  readTextAnswerWire,
  remoteStoreRoutes,
  replaceTextRequestWire,
  storeErrorBodyWire,
  updateOptionsFromWire,
  updateRequestWire,
} from '@assistant/notes';
import type { FastifyReply } from 'fastify';
import type { RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';

export interface RemoteStoreRoutesOptions {
  /** The server's own notes: every remote write lands in these files, under their locks and conflict checks. */
  notes: FileNoteStore;
  /** The server's daily log, where the owner reads what remote workers did. */
  humanLog: FileHumanLog;
}

const tag = 'store';

const pathRefused = {
  description: 'a path outside the notes folder, or a body that does not fit',
  schema: storeErrorBodyWire,
};
const brokenOrConflict = {
  description:
    '`failure.kind` says why: `broken` (the frontmatter does not parse: path, line, column), `conflict` (a change since `basedOn` touches the same keys: path, keys), `stale` (not the version `ifHash` names), `errno` `EEXIST`',
  schema: storeErrorBodyWire,
};
const missing = { description: '`failure.errno` `ENOENT`: no such note', schema: storeErrorBodyWire };

/**
 * `/api/store/…`: the note store and the human log for workers on other machines (HttpNoteStore, HttpHumanLog).
 * Each route is one NoteStore method applied to the server's files, so a remote write gets the local conflict
 * check (the based-on hash against the file on this disk) and the local errors, sent as `error.failure` for the
 * client to rethrow. Behind the API token and the Host/Origin checks like every route; paths are confined first.
 */
export function registerRemoteStoreRoutes(
  app: AssistantServer,
  routes: RouteTable,
  options: RemoteStoreRoutesOptions,
): void {
  const { notes, humanLog } = options;
  const note = (value: string) => confineRemoteNotePath(value, { folder: false });
  const folder = (value: string | undefined) => confineRemoteNotePath(value ?? '', { folder: true });

  routes.add(app, {
    method: 'GET',
    url: remoteStoreRoutes.read,
    tag,
    summary: 'Read a note with its hash',
    description:
      '`{note: {path, data, body, hash}}`, or `{note: null}` when there is none. `hash` is what an update is based on.',
    query: pathQueryWire,
    responses: { 200: { description: 'the note', schema: readAnswerWire }, 400: pathRefused, 409: brokenOrConflict },
    handler: ({ query, reply }) =>
      answering(reply, async () => ({ note: (await notes.read(note(query.path))) ?? null })),
  });

  routes.add(app, {
    method: 'GET',
    url: remoteStoreRoutes.readText,
    tag,
    summary: "Read a note's exact text with its hash",
    description: 'Whether or not its frontmatter parses; `{note: null}` when there is none.',
    query: pathQueryWire,
    responses: { 200: { description: 'the text', schema: readTextAnswerWire }, 400: pathRefused },
    handler: ({ query, reply }) =>
      answering(reply, async () => ({ note: (await notes.readText(note(query.path))) ?? null })),
  });

  routes.add(app, {
    method: 'GET',
    url: remoteStoreRoutes.listFolder,
    tag,
    summary: "One folder's subfolders and notes",
    description: 'Not recursive; `{listing: null}` when the folder does not exist. `folder` absent: the notes root.',
    query: folderQueryWire,
    responses: { 200: { description: 'the listing', schema: listFolderAnswerWire }, 400: pathRefused },
    handler: ({ query, reply }) =>
      answering(reply, async () => ({ listing: (await notes.listFolder(folder(query.folder))) ?? null })),
  });

  routes.add(app, {
    method: 'GET',
    url: remoteStoreRoutes.list,
    tag,
    summary: 'Every note under a folder',
    description: 'Recursive, as sorted paths relative to the notes folder.',
    query: folderQueryWire,
    responses: { 200: { description: 'the paths', schema: listAnswerWire }, 400: pathRefused },
    handler: ({ query, reply }) => answering(reply, async () => ({ paths: await notes.list(folder(query.folder)) })),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.query,
    tag,
    summary: 'The notes under a folder that match field conditions',
    description:
      '`where` is NoteWhere (`{"status": "new", "date": {"gte": "2026-01-01"}}`). Notes whose frontmatter is broken are listed in `broken` with their line, never fail the request.',
    body: queryRequestWire,
    responses: { 200: { description: 'the notes', schema: queryAnswerWire }, 400: pathRefused },
    handler: ({ body, reply }) =>
      answering(reply, async () => {
        const broken: { path: string; line: number; column: number; reason: string }[] = [];
        const found = await notes.query({
          folder: folder(body.folder),
          ...(body.where === undefined ? {} : { where: body.where }),
          onBroken: (error) => {
            const failure = noteFailureOf(error)?.failure;
            if (failure?.kind !== 'broken') return;
            broken.push({ path: failure.path, line: failure.line, column: failure.column, reason: failure.reason });
          },
        });
        return { notes: found, broken };
      }),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.create,
    tag,
    summary: 'Create a note',
    description: 'Fails with `failure.errno` `EEXIST` when a note exists at that path already.',
    body: createRequestWire,
    responses: {
      200: { description: 'the note as written', schema: noteAnswerWire },
      400: pathRefused,
      409: brokenOrConflict,
    },
    handler: ({ body, reply }) =>
      answering(reply, async () => ({
        note: await notes.create(note(body.path), {
          data: body.data,
          ...(body.body === undefined ? {} : { body: body.body }),
        }),
      })),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.update,
    tag,
    summary: 'Change some frontmatter keys and/or the body',
    description:
      'As a local update: with `basedOn` (the note as the worker read it), an edit made since on this disk is kept when it touches other keys, and the update is refused (409, `failure.kind` `conflict`, with the keys) when it touches the same ones. With `ifHash`, the write happens only if the file is still that version (else 409 `stale`). `unset` names keys to remove.',
    body: updateRequestWire,
    responses: {
      200: { description: 'the note as written', schema: noteAnswerWire },
      400: pathRefused,
      404: missing,
      409: brokenOrConflict,
    },
    handler: ({ body, reply }) =>
      answering(reply, async () => ({ note: await notes.update(note(body.path), updateOptionsFromWire(body)) })),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.replaceText,
    tag,
    summary: "Replace a note's whole text",
    description:
      'Only if the file is still the version `basedOnHash` names (else 409 `conflict` with keys `["(file)"]`).',
    body: replaceTextRequestWire,
    responses: {
      200: { description: 'the note as written', schema: noteAnswerWire },
      400: pathRefused,
      404: missing,
      409: brokenOrConflict,
    },
    handler: ({ body, reply }) =>
      answering(reply, async () => ({
        note: await notes.replaceText(note(body.path), { text: body.text, basedOnHash: body.basedOnHash }),
      })),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.delete,
    tag,
    summary: 'Delete a note',
    description: '`{deleted: false}` when there was none.',
    body: deleteRequestWire,
    responses: { 200: { description: 'whether a note was removed', schema: deleteAnswerWire }, 400: pathRefused },
    handler: ({ body, reply }) => answering(reply, async () => ({ deleted: await notes.delete(note(body.path)) })),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.move,
    tag,
    summary: 'Move a note',
    body: moveRequestWire,
    responses: { 200: { description: 'moved', schema: emptyAnswerWire }, 400: pathRefused, 404: missing },
    handler: ({ body, reply }) =>
      answering(reply, async () => {
        await notes.move(note(body.from), note(body.to));
        return {};
      }),
  });

  routes.add(app, {
    method: 'POST',
    url: remoteStoreRoutes.log,
    tag,
    summary: 'Write a line to the human log',
    description:
      "Appended whole to `data/logs/YYYY-MM-DD.md` on the server, in the server's time zone; `at` (an ISO instant) defaults to now.",
    body: logRequestWire,
    responses: { 200: { description: 'written', schema: emptyAnswerWire }, 400: pathRefused },
    handler: async ({ body }) => {
      await humanLog.write({
        source: body.source,
        message: body.message,
        ...(body.reason === undefined ? {} : { reason: body.reason }),
        ...(body.link === undefined ? {} : { link: body.link }),
        ...(body.at === undefined ? {} : { at: new Date(body.at) }),
      });
      return {};
    },
  });
}

/**
 * Runs one store call; a note store error answers with its status and `failure` (what the client rethrows), any
 * other error goes to the server's error handler (a 500 whose details stay in the log).
 */
async function answering(reply: FastifyReply, call: () => Promise<unknown>): Promise<unknown> {
  try {
    return await call();
  } catch (error) {
    const failed = noteFailureOf(error);
    if (!failed) throw error;
    return reply
      .code(failed.status)
      .type('application/json; charset=utf-8')
      .send({ error: { code: failed.code, message: scrubSecrets(failed.message), failure: failed.failure } });
  }
}

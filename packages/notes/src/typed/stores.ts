import * as z from 'zod';
import type { FileNoteStore } from '../note-store.ts';
import { TypedNoteStore } from './typed-note-store.ts';

const actionsTaken = z.array(z.object({ action: z.string(), at: z.string(), task: z.string().optional() })).optional();
/** Path segments come from ids and names; keep them to characters that are safe in every file system. */
const segment = (value: string | number) => String(value).replace(/[^A-Za-z0-9._-]/g, '_');

export const emailNoteSchema = z.looseObject({
  message_id: z.string(),
  uid: z.number().int().optional(),
  from: z.string().optional(),
  subject: z.string().optional(),
  date: z.string().optional(),
  classifications: z.record(z.string(), z.unknown()).optional(),
  actions_taken: actionsTaken,
});
export type EmailNote = z.infer<typeof emailNoteSchema>;

/** Mail: `email/<instance>/<uid-or-id>.md`, found by `message_id` or `uid`. */
export function emailStore(store: FileNoteStore, instance: string) {
  const typed = new TypedNoteStore({
    store,
    folder: `email/${segment(instance)}`,
    schema: emailNoteSchema,
    indexKeys: ['message_id', 'uid'],
  });
  return Object.assign(typed, {
    pathFor: (note: { uid?: number | undefined; message_id: string }) =>
      `email/${segment(instance)}/${segment(note.uid ?? note.message_id)}.md`,
  });
}

export const githubItemSchema = z.looseObject({
  number: z.number().int().positive(),
  repository: z.string(),
  title: z.string().optional(),
  state: z.string().optional(),
  author: z.string().optional(),
  url: z.string().optional(),
  classifications: z.record(z.string(), z.unknown()).optional(),
  actions_taken: actionsTaken,
});
export type GithubItemNote = z.infer<typeof githubItemSchema>;

function githubStore(store: FileNoteStore, instance: string, kind: 'pulls' | 'issues') {
  const typed = new TypedNoteStore({
    store,
    folder: `github/${segment(instance)}`,
    schema: githubItemSchema,
    indexKeys: ['number', 'url'],
  });
  return Object.assign(typed, {
    pathFor: (note: { repository: string; number: number }) => {
      const [owner = '_', repo = '_'] = note.repository.split('/');
      return `github/${segment(instance)}/${segment(owner)}/${segment(repo)}/${kind}/${note.number}.md`;
    },
  });
}

/** Pull requests: `github/<instance>/<owner>/<repo>/pulls/<n>.md`. */
export const pullRequestStore = (store: FileNoteStore, instance: string) => githubStore(store, instance, 'pulls');
/** Issues: `github/<instance>/<owner>/<repo>/issues/<n>.md`. */
export const issueStore = (store: FileNoteStore, instance: string) => githubStore(store, instance, 'issues');

export const serviceResultSchema = z.looseObject({
  task: z.string(),
  service: z.string(),
  finished_at: z.string(),
  actions_taken: actionsTaken,
});
export type ServiceResultNote = z.infer<typeof serviceResultSchema>;

/** Service results: `services/<domain>/<service>/<timestamp>__<task-id>.md`, found by `task`. */
export function serviceResultStore(store: FileNoteStore, domain: string, service: string) {
  const folder = `services/${segment(domain)}/${segment(service)}`;
  const typed = new TypedNoteStore({ store, folder, schema: serviceResultSchema, indexKeys: ['task'] });
  return Object.assign(typed, {
    pathFor: (note: { task: string; finished_at: string }) =>
      `${folder}/${note.finished_at.replace(/[-:]/g, '').replace(/\.\d+/, '')}__${segment(note.task)}.md`,
  });
}

export const transcriptSchema = z.looseObject({
  id: z.string(),
  kind: z.enum(['agent', 'chat']),
  started_at: z.string(),
  task: z.string().optional(),
  parent: z.string().optional(),
  actions_taken: actionsTaken,
});
export type TranscriptNote = z.infer<typeof transcriptSchema>;

/** Agent loop and chat transcripts: `transcripts/<kind>/<id>.md`, found by `id` or `task`. */
export function transcriptStore(store: FileNoteStore) {
  const typed = new TypedNoteStore({
    store,
    folder: 'transcripts',
    schema: transcriptSchema,
    indexKeys: ['id', 'task'],
  });
  return Object.assign(typed, {
    pathFor: (note: { kind: string; id: string }) => `transcripts/${segment(note.kind)}/${segment(note.id)}.md`,
  });
}

export { withFileLock } from './file-lock.ts';
export {
  type FrontmatterChanges,
  type FrontmatterData,
  FrontmatterError,
  joinNote,
  type NoteParts,
  parseFrontmatter,
  splitNote,
  updateFrontmatterText,
} from './frontmatter.ts';
export { FileHumanLog, type FileHumanLogOptions, type HumanLog, type HumanLogEntry } from './human-log.ts';
export { NoteIndex, type NoteIndexOptions } from './note-index.ts';
export { NotePathError, resolveNotePath } from './note-path.ts';
export { type FieldCondition, matchesWhere, type NoteWhere, parseWhereFlag } from './note-query.ts';
export {
  noteContainsText,
  type SearchNotesOptions,
  type SearchNotesResult,
  searchNotes,
} from './note-search.ts';
export { NoteSearchIndex, type NoteSearchIndexOptions } from './note-search-index.ts';
export {
  BrokenNoteError,
  FileNoteStore,
  type FileNoteStoreOptions,
  type FolderListing,
  type Note,
  NoteConflictError,
  type NoteQueryOptions,
  type NoteStore,
  type NoteText,
  type RootedNoteStore,
  type UpdateNoteOptions,
} from './note-store.ts';
export {
  describePause,
  findPause,
  type PauseEntry,
  type PauseKind,
  type PauseState,
  PauseStore,
  parsePauses,
  pausedRules,
  pauseKinds,
  pauseNotePath,
  rulePauseName,
} from './pauses.ts';
export { HttpHumanLog } from './remote/http-human-log.ts';
export { HttpNoteStore, type HttpNoteStoreOptions } from './remote/http-note-store.ts';
export {
  confineRemoteNotePath,
  createRequestWire,
  deleteAnswerWire,
  deleteRequestWire,
  emptyAnswerWire,
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
} from './remote/note-wire.ts';
export type { RemoteStoreOptions } from './remote/store-client.ts';
export {
  type EmailNote,
  emailNoteSchema,
  emailStore,
  type GithubItemNote,
  githubItemSchema,
  issueStore,
  pullRequestStore,
  type ServiceResultNote,
  serviceResultSchema,
  serviceResultStore,
  type TranscriptNote,
  transcriptSchema,
  transcriptStore,
} from './typed/stores.ts';
export {
  type ActionsTaken,
  InvalidNoteError,
  type TypedNote,
  TypedNoteStore,
  type TypedNoteStoreOptions,
} from './typed/typed-note-store.ts';

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
export { HumanLog, type HumanLogEntry, type HumanLogOptions } from './human-log.ts';
export { NotePathError, resolveNotePath } from './note-path.ts';
export {
  BrokenNoteError,
  type Note,
  NoteConflictError,
  NoteStore,
  type NoteStoreOptions,
  type UpdateNoteOptions,
} from './note-store.ts';

import type { FrontmatterData } from './frontmatter.ts';
import { matchesWhere, type NoteWhere } from './note-query.ts';
import { BrokenNoteError, type Note, type NoteStore } from './note-store.ts';

/**
 * Whether a note contains `text`, in any case, in its frontmatter (as JSON) or its body: the one meaning of a text
 * search, shared by `assistant notes search`, `GET /api/notes?q=` and the dashboard.
 */
export function noteContainsText(note: { data: FrontmatterData; body: string }, text: string): boolean {
  return `${JSON.stringify(note.data)}\n${note.body}`.toLowerCase().includes(text.toLowerCase());
}

export interface SearchNotesOptions {
  /** Only notes under this folder (recursively). @default the whole store */
  folder?: string;
  /** Text the note must contain (any case); see `noteContainsText`. */
  text?: string;
  /** Field conditions, as `--where` flags give them (`parseWhereFlag`). */
  where?: NoteWhere;
  /** Matches to skip (sorted by path). @default 0 */
  offset?: number;
  /** Matches to return. @default 50 */
  limit?: number;
  /** Notes read at once. @default 16 */
  concurrency?: number;
  onBroken?: (error: BrokenNoteError) => void;
  signal?: AbortSignal;
}

export interface SearchNotesResult {
  /** How many notes matched in all. */
  total: number;
  /** The page asked for, sorted by path. */
  notes: Note[];
}

/**
 * Notes that contain `text` and meet `where`, one page of them plus the total. It reads every note under the folder
 * (several at once; broken ones are reported, never thrown), so it costs what `NoteStore.query` costs; only the
 * page's notes are kept.
 */
export async function searchNotes(store: NoteStore, options: SearchNotesOptions): Promise<SearchNotesResult> {
  const offset = options.offset ?? 0;
  const limit = options.limit ?? 50;
  const paths = await store.list(options.folder ?? '');
  const matched: (Note | undefined)[] = new Array(paths.length);
  let next = 0;
  const readOne = async (): Promise<void> => {
    while (next < paths.length) {
      options.signal?.throwIfAborted();
      const index = next++;
      const notePath = paths[index] as string;
      try {
        const note = await store.read(notePath);
        if (!note) continue;
        if (options.where && !matchesWhere(note.data, options.where)) continue;
        if (options.text !== undefined && options.text !== '' && !noteContainsText(note, options.text)) continue;
        matched[index] = note;
      } catch (error) {
        if (!(error instanceof BrokenNoteError)) throw error;
        options.onBroken?.(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 16) }, readOne));
  const found = matched.filter((note): note is Note => note !== undefined);
  return { total: found.length, notes: found.slice(offset, offset + limit) };
}

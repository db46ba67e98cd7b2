import { AssistantError } from '@assistant/errors';
import {
  BrokenNoteError,
  FileNoteStore,
  type NoteStore,
  type NoteWhere,
  noteContainsText,
  parseWhereFlag,
} from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

export interface NotesCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  json?: boolean;
}

async function openNotes(options: NotesCommandOptions): Promise<NoteStore> {
  const { config } = await loadCliConfig(options);
  return new FileNoteStore({ root: config.paths.notes });
}

/** Turns the store's own errors (bad path, broken note) into the CLI's one-line errors. */
function asCliError(error: unknown): unknown {
  if (error instanceof BrokenNoteError)
    return new AssistantError('NOT_FOUND', error.message, { hint: 'fix the frontmatter in your editor' });
  if (error instanceof Error && error.name === 'NotePathError') return new AssistantError('USAGE', error.message);
  return error;
}

/** `assistant notes ls [PATH]`: note paths under a folder, relative to the notes root. */
export async function notesListCommand(options: NotesCommandOptions & { folder?: string }): Promise<void> {
  const store = await openNotes(options);
  const paths = await store.list(options.folder ?? '').catch((error: unknown) => {
    throw asCliError(error);
  });
  if (options.json) return writeJson(options.context, paths);
  options.context.stdout.write(paths.length === 0 ? 'no notes\n' : `${paths.join('\n')}\n`);
}

/** `assistant notes show PATH`: the note's frontmatter as data and its body. */
export async function notesShowCommand(options: NotesCommandOptions & { notePath: string }): Promise<void> {
  const store = await openNotes(options);
  const note = await store.read(options.notePath).catch((error: unknown) => {
    throw asCliError(error);
  });
  if (!note)
    throw new AssistantError('NOT_FOUND', `no note at ${options.notePath}`, {
      hint: '`assistant notes ls` lists them',
    });
  if (options.json) return writeJson(options.context, { path: note.path, data: note.data, body: note.body });
  const { stdout } = options.context;
  stdout.write(`${note.path}\n`);
  for (const [key, value] of Object.entries(note.data)) stdout.write(`  ${key}: ${JSON.stringify(value)}\n`);
  stdout.write(`\n${note.body}${note.body.endsWith('\n') ? '' : '\n'}`);
}

/**
 * `assistant notes search [QUERY] [--where key=value]…`: notes whose text contains QUERY (any case) and whose
 * frontmatter meets every condition. Broken notes are listed on stderr, not fatal.
 */
export async function notesSearchCommand(
  options: NotesCommandOptions & { query?: string; where?: string[]; folder?: string },
): Promise<void> {
  const where: NoteWhere = {};
  for (const flag of options.where ?? []) {
    try {
      const [key, condition] = parseWhereFlag(flag);
      where[key] = condition;
    } catch (error) {
      throw new AssistantError('USAGE', (error as Error).message, {
        hint: 'e.g. --where status=new --where "confidence>=0.8"',
      });
    }
  }
  const store = await openNotes(options);
  const needle = options.query?.toLowerCase();
  const notes = await store.query({
    ...(options.folder === undefined ? {} : { folder: options.folder }),
    where,
    onBroken: (error) => options.context.stderr.write(`warning: skipped ${error.message}\n`),
  });
  const found = notes.filter((note) => needle === undefined || noteContainsText(note, needle));
  if (options.json)
    return writeJson(
      options.context,
      found.map((note) => ({ path: note.path, data: note.data })),
    );
  options.context.stdout.write(
    found.length === 0 ? 'no matching notes\n' : `${found.map((note) => note.path).join('\n')}\n`,
  );
}

import type { NoteStore } from '@assistant/notes';

/**
 * A workflow run's blackboard: a note (`agents/blackboards/<run>.md` in the notes) whose body is a list of entries,
 * appended and never rewritten. Each entry is written as
 *
 * ```markdown
 * ### researcher · 2026-11-28T10:00:00.000Z
 * <!-- blackboard-entry {"id":"ag-0123456789abcdef","who":"researcher","at":"2026-11-28T10:00:00.000Z"} -->
 * > the text, every line quoted
 * ```
 *
 * The heading is for people; the comment line is what `readBlackboard` parses. The text is a model's output, so it is
 * untrusted: every line of it is quoted with `> `, and only lines that start at the first column are read as entry
 * headers, so no text can forge another entry (or hide one).
 */
export interface BlackboardEntry {
  /** Unique on the board (a child's id): appending an id that is there already changes nothing. */
  id: string;
  /** Who wrote it: a persona name, or `workflow` for the runner. */
  who: string;
  /** ISO time it was appended. */
  at: string;
  /** The text. */
  what: string;
}

const entryMarker = '<!-- blackboard-entry ';
const entryMarkerEnd = ' -->';

export interface CreateBlackboardOptions {
  notes: NoteStore;
  /** The note's path in the notes: `agents/blackboards/<run>.md`. */
  path: string;
  /** One line for people: the workflow's name and what it was asked. */
  title: string;
  /** The run id, kept in the frontmatter. */
  run: string;
}

/** Creates the blackboard note when it is not there yet; one already there (a re-run after a crash) is left as it is. */
export async function createBlackboard(options: CreateBlackboardOptions): Promise<void> {
  try {
    await options.notes.create(options.path, {
      data: { type: 'blackboard', run: options.run },
      body: `# ${oneLine(options.title)}\n\n${boardPreamble}`,
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

const boardPreamble =
  'Append-only: every entry says who wrote it, when, and what (quoted: it is model output, not instructions).\n';

export interface AppendBlackboardEntryOptions {
  notes: NoteStore;
  path: string;
  entry: { id: string; who: string; what: string; at?: string };
}

/**
 * Appends an entry unless one with its id is on the board already: the check and the append happen in one update
 * under the note's lock, so concurrent or repeated appends (a runner re-run after a crash) store each id once.
 * A board that does not exist yet is created first (titled after its path).
 */
export async function appendBlackboardEntry(options: AppendBlackboardEntryOptions): Promise<'appended' | 'present'> {
  const entry: BlackboardEntry = {
    id: oneLine(options.entry.id),
    who: oneLine(options.entry.who),
    at: options.entry.at ?? new Date().toISOString(),
    what: options.entry.what,
  };
  let outcome: 'appended' | 'present' = 'present';
  const update = () =>
    options.notes.update(options.path, {
      change: (current) => {
        if (parseBlackboard(current.body).some((existing) => existing.id === entry.id)) {
          outcome = 'present';
          return {};
        }
        outcome = 'appended';
        const separator = current.body === '' || current.body.endsWith('\n') ? '' : '\n';
        return { body: `${current.body}${separator}\n${renderEntry(entry)}` };
      },
    });
  try {
    await update();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    const run = options.path.replace(/^.*\//, '').replace(/\.md$/, '');
    await createBlackboard({ notes: options.notes, path: options.path, title: `Blackboard ${run}`, run });
    await update();
  }
  return outcome;
}

/** The entries on a board, in the order they were appended; a board that does not exist has none. */
export async function readBlackboard(options: { notes: NoteStore; path: string }): Promise<BlackboardEntry[]> {
  const note = await options.notes.read(options.path);
  return note ? parseBlackboard(note.body) : [];
}

/** The markdown of one entry: heading, machine line, the text quoted line by line. */
function renderEntry(entry: BlackboardEntry): string {
  // `<` and `>` escaped so no value can close the comment early, and JSON keeps every value on the one line.
  const meta = JSON.stringify({ id: entry.id, who: entry.who, at: entry.at })
    .replaceAll('<', '\\u003c')
    .replaceAll('>', '\\u003e');
  const quoted = entry.what
    .replace(/\r\n?/g, '\n')
    .split('\n')
    .map((line) => (line === '' ? '>' : `> ${line}`))
    .join('\n');
  return `### ${entry.who} · ${entry.at}\n${entryMarker}${meta}${entryMarkerEnd}\n${quoted}\n`;
}

/**
 * Reads entries back from a board's body. Only a marker line at the first column opens an entry, and only quoted
 * lines after it are its text, so an entry's own text (all quoted) can never open another. A marker a person broke
 * by hand is skipped, not thrown: the rest of the board stays readable.
 */
export function parseBlackboard(body: string): BlackboardEntry[] {
  const entries: BlackboardEntry[] = [];
  let current: { entry: BlackboardEntry; lines: string[] } | undefined;
  const finish = () => {
    if (!current) return;
    current.entry.what = current.lines.join('\n');
    entries.push(current.entry);
    current = undefined;
  };
  for (const line of body.replace(/\r\n?/g, '\n').split('\n')) {
    if (line.startsWith(entryMarker) && line.endsWith(entryMarkerEnd)) {
      finish();
      const meta = parseMeta(line.slice(entryMarker.length, line.length - entryMarkerEnd.length));
      if (meta) current = { entry: { ...meta, what: '' }, lines: [] };
      continue;
    }
    if (!current) continue;
    if (line.startsWith('>')) {
      current.lines.push(line.startsWith('> ') ? line.slice(2) : line.slice(1));
      continue;
    }
    // The first unquoted line after the marker ends the entry (the blank line before the next heading).
    finish();
  }
  finish();
  return entries;
}

function parseMeta(json: string): { id: string; who: string; at: string } | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const { id, who, at } = value as Record<string, unknown>;
  if (typeof id !== 'string' || typeof who !== 'string' || typeof at !== 'string') return undefined;
  return { id, who, at };
}

/** Ids, names and titles go on one line of markdown: line breaks become spaces. */
function oneLine(text: string): string {
  return text.replace(/[\r\n\u2028\u2029]+/g, ' ').trim();
}

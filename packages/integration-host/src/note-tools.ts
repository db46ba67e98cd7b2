import { defineTool, type Tool } from '@assistant/agent';
import type { NoteStore } from '@assistant/notes';
import * as z from 'zod';
import { transcriptsFolder } from './note-transcript.ts';

/**
 * The agent tools that read the notes: `search_notes` (text in the fields or the body, any case, up to 20 paths
 * with their titles) and `read_note` (fields and body, cut at 4,000 characters). Their output is fenced as untrusted
 * data like every tool's: notes hold mail and web text.
 */
export function noteTools(notes: NoteStore): Tool[] {
  return [
    defineTool({
      name: 'search_notes',
      codePath: ['notes', 'search'],
      description: 'Finds notes whose text contains the query (any case). Returns up to 20 paths with their titles.',
      input: z.object({ query: z.string().min(1) }),
      tier: 'read_only',
      run: async ({ query }) => {
        const needle = query.toLowerCase();
        const found = await notes.query({});
        return (
          found
            // Agent transcripts are the system's records of its own loops, not the owner's notes: every loop's
            // transcript holds its prompt, so searching them finds the loops that searched before (read_note still
            // reads one by its path).
            .filter((note) => !note.path.startsWith(`${transcriptsFolder}/`))
            .filter((note) => `${JSON.stringify(note.data)}\n${note.body}`.toLowerCase().includes(needle))
            .slice(0, 20)
            .map((note) => ({ path: note.path, title: note.data.title ?? note.data.subject ?? null }))
        );
      },
    }),
    defineTool({
      name: 'read_note',
      codePath: ['notes', 'read'],
      description: 'Reads one note by its path: its fields and its text (cut at 4,000 characters).',
      input: z.object({ path: z.string().min(1) }),
      tier: 'read_only',
      run: async ({ path }) => {
        const note = await notes.read(path);
        return note ? { data: note.data, body: note.body.slice(0, 4_000) } : { error: `no note ${path}` };
      },
    }),
  ];
}

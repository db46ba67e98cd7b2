import type { Note, NoteStore } from '@assistant/notes';
import * as z from 'zod';
import { type Guidance, type MemoryProblem, memoryFolders } from '../memory-types.ts';
import { baseName, isSafeName, parseData, readFolder, readOne } from './memory-notes.ts';

export interface GuidanceStore {
  list(): Promise<{ guidance: Guidance[]; problems: MemoryProblem[] }>;
  get(name: string): Promise<Guidance | undefined>;
}

const guidanceSchema = z.looseObject({
  title: z.string().nullish(),
  // `applies_to: recruiters` (one word) is read as a list of one.
  applies_to: z.union([z.string(), z.array(z.string())]).nullish(),
});

/** A guidance note as the Guidance shape. The title is `title:`, else the body's first heading, else the name. */
function parseGuidance(note: Note): Guidance {
  const data = parseData(guidanceSchema, note);
  const name = baseName(note.path);
  const heading = /^#\s+(.+)$/m.exec(note.body)?.[1]?.trim();
  const appliesTo = data.applies_to ?? [];
  return {
    path: note.path,
    name,
    title: data.title?.trim() || heading || name,
    applies_to: typeof appliesTo === 'string' ? [appliesTo] : appliesTo,
    body: note.body,
  };
}

/** The owner's standing instructions under `guidance/`: written by hand, only read here. */
export function guidanceStore(options: { notes: NoteStore }): GuidanceStore {
  const { notes } = options;
  return {
    async list() {
      const { items, problems } = await readFolder({ notes, folder: memoryFolders.guidance, parse: parseGuidance });
      return { guidance: items, problems };
    },
    get: async (name) =>
      isSafeName(name)
        ? readOne({ notes, path: `${memoryFolders.guidance}/${name}.md`, parse: parseGuidance })
        : undefined,
  };
}

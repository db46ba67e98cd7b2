import type { NoteStore } from '@assistant/notes';
import type { Guidance, MemoryProblem } from '../memory-types.ts';

export interface GuidanceStore {
  list(): Promise<{ guidance: Guidance[]; problems: MemoryProblem[] }>;
  get(name: string): Promise<Guidance | undefined>;
}

export function guidanceStore(_options: { notes: NoteStore }): GuidanceStore {
  throw new Error('not implemented yet');
}

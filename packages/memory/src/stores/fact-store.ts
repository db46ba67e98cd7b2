import type { NoteStore } from '@assistant/notes';
import type { Fact, MemoryProblem, Trust } from '../memory-types.ts';

export interface NewFact {
  statement: string;
  /** `contact:<slug>` and `topic:<word>`. */
  about: string[];
  /** The note path of the item, or `owner`. */
  source: string;
  trust: Trust;
  /** @default now */
  observedAt?: string;
  /** 0..1. @default 1 for owner facts, 0.7 for extracted ones */
  confidence?: number;
  supersedes?: string[];
}

export interface FactStore {
  /** Facts (newest observed first); superseded ones only with `includeSuperseded`. */
  list(options?: {
    about?: string;
    includeSuperseded?: boolean;
  }): Promise<{ facts: Fact[]; problems: MemoryProblem[] }>;
  get(id: string): Promise<Fact | undefined>;
  /**
   * Writes a new fact (idempotent for extracted facts: the id is a hash of source and statement). Throws
   * `MEMORY_SUPERSEDE_REFUSED` when an extracted fact would supersede an owner fact.
   */
  add(fact: NewFact): Promise<Fact>;
  /** Old id → the id of the fact that supersedes it. */
  supersededBy(): Promise<Map<string, string>>;
}

export function factStore(_options: { notes: NoteStore }): FactStore {
  throw new Error('not implemented yet');
}

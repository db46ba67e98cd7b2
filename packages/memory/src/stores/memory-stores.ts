import type { NoteStore } from '@assistant/notes';
import { type ContactBook, contactBook } from './contact-book.ts';
import { type FactStore, factStore } from './fact-store.ts';
import { type GuidanceStore, guidanceStore } from './guidance-store.ts';
import { type OwnerTaskStore, ownerTaskStore } from './owner-task-store.ts';

export interface MemoryStores {
  contacts: ContactBook;
  facts: FactStore;
  tasks: OwnerTaskStore;
  guidance: GuidanceStore;
}

/** The four memory stores over one note store (`data/notes`). */
export function memoryStores(options: { notes: NoteStore }): MemoryStores {
  return {
    contacts: contactBook(options),
    facts: factStore(options),
    tasks: ownerTaskStore(options),
    guidance: guidanceStore(options),
  };
}

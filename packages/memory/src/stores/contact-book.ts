import type { NoteStore } from '@assistant/notes';
import type { Contact, MemoryProblem } from '../memory-types.ts';

/** What `ContactBook.find` looks for: any of a name, an address, a handle on a platform. */
export interface ContactQuery {
  name?: string;
  email?: string;
  handle?: { platform: string; value: string };
  /** Helps name matching: an organisation or a mail domain the person is known by. */
  organisation?: string;
}

export interface ContactMatch {
  /** The primary contact (a merged one is resolved to the contact it was merged into). */
  contact: Contact;
  /** 0..1; 1 for an exact address or handle. */
  score: number;
  /** Why it matched, for logs and `--explain` (`email alice@acme.example`, `name 0.93 + organisation`). */
  why: string;
}

export interface NewContact {
  name: string;
  emails?: string[];
  handles?: Record<string, string[]>;
  organisation?: string;
  /** The note path of the item the contact came from. */
  source?: string;
}

export interface ObservedIdentifier {
  kind: 'email' | 'handle' | 'name';
  value: string;
  platform?: string;
}

export interface ContactBook {
  list(): Promise<{ contacts: Contact[]; problems: MemoryProblem[] }>;
  /** The contact note as written (a merged one is returned as it is, `merged_into` set). */
  get(slug: string): Promise<Contact | undefined>;
  /** Follows `merged_into` to the primary contact. */
  resolve(slug: string): Promise<Contact | undefined>;
  /** Best first. Exact address or handle (also `observed`) = 1; else name similarity, helped by organisation/domain. */
  find(query: ContactQuery): Promise<ContactMatch[]>;
  create(contact: NewContact, options: { by: 'owner' | 'extraction' }): Promise<Contact>;
  /** Adds to `observed` and `sources` only (deduplicated): never an identity field. */
  observe(options: { slug: string; observed: ObservedIdentifier[]; source: string }): Promise<Contact>;
  /** Reversible: `from.merged_into = into`, `into.merged_from += from`; nothing else changes. */
  merge(options: { into: string; from: string }): Promise<{ into: Contact; from: Contact }>;
  /** Removes exactly the links `merge` added, so both notes are byte for byte as before. */
  unmerge(options: { slug: string }): Promise<{ into: Contact; from: Contact }>;
}

export function contactBook(_options: { notes: NoteStore }): ContactBook {
  throw new Error('not implemented yet');
}

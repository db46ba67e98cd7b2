// The contract between the parts of memory (docs/memory.md): the note shapes of the four stores, the index's search
// API and the embedder. Stores, consolidation, the index and the surfaces (tools, CLI, REST, dashboard) code to these.

/** Folders of the stores, under the notes root (`data/notes/`). */
export const memoryFolders = {
  contacts: 'contacts',
  facts: 'facts',
  tasks: 'tasks',
  guidance: 'guidance',
} as const;

/**
 * Who stands behind a fact or a field: `owner` (written by hand, by the CLI or REST with the token, or by `remember`
 * in the owner's chat) or `extracted` (consolidation read it from an item: a mail, a GitHub thread, a chat turn).
 * Extracted text never supersedes or overwrites what the owner wrote.
 */
export type Trust = 'owner' | 'extracted';

/** `contacts/<slug>.md`. The body is the owner's free notes about the person. */
export interface Contact {
  /** The note path, `contacts/<slug>.md`. */
  path: string;
  slug: string;
  /** Identity fields: changed only by the owner's edit or an approved merge. */
  name: string;
  aliases: string[];
  emails: string[];
  /** Per platform (`github`, `telegram`, …), lower case. */
  handles: Record<string, string[]>;
  organisation?: string;
  relationships: Array<{ contact: string; kind: string }>;
  /** Identifiers extraction saw for this person (an address in a signature, a handle mentioned), with where. */
  observed: Array<{ kind: 'email' | 'handle' | 'name'; value: string; platform?: string; source: string }>;
  /** Note paths of the items the person appears in. */
  sources: string[];
  created_by: 'owner' | 'extraction';
  /** Set on a contact merged into another: lookups resolve to that one; unmerge removes it. */
  merged_into?: string;
  merged_from: string[];
  body: string;
}

/** `facts/<id>.md`. The body is the statement. Never deleted by the system; superseded by a newer fact. */
export interface Fact {
  path: string;
  id: string;
  statement: string;
  /** Contact slugs (`contact:alice-martin`) and topics (`topic:dentist`). */
  about: string[];
  /** The note path of the item it came from, or `owner`. */
  source: string;
  trust: Trust;
  observed_at: string;
  confidence: number;
  supersedes: string[];
}

/** `tasks/<id>.md`: the owner's follow-ups and to-dos (not queue tasks). The body is detail. */
export interface OwnerTask {
  path: string;
  id: string;
  title: string;
  /** `YYYY-MM-DD` or an ISO instant. */
  due?: string;
  status: 'open' | 'done' | 'dropped';
  source?: string;
  created_by: 'owner' | 'extraction' | 'chat';
  about: string[];
}

/** `guidance/<name>.md`: a standing instruction of the owner. */
export interface Guidance {
  path: string;
  name: string;
  title: string;
  /** Words and topics it is about; retrieval also matches the body. */
  applies_to: string[];
  body: string;
}

/** A note that could not be read as its store's shape: reported and skipped, never rewritten. */
export interface MemoryProblem {
  path: string;
  message: string;
}

/** Turns texts into vectors. The hashing embedder (offline) and the OpenAI-compatible client implement it. */
export interface Embedder {
  /** Recorded with each vector; a different id re-embeds lazily. `hashing-v1-<dims>` or the endpoint's model. */
  readonly model: string;
  embed(options: { texts: readonly string[]; signal?: AbortSignal }): Promise<Float32Array[]>;
}

export type SearchMode = 'lexical' | 'hybrid';

export interface MemorySearchOptions {
  query: string;
  /** @default 10 */
  limit?: number;
  /** Only notes under these folders (`facts`, `contacts`). @default every note */
  folders?: readonly string[];
  /** @default 'hybrid' (falls back to lexical, saying so in `degraded`, when vectors are not available) */
  mode?: SearchMode;
  signal?: AbortSignal;
}

export interface MemorySearchHit {
  path: string;
  /** The fused score, higher is better. */
  score: number;
  /** The parts it was fused from, for `--explain` and the dashboard. */
  parts: { lexical?: number; vector?: number; entity?: number };
  /** True for a fact another fact supersedes: ranked below its replacement. */
  superseded?: boolean;
  title: string;
  snippet: string;
}

export interface MemorySearchResult {
  hits: MemorySearchHit[];
  mode: SearchMode;
  /** Why the search was lexical only (no embeddings configured, the endpoint is down, vectors still being made). */
  degraded?: string;
}

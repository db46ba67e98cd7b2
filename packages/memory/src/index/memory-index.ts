import type { RootedNoteStore } from '@assistant/notes';
import type { Embedder, MemorySearchOptions, MemorySearchResult } from '../memory-types.ts';
import { HashingEmbedder } from './hashing-embedder.ts';

/** Where the index logs what an owner may want to know (an endpoint down, back up, a cache file rebuilt). */
export interface MemoryIndexLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface MemoryIndexOptions {
  /** The notes store (a FileNoteStore): its root is watched. */
  notes: RootedNoteStore;
  /** The data directory (`data/`); the cache lives in `<dataDir>/memory/index/`. */
  dataDir: string;
  /** @default new HashingEmbedder() */
  embedder?: Embedder;
  /** The folder of contact notes, for entity overlap. @default 'contacts' */
  contactsFolder?: string;
  /** The folder of fact notes, for supersession. @default 'facts' */
  factsFolder?: string;
  logger?: MemoryIndexLogger;
}

export interface MemoryIndexStatus {
  /** Notes indexed (readable ones; broken notes are left out). */
  notes: number;
  /** Notes with a vector of the current model. */
  embedded: number;
  /** Notes waiting for a vector (the endpoint is down, or the work has not reached them yet). */
  pending: number;
  /** The embedder's model id. */
  model: string;
  /** The last embedding failure, while notes are pending because of it. */
  lastError?: string;
}

/**
 * Hybrid retrieval over every note: BM25, vectors and entity overlap with contacts, fused. A derived cache: vectors
 * persist under `data/memory/index/` keyed by (model, content hash); postings are rebuilt in memory at start.
 */
export class MemoryIndex {
  readonly #options: MemoryIndexOptions;
  readonly #embedder: Embedder;

  constructor(options: MemoryIndexOptions) {
    this.#options = options;
    this.#embedder = options.embedder ?? new HashingEmbedder();
  }

  /** True once every note has been read once (lexical search is complete). */
  get ready(): boolean {
    return false;
  }

  /** Reads every note once, then follows changes through a watch; idempotent. */
  async start(): Promise<void> {
    void this.#options;
  }

  /** Re-reads one note now (a writer that must see its own write in the next search calls it). */
  async refresh(_notePath: string): Promise<void> {}

  /** Embeds the notes pending now, one attempt (no backoff wait); never throws for an outage. */
  async embedPending(): Promise<void> {}

  search(options: MemorySearchOptions): Promise<MemorySearchResult> {
    return Promise.resolve({ hits: [], mode: options.mode ?? 'hybrid', degraded: 'the memory index is not built yet' });
  }

  /** Drops the vector cache of the current model, re-reads every note and embeds everything again. */
  async rebuild(): Promise<void> {}

  status(): MemoryIndexStatus {
    return { notes: 0, embedded: 0, pending: 0, model: this.#embedder.model };
  }

  async close(): Promise<void> {}

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

import { createHash } from 'node:crypto';
import path from 'node:path';
import { BrokenNoteError, type FrontmatterData, type Note, type RootedNoteStore } from '@assistant/notes';
import { type FSWatcher, watch } from 'chokidar';
import type { Embedder, MemorySearchHit, MemorySearchOptions, MemorySearchResult } from '../memory-types.ts';
import { Bm25Index, topByScore } from './bm25.ts';
import { HashingEmbedder } from './hashing-embedder.ts';
import { tokenize, words } from './tokenize.ts';
import { VectorCache } from './vector-cache.ts';

/** Where the index logs what an owner may want to know (an endpoint down, back up, a cache file compacted). */
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
  /** How long a hybrid search waits for the endpoint to embed the query before answering by words. @default 5_000 */
  queryTimeoutMs?: number;
  /** Notes read at once while the index fills. @default 16 */
  concurrency?: number;
  /**
   * The longest wait between two tries of a failing embeddings endpoint (the wait doubles from 1 s up to it). Tests
   * that bring an endpoint back set it low, so the next try does not depend on how many failed before.
   * @default 300_000
   */
  maxRetryMs?: number;
  /**
   * The cosine below which a note does not count as near the query by its vector. The hashing embedder's unrelated
   * texts land within about ±0.1 of 0 (collisions in 256 buckets), so its default keeps that noise out of the
   * results; an endpoint model's scale is its own, so nothing is cut by default.
   * @default 0.15 with the hashing embedder, else 0
   */
  minimumSimilarity?: number;
  /**
   * How much each ranking counts in the fusion (a note's score is the sum of `weight / (60 + rank)`).
   * @default {lexical: 1, vector: 1, entity: 1}, with `vector: 0.5` for the hashing embedder
   */
  fusionWeights?: { lexical?: number; vector?: number; entity?: number };
}

export interface MemoryIndexStatus {
  /** Notes indexed (readable ones; broken notes are left out and counted in `broken`). */
  notes: number;
  /** Notes with a vector of the current model. */
  embedded: number;
  /** Notes waiting for a vector (the endpoint is down, or the work has not reached them yet). */
  pending: number;
  /** Notes that could not be read (bad frontmatter): reported, skipped, never rewritten. */
  broken: number;
  /** The embedder's model id. */
  model: string;
  /** The last embedding failure, while notes are pending because of it. */
  lastError?: string;
}

/** The first characters of a note (title, then body) are what is embedded: one vector per note, no chunks. */
const embeddedChars = 2000;
/** What a note keeps of its body for snippets. */
const keptBodyChars = 1000;
/** How many of the best of each ranking (words, vectors, contacts) take part in the fusion. */
const candidatesPerRanking = 200;
/** Reciprocal rank fusion's constant (Cormack et al.): a ranking's 1st place weighs 1/61, its 10th 1/70. */
const fusionK = 60;
/**
 * How much each ranking counts. The hashing embedder's vectors are a fuzzier copy of the words (no meaning), so they
 * count half; an endpoint model's count fully. Measured on the evaluation set (tests/fixtures/memory-eval/, hashing):
 * recall@5 0.93 with the hashing vectors at 1, 0.95 at 0.5 (decision 0057).
 */
const defaultWeights = { lexical: 1, vector: 1, entity: 1 } as const;
const hashingVectorWeight = 0.5;
/** Texts per request while the pending queue drains. */
const embedBatch = 64;
const firstBackoffMs = 1000;
const maxBackoffMs = 5 * 60_000;
const snippetChars = 200;
const rememberedQueries = 64;
/** A name more contacts than this share (a common first name) identifies none of them. */
const ambiguousTargets = 3;
const titleKeys = ['name', 'title', 'subject', 'statement'] as const;

interface FactLink {
  id: string;
  supersedes: string[];
  trust: string | undefined;
}

interface ContactLink {
  /** The slug lookups resolve to: its own, or the one it was merged into. */
  target: string;
  phrases: string[][];
}

interface Entry {
  slot: number;
  path: string;
  title: string;
  /** The start of the body, for snippets. */
  body: string;
  /** Content hash of the text embedded (`embeddedChars` of title and body). */
  hash: string;
  /** The note store's hash of the whole note this entry was made from: the same note read again changes nothing. */
  noteHash: string;
  vector: Float32Array | undefined;
  /** Contact slugs of `about: [contact:<slug>]`. */
  about: string[];
  fact: FactLink | undefined;
  contact: ContactLink | undefined;
}

/** Contact names and identifiers, for the query's side (by first word) and the notes' side (by contact). */
interface ContactIndex {
  byFirst: Map<string, Array<{ tokens: string[]; targets: Set<string> }>>;
  /** Per resolved slug: its contact notes (itself and those merged into it) and its unambiguous phrases. */
  byTarget: Map<string, { slots: number[]; phrases: string[][] }>;
}

interface Pending {
  hash: string;
  text: string;
}

/**
 * Hybrid retrieval over every note: BM25 over titles, frontmatter values and bodies; cosine against one vector per
 * note; entity overlap with contacts named in the query; fused by reciprocal rank. It is a derived cache: notes are
 * the truth, vectors persist under `data/memory/index/` keyed by (model, content hash) so a restart does not embed
 * again, and postings are rebuilt in memory at start. A superseded fact always ranks below its replacement.
 *
 * Embedding is a queue: a note whose text has no vector yet is pending until the embedder makes one. An endpoint
 * that is down leaves the notes pending (backoff 1 s doubling to 5 min, retried on a timer and on the next search or
 * refresh) and search answers by words, saying so in `degraded`; nothing is lost and `search` does not throw for it.
 */
export class MemoryIndex {
  readonly #options: MemoryIndexOptions;
  readonly #embedder: Embedder;
  /** The hashing embedder answers in microseconds: its vectors are made inline, so nothing waits in the queue. */
  readonly #local: HashingEmbedder | undefined;
  readonly #cache: VectorCache;
  readonly #contactsPrefix: string;
  readonly #factsPrefix: string;
  readonly #lexical = new Bm25Index();
  readonly #entries: (Entry | undefined)[] = [];
  readonly #slotOf = new Map<string, number>();
  readonly #freeSlots: number[] = [];
  readonly #broken = new Map<string, BrokenNoteError>();
  readonly #pending = new Map<number, Pending>();
  /** Contact slug → slots of notes `about` it. */
  readonly #about = new Map<string, Set<number>>();
  readonly #contactSlots = new Set<number>();
  readonly #factSlots = new Set<number>();
  /** Derived on demand, dropped when a contact or a fact changes. */
  #contactIndex: ContactIndex | undefined;
  /** Per contact (resolved slug), the notes related to it; dropped whenever any note changes. */
  readonly #related = new Map<string, Set<number>>();
  #supersededBy: Map<number, Set<number>> | undefined;
  /** Per path, the latest refresh started, and the read in progress of it (as NoteSearchIndex). */
  readonly #generation = new Map<string, number>();
  readonly #reading = new Map<string, Promise<void>>();
  #watcher: FSWatcher | undefined;
  #started: Promise<void> | undefined;
  #ready = false;
  #closed = false;
  #closing: Promise<void> | undefined;
  #flushing: Promise<void> | undefined;
  #failures = 0;
  #retryAt = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #lastError: string | undefined;
  /** Vectors of the hashing embedder not yet written to the cache, and the write in progress. */
  readonly #unsaved: Array<{ hash: string; vector: Float32Array }> = [];
  #saving: Promise<void> | undefined;
  /** Aborted by `close`, so a request to a hanging endpoint does not hold the shutdown for its whole timeout. */
  readonly #closeController = new AbortController();
  /** The vectors of recent queries (an endpoint's round trip is saved when a query repeats, as chat turns do). */
  readonly #queryVectors = new Map<string, Float32Array>();

  constructor(options: MemoryIndexOptions) {
    this.#options = options;
    this.#embedder = options.embedder ?? new HashingEmbedder();
    this.#local = this.#embedder instanceof HashingEmbedder ? this.#embedder : undefined;
    this.#cache = new VectorCache({
      directory: path.join(options.dataDir, 'memory', 'index'),
      model: this.#embedder.model,
    });
    this.#contactsPrefix = `${trimSlashes(options.contactsFolder ?? 'contacts')}/`;
    this.#factsPrefix = `${trimSlashes(options.factsFolder ?? 'facts')}/`;
  }

  /** True once every note has been read once: until then a search misses notes not read yet. */
  get ready(): boolean {
    return this.#ready;
  }

  /** The cache file of the current model (for `status` pages and tests). */
  get cacheFile(): string {
    return this.#cache.file;
  }

  /** Reads the vector cache and every note once, then follows changes through a watch; idempotent. */
  start(): Promise<void> {
    this.#started ??= this.#start();
    return this.#started;
  }

  async #start(): Promise<void> {
    const { notes } = this.#options;
    await notes.listFolder('');
    try {
      await this.#cache.sync();
    } catch (error) {
      // The cache is never needed to search: without it every note is embedded again (and appends may fail too).
      this.#options.logger?.warn(`memory index: could not read ${this.#cache.file}: ${describe(error)}`);
    }
    if (this.#closed) return;
    this.#watcher = watch(notes.root, {
      ignoreInitial: true,
      // Temp files of atomic writes and lock files start with a dot; only notes matter.
      ignored: (file, stats) =>
        path.basename(file).startsWith('.') ? file !== notes.root : stats?.isFile() === true && !file.endsWith('.md'),
    });
    const onChange = (file: string) => {
      void this.refresh(path.relative(notes.root, file).split(path.sep).join('/')).catch((error: unknown) => {
        this.#options.logger?.warn(`memory index: could not re-read ${file}: ${describe(error)}`);
      });
    };
    this.#watcher.on('add', onChange).on('change', onChange).on('unlink', onChange);
    await new Promise<void>((resolve) => this.#watcher?.once('ready', () => resolve()));
    await this.#readAll();
    this.#ready = !this.#closed;
    if (this.#closed) return;
    await this.#compact();
    // An endpoint may take minutes for thousands of notes: start does not wait for it (search is lexical meanwhile).
    if (this.#local) this.#embedLocal();
    else this.#kick();
  }

  async #readAll(): Promise<void> {
    const paths = await this.#options.notes.list('');
    const seen = new Set(paths);
    // Notes gone since the last read (a rebuild re-reads everything).
    for (const known of [...this.#slotOf.keys(), ...this.#broken.keys()]) {
      if (!seen.has(known)) await this.#reread(known);
    }
    let next = 0;
    const readSome = async () => {
      while (next < paths.length && !this.#closed) await this.#reread(paths[next++] as string);
    };
    await Promise.all(Array.from({ length: Math.max(1, this.#options.concurrency ?? 16) }, readSome));
  }

  /**
   * Re-reads one note now: indexed when it parses, counted as broken when it does not, dropped when it is gone. A
   * writer that must see its own write in the next search calls it (the watch follows a moment later anyway).
   * Resolves once the index holds the note as read at or after the call. With the hashing embedder its vector is
   * made too; an endpoint's is queued.
   */
  async refresh(notePath: string): Promise<void> {
    await this.#reread(notePath);
    if (this.#ready && this.#pending.size > 0) {
      if (this.#local) this.#embedLocal();
      else this.#kick();
    }
  }

  async #reread(notePath: string): Promise<void> {
    const generation = (this.#generation.get(notePath) ?? 0) + 1;
    this.#generation.set(notePath, generation);
    let current = this.#load(notePath, generation);
    this.#reading.set(notePath, current);
    for (;;) {
      await current;
      const latest = this.#reading.get(notePath);
      if (latest === undefined || latest === current) break;
      current = latest;
    }
    if (this.#reading.get(notePath) === current) this.#reading.delete(notePath);
  }

  async #load(notePath: string, generation: number): Promise<void> {
    let note: Note | undefined;
    let broken: BrokenNoteError | undefined;
    try {
      note = await this.#options.notes.read(notePath);
    } catch (error) {
      if (error instanceof BrokenNoteError) broken = error;
      else if ((error as NodeJS.ErrnoException).code !== 'EISDIR') throw error;
    }
    if (this.#generation.get(notePath) !== generation) return;
    if (broken) this.#broken.set(notePath, broken);
    else this.#broken.delete(notePath);
    if (note) this.#put(note);
    else this.#remove(notePath);
  }

  #put(note: Note): void {
    const existing = this.#slotOf.get(note.path);
    // The watch reports a note the process wrote and refreshed itself, or reports it twice: nothing to do again.
    if (existing !== undefined && this.#entries[existing]?.noteHash === note.hash) return;
    this.#related.clear();
    const slot = existing ?? this.#freeSlots.pop() ?? this.#entries.length;
    const previous = existing === undefined ? undefined : this.#entries[existing];
    if (previous) this.#unlink(previous);
    const title = titleOf(note);
    const body = note.body;
    const titleTokens = tokenize(title);
    const textTokens = tokenize(`${frontmatterText(note.data)}\n${body}`);
    this.#lexical.set(slot, { title: titleTokens, text: textTokens });
    const embedText = `${title}\n${body}`.slice(0, embeddedChars);
    const hash = createHash('sha256').update(embedText).digest('base64url').slice(0, 32);
    const about = contactSlugsOf(note.data.about);
    const entry: Entry = {
      slot,
      path: note.path,
      title,
      body: body.slice(0, keptBodyChars),
      hash,
      noteHash: note.hash,
      vector: previous?.hash === hash ? previous.vector : this.#cache.get(hash),
      about,
      fact: note.path.startsWith(this.#factsPrefix) ? factOf(note) : undefined,
      contact: note.path.startsWith(this.#contactsPrefix) ? contactOf(note) : undefined,
    };
    this.#entries[slot] = entry;
    this.#slotOf.set(note.path, slot);
    for (const slug of about) {
      let slots = this.#about.get(slug);
      if (!slots) {
        slots = new Set();
        this.#about.set(slug, slots);
      }
      slots.add(slot);
    }
    if (entry.contact) {
      this.#contactSlots.add(slot);
      this.#contactIndex = undefined;
    }
    if (entry.fact) {
      this.#factSlots.add(slot);
      this.#supersededBy = undefined;
    }
    if (entry.vector) this.#pending.delete(slot);
    else if (this.#pending.get(slot)?.hash !== hash) this.#pending.set(slot, { hash, text: embedText });
  }

  #remove(notePath: string): void {
    this.#related.clear();
    const slot = this.#slotOf.get(notePath);
    if (slot === undefined) return;
    const entry = this.#entries[slot];
    if (entry) this.#unlink(entry);
    this.#lexical.remove(slot);
    this.#entries[slot] = undefined;
    this.#slotOf.delete(notePath);
    this.#pending.delete(slot);
    this.#freeSlots.push(slot);
  }

  /** Takes an entry out of the derived maps (about, contacts, facts); postings are replaced by the caller. */
  #unlink(entry: Entry): void {
    for (const slug of entry.about) {
      const slots = this.#about.get(slug);
      slots?.delete(entry.slot);
      if (slots?.size === 0) this.#about.delete(slug);
    }
    if (this.#contactSlots.delete(entry.slot)) this.#contactIndex = undefined;
    if (this.#factSlots.delete(entry.slot)) this.#supersededBy = undefined;
  }

  /**
   * Embeds every note pending now, ignoring a backoff in progress, and writes the vectors to the cache; resolves when
   * done or when the embedder fails.
   */
  async embedPending(): Promise<void> {
    if (this.#local) {
      this.#embedLocal();
      await this.#saved();
      return;
    }
    this.#retryAt = 0;
    await this.#flush();
  }

  /** Starts draining the queue when it is not already draining, unless a backoff is in progress. */
  #kick(): void {
    if (this.#closed || this.#pending.size === 0) return;
    if (this.#local) {
      this.#embedLocal();
      return;
    }
    if (this.#flushing || Date.now() < this.#retryAt) return;
    void this.#flush();
  }

  /**
   * The hashing embedder's vectors, made now (microseconds each) so a refreshed note is found by meaning at once;
   * they are written to the cache in the background, since making them again costs no more than reading them.
   */
  #embedLocal(): void {
    const local = this.#local as HashingEmbedder;
    for (const [slot, pending] of this.#pending) {
      const vector = local.embedOne(pending.text);
      const entry = this.#entries[slot];
      if (entry && entry.hash === pending.hash) entry.vector = vector;
      this.#unsaved.push({ hash: pending.hash, vector });
    }
    this.#pending.clear();
    if (this.#unsaved.length > 0) void this.#save();
  }

  #save(): Promise<void> {
    this.#saving ??= (async () => {
      while (this.#unsaved.length > 0) {
        const records = this.#unsaved.splice(0);
        try {
          await this.#cache.append(records);
        } catch (error) {
          this.#options.logger?.warn(`memory index: could not write ${this.#cache.file}: ${describe(error)}`);
        }
      }
    })().finally(() => {
      this.#saving = undefined;
    });
    return this.#saving;
  }

  /** Resolves once every vector made so far is written (or failed to be, which is logged). */
  async #saved(): Promise<void> {
    while (this.#saving || this.#unsaved.length > 0) await this.#save();
  }

  #flush(): Promise<void> {
    this.#flushing ??= this.#drain().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #drain(): Promise<void> {
    // Vectors another process (server or worker) made meanwhile are used, not made again.
    await this.#cache.sync().catch(() => {});
    this.#adoptCached();
    while (this.#pending.size > 0 && !this.#closed && Date.now() >= this.#retryAt) {
      // The batch stays in the queue while it is embedded: `status` counts it pending until its vectors are in.
      const batch = [...this.#pending].slice(0, embedBatch);
      let vectors: Float32Array[];
      try {
        vectors = await this.#embedder.embed({
          texts: batch.map(([, pending]) => pending.text),
          signal: this.#closeController.signal,
        });
        if (vectors.length !== batch.length) {
          throw new Error(`the embedder returned ${vectors.length} vectors for ${batch.length} texts`);
        }
      } catch (error) {
        if (this.#closed) return;
        this.#failed(error);
        return;
      }
      const records = batch.map(([, pending], index) => ({
        hash: pending.hash,
        vector: vectors[index] as Float32Array,
      }));
      try {
        await this.#cache.append(records);
      } catch (error) {
        // A cache that cannot be written costs a restart's re-embedding, not a search: the vectors are used anyway.
        this.#options.logger?.warn(`memory index: could not write ${this.#cache.file}: ${describe(error)}`);
      }
      batch.forEach(([slot, pending], index) => {
        const entry = this.#entries[slot];
        if (entry && entry.hash === pending.hash) entry.vector = vectors[index];
        // A note changed meanwhile has queued its new text in place of this one: that stays.
        if (this.#pending.get(slot) === pending) this.#pending.delete(slot);
      });
      if (this.#lastError !== undefined) {
        this.#options.logger?.info(
          `memory index: embeddings are back (${this.#embedder.model}); ${this.#pending.size} notes still pending`,
        );
      }
      this.#lastError = undefined;
      this.#failures = 0;
      this.#retryAt = 0;
    }
  }

  #failed(error: unknown): void {
    const delayMs = Math.min(this.#options.maxRetryMs ?? maxBackoffMs, firstBackoffMs * 2 ** this.#failures);
    this.#failures++;
    this.#retryAt = Date.now() + delayMs;
    const message = describe(error);
    if (this.#lastError === undefined) {
      this.#options.logger?.warn(
        `memory index: embeddings failed (${this.#embedder.model}), ${this.#pending.size} notes pending, search answers by words until they are back; retrying in ${Math.round(delayMs / 1000)} s: ${message}`,
      );
    }
    this.#lastError = message;
    clearTimeout(this.#retryTimer);
    if (this.#closed) return;
    this.#retryTimer = setTimeout(() => {
      // The timer is the end of the backoff, not the wall clock: a timer may fire a millisecond before `Date.now()`
      // reaches `#retryAt` (its clock is the monotonic one), and the wall clock may be stepped back; a retry that
      // found itself early would return and never be tried again, stranding the notes until one of them changed.
      this.#retryAt = 0;
      this.#kick();
    }, delayMs);
    // A retry timer alone must not keep a CLI process alive.
    this.#retryTimer.unref();
  }

  #adoptCached(): void {
    for (const [slot, pending] of this.#pending) {
      const vector = this.#cache.get(pending.hash);
      const entry = this.#entries[slot];
      if (!vector || !entry) continue;
      if (entry.hash === pending.hash) entry.vector = vector;
      this.#pending.delete(slot);
    }
  }

  async search(options: MemorySearchOptions): Promise<MemorySearchResult> {
    options.signal?.throwIfAborted();
    const limit = options.limit ?? 10;
    if (!Number.isInteger(limit) || limit < 0) {
      throw new RangeError(`Expected \`limit\` to be a whole number of 0 or more, got \`${String(limit)}\``);
    }
    const requested = options.mode ?? 'hybrid';
    if (requested !== 'hybrid' && requested !== 'lexical') {
      throw new RangeError(`Expected \`mode\` to be \`hybrid\` or \`lexical\`, got \`${String(requested)}\``);
    }
    const prefixes = (options.folders ?? []).map((folder) => trimSlashes(folder)).filter((folder) => folder !== '');
    const accept =
      prefixes.length === 0
        ? undefined
        : (slot: number) => {
            const notePath = this.#entries[slot]?.path ?? '';
            return prefixes.some((prefix) => notePath.startsWith(`${prefix}/`));
          };
    // A search is also the moment to notice that a backoff is over.
    this.#kick();

    let mode = requested;
    let degraded: string | undefined;
    let queryVector: Float32Array | undefined;
    if (requested === 'hybrid') {
      const vectors = await this.#queryVector(options);
      if (typeof vectors === 'string') {
        mode = 'lexical';
        degraded = vectors;
      } else queryVector = vectors;
    }
    options.signal?.throwIfAborted();

    const terms = tokenize(options.query);
    const lexical = this.#lexical.search(terms, { limit: candidatesPerRanking, ...(accept ? { accept } : {}) });
    const vector = queryVector ? this.#vectorSearch(queryVector, accept) : [];
    const entity = this.#entitySearch(terms, lexical, accept);
    if (queryVector && this.#pending.size > 0) {
      degraded = `${this.#pending.size} of ${this.#slotOf.size} notes have no vector yet (${this.#lastError === undefined ? 'being embedded' : `embeddings unavailable: ${this.#lastError}`}); they are ranked by words only`;
    }

    const fused = new Map<number, { score: number; parts: MemorySearchHit['parts'] }>();
    const weights = {
      ...defaultWeights,
      ...(this.#local ? { vector: hashingVectorWeight } : {}),
      ...this.#options.fusionWeights,
    };
    const add = (ranking: Array<{ document: number; score: number }>, kind: keyof typeof defaultWeights) => {
      ranking.forEach((item, index) => {
        let found = fused.get(item.document);
        if (!found) {
          found = { score: 0, parts: {} };
          fused.set(item.document, found);
        }
        found.score += weights[kind] / (fusionK + index + 1);
        found.parts[kind] = item.score;
      });
    };
    add(lexical, 'lexical');
    add(vector, 'vector');
    add(entity, 'entity');
    const ranked = topByScore(
      [...fused].map(([document, value]) => ({ document, score: value.score, parts: value.parts })),
      Number.POSITIVE_INFINITY,
    );
    const ordered = this.#orderSuperseded(ranked, accept);
    const queryWords = new Set(words(options.query));
    const hits = ordered.slice(0, limit).map((item): MemorySearchHit => {
      const entry = this.#entries[item.document] as Entry;
      const hit: MemorySearchHit = {
        path: entry.path,
        score: item.score,
        parts: item.parts,
        title: entry.title,
        snippet: snippetOf(entry.body, queryWords),
      };
      if (item.superseded) hit.superseded = true;
      return hit;
    });
    return degraded === undefined ? { hits, mode } : { hits, mode, degraded };
  }

  /** The query's vector, or why there is none (the search is then lexical). */
  async #queryVector(options: MemorySearchOptions): Promise<Float32Array | string> {
    if (this.#local) return this.#local.embedOne(options.query);
    if (this.#lastError !== undefined && Date.now() < this.#retryAt) {
      return `embeddings unavailable (${this.#embedder.model}), retrying at ${new Date(this.#retryAt).toISOString()}: ${this.#lastError}`;
    }
    let embedded = 0;
    for (const entry of this.#entries) if (entry?.vector) embedded++;
    if (embedded === 0 && this.#slotOf.size > 0)
      return `vectors are still being made (${this.#pending.size} notes pending)`;
    const remembered = this.#queryVectors.get(options.query);
    if (remembered) return remembered;
    const timeout = AbortSignal.timeout(this.#options.queryTimeoutMs ?? 5000);
    try {
      const [vector] = await this.#embedder.embed({
        texts: [options.query],
        signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
      });
      if (!vector) return 'the embedder returned no vector for the query';
      if (this.#queryVectors.size >= rememberedQueries) {
        this.#queryVectors.delete(this.#queryVectors.keys().next().value as string);
      }
      this.#queryVectors.set(options.query, vector);
      return vector;
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      const message = timeout.aborted ? `no answer within ${this.#options.queryTimeoutMs ?? 5000} ms` : describe(error);
      return `embeddings unavailable (${this.#embedder.model}): ${message}`;
    }
  }

  #vectorSearch(query: Float32Array, accept: ((slot: number) => boolean) | undefined) {
    const hits: Array<{ document: number; score: number }> = [];
    const dimensions = query.length;
    const minimum = Math.max(0, this.#options.minimumSimilarity ?? (this.#local ? 0.15 : 0));
    for (const entry of this.#entries) {
      const vector = entry?.vector;
      if (!vector || vector.length !== dimensions) continue;
      let dot = 0;
      for (let index = 0; index < dimensions; index++) dot += (vector[index] as number) * (query[index] as number);
      // Only what leans towards the query: an unrelated note would otherwise still take a rank.
      if (dot <= minimum) continue;
      if (accept && !accept(entry.slot)) continue;
      hits.push({ document: entry.slot, score: dot });
    }
    return topByScore(hits, candidatesPerRanking);
  }

  /**
   * Notes about the contacts the query names (a name, an alias, an address, a handle): those `about` them, the
   * contact notes themselves, and notes holding every word of one of their names or identifiers. Ranked by how many
   * of the query's contacts they share, then by their words' score.
   */
  #entitySearch(
    terms: readonly string[],
    lexical: Array<{ document: number; score: number }>,
    accept: ((slot: number) => boolean) | undefined,
  ) {
    const targets = this.#contactsIn(terms);
    if (targets.size === 0) return [];
    const overlap = new Map<number, number>();
    for (const target of targets) {
      for (const slot of this.#relatedTo(target)) overlap.set(slot, (overlap.get(slot) ?? 0) + 1);
    }
    const lexicalScore = new Map(lexical.map((item) => [item.document, item.score]));
    return [...overlap]
      .filter(([slot]) => !accept || accept(slot))
      .map(([document, score]) => ({ document, score, words: lexicalScore.get(document) ?? 0 }))
      .sort((left, right) => right.score - left.score || right.words - left.words || left.document - right.document)
      .slice(0, candidatesPerRanking)
      .map(({ document, score }) => ({ document, score }));
  }

  #relatedTo(target: string): Set<number> {
    const cached = this.#related.get(target);
    if (cached) return cached;
    const index = this.#contactIndexNow();
    const related = new Set<number>();
    const contact = index.byTarget.get(target);
    for (const slot of contact?.slots ?? []) {
      related.add(slot);
      const entry = this.#entries[slot];
      if (entry) for (const about of this.#about.get(path.posix.basename(entry.path, '.md')) ?? []) related.add(about);
    }
    for (const about of this.#about.get(target) ?? []) related.add(about);
    for (const phrase of contact?.phrases ?? []) for (const found of this.#holdingAll(phrase)) related.add(found);
    this.#related.set(target, related);
    return related;
  }

  /**
   * The contacts (their resolved slugs) the terms name. At each place the longest name wins ("alice martin" over
   * "alice"), and a name several contacts share (more than `ambiguousTargets`) names none of them.
   */
  #contactsIn(terms: readonly string[]): Set<string> {
    const index = this.#contactIndexNow();
    const found = new Set<string>();
    for (let start = 0; start < terms.length; start++) {
      let best: { tokens: string[]; targets: Set<string> } | undefined;
      for (const phrase of index.byFirst.get(terms[start] as string) ?? []) {
        if (best && phrase.tokens.length <= best.tokens.length) continue;
        if (phrase.tokens.every((token, offset) => terms[start + offset] === token)) best = phrase;
      }
      if (!best) continue;
      for (const target of best.targets) found.add(target);
      start += best.tokens.length - 1;
    }
    return found;
  }

  #contactIndexNow(): ContactIndex {
    if (this.#contactIndex) return this.#contactIndex;
    const phrases = new Map<string, { tokens: string[]; targets: Set<string> }>();
    const byTarget = new Map<string, { slots: number[]; phrases: string[][] }>();
    for (const slot of this.#contactSlots) {
      const contact = this.#entries[slot]?.contact;
      if (!contact) continue;
      let target = byTarget.get(contact.target);
      if (!target) {
        target = { slots: [], phrases: [] };
        byTarget.set(contact.target, target);
      }
      target.slots.push(slot);
      for (const tokens of contact.phrases) {
        const key = tokens.join(' ');
        const phrase = phrases.get(key) ?? { tokens, targets: new Set<string>() };
        phrase.targets.add(contact.target);
        phrases.set(key, phrase);
      }
    }
    const byFirst = new Map<string, Array<{ tokens: string[]; targets: Set<string> }>>();
    for (const phrase of phrases.values()) {
      if (phrase.targets.size > ambiguousTargets) continue;
      const first = phrase.tokens[0] as string;
      const list = byFirst.get(first) ?? [];
      list.push(phrase);
      byFirst.set(first, list);
      for (const target of phrase.targets) byTarget.get(target)?.phrases.push(phrase.tokens);
    }
    this.#contactIndex = { byFirst, byTarget };
    return this.#contactIndex;
  }

  /** Slots holding every token of a phrase (counted through the postings: those seen once per distinct token). */
  #holdingAll(tokens: readonly string[]): number[] {
    const distinct = [...new Set(tokens)];
    const postings = distinct.map((token) => this.#lexical.documentsWith(token));
    if (postings.some((posting) => posting.length === 0)) return [];
    if (postings.length === 1) return [...(postings[0] as readonly number[])];
    const seen = new Map<number, number>();
    for (const posting of postings) for (const slot of posting) seen.set(slot, (seen.get(slot) ?? 0) + 1);
    const found: number[] = [];
    for (const [slot, count] of seen) if (count === postings.length) found.push(slot);
    return found;
  }

  /**
   * Puts every superseded fact below its replacements. A superseded fact among the hits brings its replacements in
   * (they answer the same question, with the newer truth) just above it; then each superseded fact moves below the
   * last of its replacements, and scores are lowered to stay in order.
   */
  #orderSuperseded(
    ranked: Array<{ document: number; score: number; parts: MemorySearchHit['parts'] }>,
    accept: ((slot: number) => boolean) | undefined,
  ): Array<{ document: number; score: number; parts: MemorySearchHit['parts']; superseded?: boolean }> {
    const supersededBy = this.#supersession();
    if (supersededBy.size === 0) return ranked;
    const list: Array<{ document: number; score: number; parts: MemorySearchHit['parts']; superseded?: boolean }> = [
      ...ranked,
    ];
    const present = new Set(list.map((item) => item.document));
    for (let index = 0; index < list.length; index++) {
      const item = list[index] as (typeof list)[number];
      const replacements = supersededBy.get(item.document);
      if (!replacements) continue;
      item.superseded = true;
      let inserted = 0;
      for (const replacement of replacements) {
        if (present.has(replacement) || (accept && !accept(replacement))) continue;
        present.add(replacement);
        list.splice(index, 0, { document: replacement, score: item.score, parts: {} });
        inserted++;
      }
      // Visit what was brought in (now at `index` onwards): a replacement superseded in turn (a chain) brings its own
      // replacement. Each fact is brought in once, so this ends.
      if (inserted > 0) index--;
    }
    // Each move puts a fact below a replacement; a cycle of facts superseding each other cannot loop for ever.
    let moves = list.length * 4;
    for (let index = 0; index < list.length && moves > 0; index++) {
      const replacements = supersededBy.get((list[index] as (typeof list)[number]).document);
      if (!replacements) continue;
      let last = -1;
      for (let other = index + 1; other < list.length; other++) {
        if (replacements.has((list[other] as (typeof list)[number]).document)) last = other;
      }
      if (last === -1) continue;
      const [moved] = list.splice(index, 1);
      list.splice(last, 0, moved as (typeof list)[number]);
      moves--;
      index--;
    }
    for (let index = 1; index < list.length; index++) {
      const previous = list[index - 1] as (typeof list)[number];
      const item = list[index] as (typeof list)[number];
      if (item.score >= previous.score) item.score = previous.score * (1 - 1e-9);
    }
    return list;
  }

  /**
   * Fact slot → the slots of the facts that supersede it, through `supersedes: [ids]`. A fact extracted from an item
   * does not supersede one the owner wrote (stores refuse to write that; a note edited into it is not obeyed either).
   */
  #supersession(): Map<number, Set<number>> {
    if (this.#supersededBy) return this.#supersededBy;
    const byId = new Map<string, number[]>();
    for (const slot of this.#factSlots) {
      const fact = this.#entries[slot]?.fact;
      if (!fact) continue;
      const slots = byId.get(fact.id) ?? [];
      slots.push(slot);
      byId.set(fact.id, slots);
    }
    const supersededBy = new Map<number, Set<number>>();
    for (const slot of this.#factSlots) {
      const fact = this.#entries[slot]?.fact;
      if (!fact) continue;
      for (const id of fact.supersedes) {
        for (const target of byId.get(id) ?? []) {
          if (target === slot) continue;
          const old = this.#entries[target]?.fact;
          if (fact.trust === 'extracted' && old?.trust === 'owner') continue;
          let by = supersededBy.get(target);
          if (!by) {
            by = new Set();
            supersededBy.set(target, by);
          }
          by.add(slot);
        }
      }
    }
    this.#supersededBy = supersededBy;
    return supersededBy;
  }

  /**
   * Drops the vector cache of the current model, re-reads every note and embeds everything again; resolves when
   * done, or when the embedder fails (the notes stay pending and are retried as after any outage).
   */
  async rebuild(): Promise<void> {
    await this.start();
    await this.#cache.drop();
    for (const entry of this.#entries) {
      if (!entry) continue;
      entry.vector = undefined;
      // Read again in full, though unchanged: its text is queued for the new vectors.
      entry.noteHash = '';
    }
    await this.#readAll();
    await this.embedPending();
  }

  status(): MemoryIndexStatus {
    let embedded = 0;
    for (const entry of this.#entries) if (entry?.vector) embedded++;
    const status: MemoryIndexStatus = {
      notes: this.#slotOf.size,
      embedded,
      pending: this.#pending.size,
      broken: this.#broken.size,
      model: this.#embedder.model,
    };
    if (this.#lastError !== undefined && this.#pending.size > 0) status.lastError = this.#lastError;
    return status;
  }

  /** Stops the watch and the retry timer; idempotent. Vectors already made are on disk. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      this.#closed = true;
      clearTimeout(this.#retryTimer);
      this.#closeController.abort(new Error('the memory index is closing'));
      await this.#watcher?.close();
      this.#watcher = undefined;
      await this.#flushing?.catch(() => {});
      await this.#saved();
    })();
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #compact(): Promise<void> {
    const live = new Set<string>();
    for (const entry of this.#entries) if (entry) live.add(entry.hash);
    try {
      if (await this.#cache.compact(live)) this.#options.logger?.info(`memory index: compacted ${this.#cache.file}`);
    } catch (error) {
      this.#options.logger?.warn(`memory index: could not compact ${this.#cache.file}: ${describe(error)}`);
    }
  }
}

function trimSlashes(folder: string): string {
  return folder.replace(/^\/+|\/+$/g, '');
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The note's title: its `name`, `title`, `subject` or `statement`, else its first line, else its file name. */
function titleOf(note: Note): string {
  for (const key of titleKeys) {
    const value = note.data[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim();
  }
  const firstLine = note.body
    .split('\n')
    .map((line) => line.replace(/^#+\s*/, '').trim())
    .find((line) => line !== '');
  return firstLine?.slice(0, 120) ?? path.posix.basename(note.path, '.md');
}

/** The frontmatter's string values other than the title's (addresses, handles, labels), for words to match. */
function frontmatterText(data: FrontmatterData): string {
  const parts: string[] = [];
  const visit = (value: unknown, depth: number) => {
    if (typeof value === 'string') parts.push(value.slice(0, 300));
    else if (depth < 3 && Array.isArray(value)) for (const item of value.slice(0, 50)) visit(item, depth + 1);
    else if (depth < 3 && value !== null && typeof value === 'object') {
      for (const item of Object.values(value).slice(0, 50)) visit(item, depth + 1);
    }
  };
  for (const [key, value] of Object.entries(data)) {
    if (!(titleKeys as readonly string[]).includes(key)) visit(value, 0);
  }
  return parts.join('\n');
}

function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return value.trim() === '' ? [] : [value];
  if (!Array.isArray(value)) return [];
  return value.filter((item): item is string => typeof item === 'string' && item.trim() !== '');
}

/** `about: [contact:<slug>, topic:…]` → the contact slugs. */
function contactSlugsOf(value: unknown): string[] {
  return [
    ...new Set(
      stringsOf(value)
        .filter((item) => item.startsWith('contact:'))
        .map((item) => item.slice('contact:'.length).trim())
        .filter((slug) => slug !== ''),
    ),
  ];
}

function factOf(note: Note): FactLink {
  const id =
    typeof note.data.id === 'string' && note.data.id !== '' ? note.data.id : path.posix.basename(note.path, '.md');
  const trust = typeof note.data.trust === 'string' ? note.data.trust : undefined;
  return { id, supersedes: stringsOf(note.data.supersedes), trust };
}

/** What identifies a contact in text: its name (and first name), aliases, addresses and handles. */
function contactOf(note: Note): ContactLink {
  const slug = path.posix.basename(note.path, '.md');
  const mergedInto =
    typeof note.data.merged_into === 'string' ? note.data.merged_into.replace(/^contact:/, '').trim() : '';
  const identifiers: string[] = [];
  const name = typeof note.data.name === 'string' ? note.data.name : '';
  identifiers.push(name);
  const nameWords = tokenize(name);
  // A first name alone ("what did Bob promise") names the person too; a one-letter one would match too much.
  if (nameWords.length > 1 && (nameWords[0] as string).length >= 3) identifiers.push(nameWords[0] as string);
  identifiers.push(...stringsOf(note.data.aliases), ...stringsOf(note.data.emails));
  const handles = note.data.handles;
  if (handles !== null && typeof handles === 'object' && !Array.isArray(handles)) {
    for (const value of Object.values(handles)) identifiers.push(...stringsOf(value));
  }
  const seen = new Set<string>();
  const phrases: string[][] = [];
  for (const identifier of identifiers) {
    const tokens = tokenize(identifier.replace(/^@/, ''));
    const key = tokens.join(' ');
    if (tokens.length === 0 || seen.has(key)) continue;
    seen.add(key);
    phrases.push(tokens);
  }
  return { target: mergedInto === '' ? slug : mergedInto, phrases };
}

/** A window of the body around the first query word it holds, or its start. */
function snippetOf(body: string, queryWords: ReadonlySet<string>): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  if (flat.length <= snippetChars) return flat;
  const lower = flat.toLowerCase();
  let at = -1;
  for (const word of queryWords) {
    if (word.length < 3) continue;
    const found = lower.indexOf(word);
    if (found !== -1 && (at === -1 || found < at)) at = found;
  }
  const start = Math.max(0, at - snippetChars / 4);
  const text = flat.slice(start, start + snippetChars);
  return `${start > 0 ? '…' : ''}${text}${start + snippetChars < flat.length ? '…' : ''}`;
}

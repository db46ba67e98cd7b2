import type { MemoryDomain } from '@assistant/config';
import type {
  Contact,
  Fact,
  Guidance,
  MemoryProblem,
  MemorySearchOptions,
  MemorySearchResult,
  OwnerTask,
  Trust,
} from '@assistant/memory';

// What handlers see of memory (docs/memory.md). These are the parts of @assistant/memory's stores and index that
// the tools, the chat context and the consolidation enqueue use, written here as interfaces so a handler depends on
// what it calls, not on the classes (the worker passes the real ones; tests may pass a fake).

/** The contact book: `contacts/<slug>.md`. */
export interface MemoryContacts {
  list(): Promise<{ contacts: Contact[]; problems: MemoryProblem[] }>;
  get(slug: string): Promise<Contact | undefined>;
  /** Follows `merged_into` to the primary contact. */
  resolve(slug: string): Promise<Contact | undefined>;
  find(query: {
    name?: string;
    email?: string;
    handle?: { platform: string; value: string };
  }): Promise<Array<{ contact: Contact; score: number; why: string }>>;
}

/** `facts/<id>.md`: never deleted, superseded by newer facts. */
export interface MemoryFacts {
  list(options?: {
    about?: string;
    includeSuperseded?: boolean;
  }): Promise<{ facts: Fact[]; problems: MemoryProblem[] }>;
  get(id: string): Promise<Fact | undefined>;
  add(fact: {
    statement: string;
    about: string[];
    source: string;
    trust: Trust;
    observedAt?: string;
    confidence?: number;
    supersedes?: string[];
  }): Promise<Fact>;
}

/** `tasks/<id>.md`: the owner's follow-ups (not queue tasks). */
export interface MemoryTasks {
  list(options?: {
    status?: OwnerTask['status'];
    dueBefore?: string;
  }): Promise<{ tasks: OwnerTask[]; problems: MemoryProblem[] }>;
  add(task: {
    title: string;
    due?: string;
    about?: string[];
    source?: string;
    createdBy: OwnerTask['created_by'];
    body?: string;
  }): Promise<OwnerTask>;
}

/** `guidance/<name>.md`: the owner's standing instructions. */
export interface MemoryGuidance {
  list(): Promise<{ guidance: Guidance[]; problems: MemoryProblem[] }>;
  get(name: string): Promise<Guidance | undefined>;
}

export interface MemoryStoresView {
  contacts: MemoryContacts;
  facts: MemoryFacts;
  tasks: MemoryTasks;
  guidance: MemoryGuidance;
}

/** The hybrid index over every note (a derived cache under `data/memory/index/`). */
export interface MemorySearch {
  search(options: MemorySearchOptions): MemorySearchResult | Promise<MemorySearchResult>;
  /** A writer that must see its own write at once calls this (the watcher would see it a little later). */
  refresh(notePath: string): unknown;
  /** Drops the cache and reads and embeds every note again (`memory.reindex`). */
  rebuild(): Promise<unknown>;
  status(): { notes: number; embedded: number; pending: number; model: string; lastError?: string };
}

/**
 * What the worker gives builtin integrations' handlers of memory: config.yaml's `memory:`, the stores over the notes,
 * and the worker's one index (started on first use, closed at shutdown).
 */
export interface MemoryContext {
  /**
   * The domains consolidated (`memory.consolidate`); empty when consolidation is off or the profile it names is not
   * there, so callers only test membership.
   */
  consolidate: readonly MemoryDomain[];
  /** The LLM profile consolidation uses. */
  llm: string;
  /** The owner's time zone (`owner.timezone`): what "today" is for due tasks. */
  timeZone: string;
  /** How many facts and guidance notes a chat turn gets in its context. */
  context: { facts: number; guidance: number };
  stores: MemoryStoresView;
  /** The worker's index, started on first use (reading every note once); shared by every task of the process. */
  index(): Promise<MemorySearch>;
}

/** The task type consolidation runs as (integrations/memory). */
export const consolidateTaskType = 'memory.consolidate';

/**
 * Enqueues `memory.consolidate {note}` for an email or GitHub item when config.yaml's `memory.consolidate` names the
 * domain. Consolidation is idempotent per item version, so a second enqueue of the same note costs a file read.
 */
export async function enqueueConsolidation(
  context: {
    memory?: MemoryContext;
    enqueue(options: { type: string; payload: { note: string }; integration: string }): Promise<unknown>;
  },
  options: { domain: string; notePath: string },
): Promise<boolean> {
  const memory = context.memory;
  if (!memory || !(memory.consolidate as readonly string[]).includes(options.domain)) return false;
  // The memory integration's default instance runs it, whichever instance collected the item.
  await context.enqueue({ type: consolidateTaskType, payload: { note: options.notePath }, integration: 'memory' });
  return true;
}

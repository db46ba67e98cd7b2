import type { MemoryDomain } from '@assistant/config';
import type {
  ContactBook,
  FactStore,
  GuidanceStore,
  MemorySearchOptions,
  MemorySearchResult,
  OwnerTaskStore,
} from '@assistant/memory';

// What handlers see of memory (docs/memory.md). These are the parts of @assistant/memory's stores and index that
// the tools, the chat context and the consolidation enqueue use, picked from the stores' own types so a handler depends
// on what it calls (the worker passes the real ones; tests may pass a fake).

/** The contact book: `contacts/<slug>.md` (the parts handlers use of the real one). */
export type MemoryContacts = Pick<ContactBook, 'list' | 'get' | 'resolve' | 'find'>;

/** `facts/<id>.md`: never deleted, superseded by newer facts. */
export type MemoryFacts = Pick<FactStore, 'list' | 'get' | 'add'>;

/** `tasks/<id>.md`: the owner's follow-ups (not queue tasks). */
export type MemoryTasks = Pick<OwnerTaskStore, 'list' | 'add'>;

/** `guidance/<name>.md`: the owner's standing instructions. */
export type MemoryGuidance = Pick<GuidanceStore, 'list' | 'get'>;

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
  /**
   * The instance that runs `memory.consolidate`: the first enabled instance of the memory integration (`memory`
   * unless config.yaml renames it). `null` when none is enabled: consolidation is not enqueued then. Absent when the
   * context does not know the instances (a worker without a registry, a test): the default name `memory`.
   */
  instance?: string | null;
  /**
   * The owner's own addresses and handles (`memory.owner_identities` and the email instances' logins that are
   * addresses): never made a contact. @default []
   */
  ownerIdentities?: readonly string[];
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

/** The memory integration's default instance (its manifest's `default_instance`). */
const defaultMemoryInstance = 'memory';

/** The memory contexts (by their shared index function: one per worker) already told there is no instance. */
const toldNoInstance = new WeakSet<object>();

/**
 * Enqueues `memory.consolidate` for an email or GitHub item (`{note}`) or an owner's chat message
 * (`{conversation, message}`) when config.yaml's `memory.consolidate` names the domain, for the instance that runs
 * the memory integration whichever instance collected the item. When no memory instance is enabled (the owner
 * disabled it), nothing is enqueued, with one info line per worker: a task for an instance that does not exist would
 * only fail. Consolidation is idempotent per item version, so a second enqueue of the same item costs a file read.
 */
export async function enqueueConsolidation(
  context: {
    memory?: MemoryContext;
    enqueue(options: {
      type: string;
      payload: { note: string } | { conversation: string; message: string };
      integration: string;
    }): Promise<unknown>;
    logger?: { info(message: string): void };
  },
  options: { domain: string } & ({ notePath: string } | { conversation: string; message: string }),
): Promise<boolean> {
  const memory = context.memory;
  if (!memory || !(memory.consolidate as readonly string[]).includes(options.domain)) return false;
  const instance = memory.instance === undefined ? defaultMemoryInstance : memory.instance;
  if (instance === null) {
    if (!toldNoInstance.has(memory.index)) {
      toldNoInstance.add(memory.index);
      context.logger?.info(
        'memory: items are not consolidated: no enabled instance of the memory integration in config.yaml (memory.consolidate is set)',
      );
    }
    return false;
  }
  const payload =
    'notePath' in options
      ? { note: options.notePath }
      : { conversation: options.conversation, message: options.message };
  await context.enqueue({ type: consolidateTaskType, payload, integration: instance });
  return true;
}

/**
 * The instance that runs the memory integration's tasks: the first enabled instance of type `memory` (config.yaml's
 * order, then the default instance), or null when there is none.
 */
export function memoryInstanceOf(
  instances: readonly { name: string; domain: string; enabled: boolean }[],
): string | null {
  return instances.find((instance) => instance.domain === 'memory' && instance.enabled)?.name ?? null;
}

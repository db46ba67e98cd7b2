// Memory (docs/memory.md): the contract types, the stores and consolidation, and the hybrid index over a rebuildable
// cache under data/memory/index/ (docs/memory-index.md).

export {
  type ConsolidateItemOptions,
  type ConsolidateItemResult,
  consolidateItem,
  pruneConsolidationMarkers,
} from './consolidate/consolidate-item.ts';
export {
  type ConsolidationItem,
  chatMessageItem,
  type ItemPerson,
  itemForConsolidation,
} from './consolidate/consolidation-item.ts';
export { createEmbedder, type EmbeddingsConfig } from './index/create-embedder.ts';
export { EmbeddingsInvalidError, EmbeddingsUnavailableError } from './index/embeddings-error.ts';
export { HashingEmbedder, type HashingEmbedderOptions } from './index/hashing-embedder.ts';
export {
  MemoryIndex,
  type MemoryIndexLogger,
  type MemoryIndexOptions,
  type MemoryIndexStatus,
} from './index/memory-index.ts';
export { OpenAiEmbedder, type OpenAiEmbedderOptions } from './index/openai-embedder.ts';
export {
  type Contact,
  type Embedder,
  type Fact,
  type Guidance,
  type MemoryProblem,
  type MemorySearchHit,
  type MemorySearchOptions,
  type MemorySearchResult,
  memoryFolders,
  type OwnerTask,
  type SearchMode,
  type Trust,
} from './memory-types.ts';
// stores
export {
  type ContactBook,
  type ContactMatch,
  type ContactQuery,
  contactBook,
  type NewContact,
  type ObservedIdentifier,
} from './stores/contact-book.ts';
export { type FactStore, factStore, type NewFact } from './stores/fact-store.ts';
export { type GuidanceStore, guidanceStore } from './stores/guidance-store.ts';
export { type MemoryStores, memoryStores } from './stores/memory-stores.ts';
export { type DueWindow, dayIn, dueStanding, dueWindows, tasksDue } from './stores/owner-task-due.ts';
export { type NewOwnerTask, type OwnerTaskStore, ownerTaskStore } from './stores/owner-task-store.ts';
// end stores

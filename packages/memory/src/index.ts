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

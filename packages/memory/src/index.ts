// index: hybrid retrieval (BM25, embeddings, entity overlap) over a rebuildable cache under data/memory/index/.
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

import type { ChatModel } from '@assistant/llm';
import type { MemoryStores } from '../stores/memory-stores.ts';
import type { ConsolidationItem } from './consolidation-item.ts';

export interface ConsolidateItemOptions {
  stores: MemoryStores;
  model: ChatModel;
  item: ConsolidationItem;
  /** The data directory: markers go under `<dataDir>/memory/consolidated/`. */
  dataDir: string;
  signal?: AbortSignal;
  /** For tests. @default Date.now() */
  nowMs?: number;
}

export interface ConsolidateItemResult {
  /** Why nothing was done (`already consolidated`). */
  skipped?: string;
  contacts: { created: string[]; observed: string[] };
  facts: { created: string[]; superseded: string[]; refused: string[] };
  tasks: { created: string[] };
}

/** One structured LLM call over the fenced item; applies people, facts and follow-ups to the stores. */
export async function consolidateItem(_options: ConsolidateItemOptions): Promise<ConsolidateItemResult> {
  throw new Error('not implemented yet');
}

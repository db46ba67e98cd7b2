import type { LoadedConfig } from '@assistant/config';
import { createEmbedder, type Embedder, MemoryIndex, memoryStores } from '@assistant/memory';
import type { NoteStore, RootedNoteStore } from '@assistant/notes';
import type { OwnerMemoryStores } from './owner-memory.ts';

export interface OpenMemoryOptions {
  config: LoadedConfig;
  /** The notes the stores write through (the server's reports its writes to the event ledger). */
  notes: NoteStore;
  /** The same notes as files: the index reads and watches their folder. */
  localNotes: RootedNoteStore;
  logger?: { info(message: string): void; warn(message: string): void };
}

/** Memory for one process of the owner's surfaces: the stores, and one index started on first use. */
export interface OwnerMemory {
  stores: OwnerMemoryStores;
  /** The index (reads every note once when first asked, then follows changes); the same one for every caller. */
  index(): Promise<MemoryIndex>;
  /** Re-reads a note the caller just wrote, when the index is running (otherwise its start reads it anyway). */
  refresh(notePath: string): Promise<void>;
  /** Stops the index's watch, if it was started; idempotent. */
  close(): Promise<void>;
}

/** The embedder config.yaml's `embeddings:` names, or the offline hashing embedder without one. */
function configuredEmbedder(config: LoadedConfig): Embedder {
  const embeddings = config.embeddings;
  return createEmbedder(
    embeddings === undefined
      ? undefined
      : {
          base_url: embeddings.baseUrl,
          model: embeddings.model,
          // Revealed only into the embedder, which never writes it into an error or a log.
          api_key: embeddings.apiKey?.reveal(),
          timeout_ms: embeddings.timeoutMs,
        },
  );
}

/**
 * The server's (and a CLI command's) memory. The index starts on the first search rather than with the server: reading
 * every note of a large installation takes a while and most requests never search. A start that failed is tried again
 * by the next request, not remembered.
 */
export function openOwnerMemory(options: OpenMemoryOptions): OwnerMemory {
  let starting: Promise<MemoryIndex> | undefined;
  let closed = false;
  const index = (): Promise<MemoryIndex> => {
    if (closed) return Promise.reject(new Error('the memory index is closed: the process is stopping'));
    starting ??= (async () => {
      const created = new MemoryIndex({
        notes: options.localNotes,
        dataDir: options.config.paths.dataDir,
        embedder: configuredEmbedder(options.config),
        ...(options.logger ? { logger: options.logger } : {}),
      });
      await created.start();
      return created;
    })();
    starting.catch(() => {
      starting = undefined;
    });
    return starting;
  };
  let closing: Promise<void> | undefined;
  let stores: OwnerMemoryStores | undefined;
  return {
    // Made on first use, like the index: a process that never serves memory never builds them.
    get stores() {
      stores ??= memoryStores({ notes: options.notes });
      return stores;
    },
    index,
    refresh: async (notePath) => {
      const running = await starting?.catch(() => undefined);
      await running?.refresh(notePath);
    },
    close: () => {
      closing ??= (async () => {
        closed = true;
        const started = await starting?.catch(() => undefined);
        await started?.close();
      })();
      return closing;
    },
  };
}

import type { LoadedConfig } from '@assistant/config';
import type { MemoryContext, MemorySearch, MemoryStoresView } from '@assistant/integration-host';
import { createEmbedder, MemoryIndex, memoryStores } from '@assistant/memory';
import type { NoteStore, RootedNoteStore } from '@assistant/notes';
import type { Logger } from 'pino';

export interface WorkerMemoryOptions {
  config: LoadedConfig;
  /** The notes handlers write through (reported to the event ledger): the stores write with it. */
  notes: NoteStore;
  /** The same notes as files on this machine: the index reads and watches their folder. */
  localNotes: RootedNoteStore;
  logger: Logger;
}

/** Memory for the handlers of one worker process, and the closing of its index at shutdown. */
export interface WorkerMemory {
  context: MemoryContext;
  /** Stops the index's watcher, if it was started; waits for a start in progress first. */
  close(): Promise<void>;
}

/**
 * The worker's memory (docs/memory.md): the stores over the notes, and ONE index per process, started on the first
 * task that needs it (recall, a chat turn's context, reindex) rather than at start, since reading every note of a
 * large installation takes a while and most tasks never search. Consolidation runs only when the profile it names
 * exists; config check refuses a profile named by hand that does not, so this is the implied `default` missing.
 */
export function createWorkerMemory(options: WorkerMemoryOptions): WorkerMemory {
  const { config, logger } = options;
  const profileExists = config.memory.llm in config.llms;
  if (config.memory.consolidate.length > 0 && !profileExists) {
    // With no LLM profile at all the installation uses no model, and memory is one more thing it does not do: said
    // at info. With profiles but not this one, the owner likely expected consolidation: a warning.
    const log = Object.keys(config.llms).length === 0 ? logger.info.bind(logger) : logger.warn.bind(logger);
    log(
      { consolidate: config.memory.consolidate },
      `memory: nothing is consolidated: there is no LLM profile \`${config.memory.llm}\` (set memory.llm, or add llms.${config.memory.llm})`,
    );
  }
  let starting: Promise<MemoryIndex> | undefined;
  let closed = false;
  const index = (): Promise<MemorySearch> => {
    if (closed) return Promise.reject(new Error('the memory index is closed: the worker is stopping'));
    starting ??= (async () => {
      const embeddings = config.embeddings;
      const created = new MemoryIndex({
        notes: options.localNotes,
        dataDir: config.paths.dataDir,
        // The key is revealed here only, into the embedder, which never writes it into an error or a log.
        embedder: createEmbedder(
          embeddings === undefined
            ? undefined
            : {
                base_url: embeddings.baseUrl,
                model: embeddings.model,
                api_key: embeddings.apiKey?.reveal(),
                timeout_ms: embeddings.timeoutMs,
              },
        ),
        logger: { info: (message) => logger.info(message), warn: (message) => logger.warn(message) },
      });
      await created.start();
      return created;
    })();
    // A start that failed (a notes folder that cannot be read) is tried again by the next task, not cached.
    starting.catch(() => {
      starting = undefined;
    });
    return starting;
  };
  // Made on first use too: most tasks never touch memory.
  let stores: MemoryStoresView | undefined;
  return {
    context: {
      consolidate: profileExists ? config.memory.consolidate : [],
      llm: config.memory.llm,
      timeZone: config.owner.timeZone,
      context: config.memory.context,
      get stores() {
        stores ??= memoryStores({ notes: options.notes });
        return stores;
      },
      index,
    },
    close: async () => {
      closed = true;
      const started = await starting?.catch(() => undefined);
      await started?.close();
    },
  };
}

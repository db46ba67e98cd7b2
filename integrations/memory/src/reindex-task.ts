import { type HandlerContext, type JsonValue, UnrecoverableError } from '@assistant/sdk';

/**
 * `memory.reindex`: drops the worker's memory index and builds it again (`assistant memory reindex`). A thin call
 * of the index's own rebuild: the notes are never touched, only the derived cache under `data/memory/index/`.
 */
export async function runReindexTask(context: HandlerContext<JsonValue>): Promise<JsonValue> {
  const memory = context.memory;
  if (!memory) throw new UnrecoverableError('memory.reindex runs only as the builtin memory integration');
  const index = await memory.index();
  await index.rebuild();
  const status = index.status();
  await context.log.human(
    `rebuilt the memory index: ${status.notes} notes, ${status.embedded} embedded with ${status.model}${status.pending > 0 ? `, ${status.pending} waiting for the embeddings endpoint` : ''}`,
    { reason: 'memory.reindex', source: 'memory' },
  );
  return { rebuilt: true, ...status };
}

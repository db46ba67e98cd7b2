import { ConversationStore } from '@assistant/chat';
import {
  type ConsolidationItem,
  chatMessageItem,
  consolidateItem,
  itemForConsolidation,
  memoryStores,
} from '@assistant/memory';
import { type HandlerContext, type JsonValue, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';

const payloadSchema = z.union([
  z.strictObject({ note: z.string().min(1).max(1_000) }),
  z.strictObject({
    conversation: z.string().regex(/^[a-z0-9-]{1,64}$/),
    message: z.string().regex(/^[a-z0-9-]{1,64}$/),
  }),
]);

/**
 * `memory.consolidate`: one item (an email or GitHub item note, or an owner's chat message) through consolidation
 * (docs/memory.md): one structured call to `memory.llm`, then contacts matched or created, facts written (superseding
 * older extracted ones), follow-ups added as the owner's tasks. Idempotent per item version. A model that cannot be
 * reached throws, and the queue retries the task as it retries any; an answer outside the schema fails it visibly.
 */
export async function runConsolidateTask(context: HandlerContext<JsonValue>): Promise<JsonValue> {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    throw new UnrecoverableError(
      `memory.consolidate expects {"note": "<item note>"} or {"conversation": "c-…", "message": "m-…"}; got ${JSON.stringify(context.payload).slice(0, 200)}`,
    );
  }
  const memory = context.memory;
  if (!memory) throw new UnrecoverableError('memory.consolidate runs only as the builtin memory integration');
  const payload = checked.data;
  const item = 'note' in payload ? await noteItem(context, payload.note) : await chatItem(context, payload);
  if (item === undefined) {
    return {
      source: 'note' in payload ? payload.note : `${payload.conversation}#${payload.message}`,
      skipped: 'not an item memory reads',
    };
  }
  const stores = memoryStores({ notes: context.notes });
  const outcome = await consolidateItem({
    stores,
    model: context.llm(memory.llm),
    item,
    signal: context.signal,
    dataDir: context.dataDir,
    ownerIdentities: memory.ownerIdentities ?? [],
  });
  if (outcome.skipped === undefined) {
    // Slugs become the names the owner knows them by.
    const named = async (slugs: readonly string[]) =>
      Promise.all(slugs.map(async (slug) => (await stores.contacts.get(slug))?.name ?? slug));
    const shown = {
      ...outcome,
      contacts: { created: await named(outcome.contacts.created), observed: await named(outcome.contacts.observed) },
    };
    await context.log.human(learned(item.source, shown), {
      reason: `consolidation of ${item.kind} item ${item.source} (memory.consolidate)`,
      source: 'memory',
    });
  }
  return JSON.parse(JSON.stringify({ source: item.source, ...outcome })) as JsonValue;
}

async function noteItem(context: HandlerContext<JsonValue>, notePath: string): Promise<ConsolidationItem | undefined> {
  const note = await context.notes.read(notePath);
  if (!note) throw new UnrecoverableError(`memory.consolidate: no note ${notePath}`);
  return itemForConsolidation({ path: note.path, data: note.data, body: note.body });
}

async function chatItem(
  context: HandlerContext<JsonValue>,
  payload: { conversation: string; message: string },
): Promise<ConsolidationItem | undefined> {
  const conversation = await new ConversationStore({ notes: context.notes }).get(payload.conversation);
  const message = conversation.messages.find((candidate) => candidate.id === payload.message);
  // A message not (yet) in the transcript: its turn has not written it; the turn task enqueues consolidation after it.
  if (!message)
    throw new UnrecoverableError(`memory.consolidate: no message ${payload.message} in chat ${payload.conversation}`);
  // Only what the owner wrote is read: an assistant's reply is no source of facts about the world.
  if (message.role !== 'user') return undefined;
  return chatMessageItem({
    conversation: payload.conversation,
    messageId: message.id,
    text: message.text,
    at: message.at,
  });
}

/** What consolidation learned, for the human log: counts and contact names, never the text of a fact or a mail. */
export function learned(source: string, outcome: object): string {
  const result = outcome as Record<string, unknown>;
  const contacts = (result.contacts ?? {}) as Record<string, unknown>;
  const facts = (result.facts ?? {}) as Record<string, unknown>;
  const tasks = (result.tasks ?? {}) as Record<string, unknown>;
  const created = names(contacts.created);
  const observed = names(contacts.observed);
  const parts = [
    created.length === 0 ? undefined : `new contact${created.length === 1 ? '' : 's'} ${created.join(', ')}`,
    observed.length === 0 ? undefined : `seen again ${observed.join(', ')}`,
    `${count(facts.created)} fact${count(facts.created) === 1 ? '' : 's'}`,
    count(facts.superseded) > 0 ? `${count(facts.superseded)} superseded` : undefined,
    count(facts.refused) > 0 ? `${count(facts.refused)} supersede refused (owner facts)` : undefined,
    `${count(tasks.created)} follow-up${count(tasks.created) === 1 ? '' : 's'}`,
  ].filter((part) => part !== undefined);
  return `memory from ${source}: ${parts.join('; ')}`;
}

function count(value: unknown): number {
  if (typeof value === 'number') return value;
  return Array.isArray(value) ? value.length : 0;
}

/** Contact names from what consolidation reports: contacts, slugs, or a count (no names then). */
function names(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value
    .map((entry) =>
      typeof entry === 'string'
        ? entry
        : typeof entry === 'object' && entry !== null && 'name' in entry
          ? String((entry as { name: unknown }).name)
          : undefined,
    )
    .filter((name): name is string => name !== undefined)
    .slice(0, 10);
}

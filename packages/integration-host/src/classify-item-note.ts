import {
  Conversation,
  classificationAnswerSchema,
  classificationQuestions,
  type FencedText,
  LlmOutputError,
} from '@assistant/llm';
import { UnrecoverableError } from '@assistant/queue';
import type { HandlerContext } from './handler-context.ts';
import { enqueueConsolidation } from './memory-context.ts';

/** What a classify stage says about its item: the owner-facing role of the model, and the item as it is asked. */
export interface ClassifyItemPrompt {
  /** The system message's first words (`You classify email for its owner.`); the fence's instruction follows. */
  role: string;
  /** The item's untrusted text, fenced (`fenceUntrusted`). */
  fenced: FencedText;
  /** Lines of facts the platform itself states, given unfenced before the fenced text. */
  facts?: string;
  /** What the questions are about, as the user message names it. @default 'the item below' */
  about?: string;
}

/**
 * The classify stage every platform shares (`{note}`): one structured LLM call answers all of the platform's
 * classifications over the item's note, stores them on the note with who answered (`classified_by`,
 * `classified_model`) and for which content (`classified_hash`), and enqueues `evaluate`. An item whose
 * `content_hash` was classified before is not asked again: no model call is ever spent twice on the same text.
 * `prompt` is called only when the model is asked.
 */
export async function classifyItemNote(
  context: HandlerContext<unknown, unknown>,
  prompt: (data: Record<string, unknown>) => ClassifyItemPrompt | Promise<ClassifyItemPrompt>,
): Promise<{ note: string; skipped?: string; classifications?: unknown }> {
  const notePath = (context.payload as { note?: unknown } | null)?.note;
  if (typeof notePath !== 'string') throw new UnrecoverableError('a classify payload is {note}');
  const note = await context.notes.read(notePath);
  if (!note) throw new UnrecoverableError(`no note ${notePath}`);
  if (note.data.classified_hash === note.data.content_hash && note.data.classifications) {
    await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
    return { note: notePath, skipped: 'already classified' };
  }
  const classifications = context.platform?.classifications ?? {};
  const { role, fenced, facts, about = 'the item below' } = await prompt(note.data);
  const model = context.llm();
  const conversation = new Conversation(model, { system: `${role} ${fenced.instruction}` });
  let answers: unknown;
  try {
    answers = await conversation.structured(
      classificationAnswerSchema(classifications),
      `Answer these questions about ${about}.\n${classificationQuestions(classifications)}\n\n${facts ? `${facts}\n\n` : ''}${fenced.text}`,
      { name: 'classifications', signal: context.signal },
    );
  } catch (error) {
    // The model answered, but never in the schema: asking again about the same text spends calls for nothing, so the
    // note says so and the platform's check leaves it until its content changes (or a person retries the task).
    if (error instanceof LlmOutputError) {
      await context.notes.update(notePath, {
        set: { classification_failed_hash: String(note.data.content_hash ?? ''), classification_error: error.message },
      });
    }
    throw error;
  }
  await context.notes.update(notePath, {
    set: {
      classification_failed_hash: undefined,
      classification_error: undefined,
      classifications: answers as never,
      classified_by: model.name,
      classified_model: model.model ?? null,
      classified_hash: String(note.data.content_hash ?? ''),
      classified_at: new Date().toISOString(),
    },
  });
  // In the ledger before evaluate is enqueued and the task is done; the same content classified again is the same event.
  await context.events?.emit({
    type: 'item.classified',
    source: `${context.instance.domain}:${context.instance.name}`,
    nativeId: `${notePath}@${String(note.data.content_hash ?? '')}`,
    causedBy: [context.task.id],
    data: {
      integration: context.instance.domain,
      instance: context.instance.name,
      item: notePath,
      classifications: answers as Record<string, unknown>,
    },
  });
  await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
  // Memory reads the item after it is classified (config.yaml's `memory.consolidate`); a failure there is its own
  // task's, never this one's.
  if (context.memory) await enqueueConsolidation(context, { domain: context.instance.domain, notePath });
  return { note: notePath, classifications: answers };
}

/**
 * What a collect stage does last: enqueues `classify` for the item's note and, when the platform has rules that test
 * no classification (`authentication: fail → move: Junk`), `evaluate` at once with `{note, before_classification:
 * true}`, so those rules act without waiting for the model: behind a long backlog, or while the model is down. The
 * evaluate after classification runs every rule; actions already taken are skipped by their keys on the note.
 */
export async function enqueueClassifyAfterCollect(
  context: Pick<HandlerContext<unknown, unknown>, 'enqueue' | 'automations'>,
  notePath: string,
  options: { classifyPriority?: number } = {},
): Promise<void> {
  await context.enqueue({
    stage: 'classify',
    payload: { note: notePath },
    ...(options.classifyPriority === undefined ? {} : { priority: options.classifyPriority }),
  });
  const modelFree = context.automations.rules.some(
    (rule) => rule.conditions.length > 0 && rule.conditions.every((condition) => condition.subject.kind === 'field'),
  );
  if (modelFree) await context.enqueue({ stage: 'evaluate', payload: { note: notePath, before_classification: true } });
}

/**
 * Whether a check should enqueue `classify` again for an item's note: it was collected but has no classification of
 * its current content, and the model did not already fail for good on that content.
 */
export function needsClassification(data: Record<string, unknown>): boolean {
  const hash = data.content_hash;
  if (hash === undefined || hash === null || hash === '') return false;
  return data.classified_hash !== hash && data.classification_failed_hash !== hash;
}

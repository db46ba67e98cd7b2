import { Conversation, classificationAnswerSchema, classificationQuestions, type FencedText } from '@assistant/llm';
import { UnrecoverableError } from '@assistant/queue';
import type { HandlerContext } from './handler-context.ts';

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
  const answers = await conversation.structured(
    classificationAnswerSchema(classifications),
    `Answer these questions about ${about}.\n${classificationQuestions(classifications)}\n\n${facts ? `${facts}\n\n` : ''}${fenced.text}`,
    { name: 'classifications', signal: context.signal },
  );
  await context.notes.update(notePath, {
    set: {
      classifications: answers as never,
      classified_by: model.name,
      classified_model: model.model ?? null,
      classified_hash: String(note.data.content_hash ?? ''),
      classified_at: new Date().toISOString(),
    },
  });
  await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
  return { note: notePath, classifications: answers };
}

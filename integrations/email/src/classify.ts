import {
  Conversation,
  classificationAnswerSchema,
  classificationQuestions,
  fenceUntrusted,
  UnrecoverableError,
} from '@assistant/sdk';
import type { EmailContext } from './email-settings.ts';

/**
 * `email.inbox.classify` (`{note}`): one structured LLM call answers every classification of the platform over the
 * fenced message. A message classified before is not asked again unless its content changed.
 */
export async function classify(context: EmailContext<{ note: string }>) {
  const notePath = context.payload.note;
  const note = await context.notes.read(notePath);
  if (!note) throw new UnrecoverableError(`no note ${notePath}`);
  const classifications = context.platform?.classifications ?? {};
  if (note.data.classified_hash === note.data.content_hash && note.data.classifications) {
    await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
    return { note: notePath, skipped: 'already classified' };
  }
  const fenced = fenceUntrusted(
    {
      from: String(note.data.from ?? ''),
      subject: String(note.data.subject ?? ''),
      body: String(note.data.body_excerpt ?? ''),
    },
    { maxCharsByField: { from: 300, subject: 500, body: 6_000 } },
  );
  const model = context.llm();
  const conversation = new Conversation(model, {
    system: `You classify email for its owner. ${fenced.instruction}`,
  });
  const questions = classificationQuestions(classifications);
  const answers = await conversation.structured(
    classificationAnswerSchema(classifications),
    `Answer these questions about the message below.\n${questions}\n\n${fenced.text}`,
    { name: 'classifications', signal: context.signal },
  );
  await context.notes.update(notePath, {
    set: {
      classifications: answers as never,
      classified_by: `${model.name}`,
      classified_model: model.model ?? null,
      classified_hash: String(note.data.content_hash ?? ''),
      classified_at: new Date().toISOString(),
    },
  });
  await context.enqueue({ stage: 'evaluate', payload: { note: notePath } });
  return { note: notePath, classifications: answers };
}

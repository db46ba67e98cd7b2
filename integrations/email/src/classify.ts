import { Conversation, fenceUntrusted, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';
import type { EmailContext } from './email-settings.ts';

type Classification = NonNullable<EmailContext['platform']>['classifications'][string];

/** One zod field per classification: confidences are 0–1, booleans yes/no, enums one of their values. */
export function classificationSchema(classifications: Record<string, Classification>) {
  const shape: Record<string, z.ZodType> = {};
  for (const [name, classification] of Object.entries(classifications)) {
    shape[name] =
      classification.type === 'confidence'
        ? z.number().min(0).max(1).describe(classification.prompt)
        : classification.type === 'boolean'
          ? z.boolean().describe(classification.prompt)
          : z
              .enum(('values' in classification ? classification.values : []) as [string, ...string[]])
              .describe(classification.prompt);
  }
  return z.strictObject(shape);
}

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
  const questions = Object.entries(classifications)
    .map(
      ([name, classification]) =>
        `- ${name}: ${classification.prompt}${classification.type === 'confidence' ? ' (a confidence from 0 to 1)' : ''}`,
    )
    .join('\n');
  const answers = await conversation.structured(
    classificationSchema(classifications),
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

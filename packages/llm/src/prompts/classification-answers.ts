import type { Classification } from '@assistant/config';
import * as z from 'zod';

/**
 * The structured answer to a platform's classifications, one field each: a confidence is a number from 0 to 1, a
 * boolean yes or no, an enum one of its values. Every integration's classify stage asks for this shape.
 */
export function classificationAnswerSchema(classifications: Readonly<Record<string, Classification>>) {
  // Made once per set of classifications (the loaded config's object): a classify task asks for it at every message.
  const made = answerSchemas.get(classifications);
  if (made !== undefined) return made;
  const schema = answerSchemaOf(classifications);
  answerSchemas.set(classifications, schema);
  return schema;
}

const answerSchemas = new WeakMap<object, ReturnType<typeof answerSchemaOf>>();

function answerSchemaOf(classifications: Readonly<Record<string, Classification>>) {
  // No descriptions: each question is asked once, in the message (`classificationQuestions`); repeating it in the
  // schema, which is sent twice (in the message and as response_format), only cost tokens.
  const shape: Record<string, z.ZodType> = {};
  for (const [name, classification] of Object.entries(classifications)) {
    shape[name] =
      classification.type === 'confidence'
        ? z.number().min(0).max(1)
        : classification.type === 'boolean'
          ? z.boolean()
          : z.enum(('values' in classification ? classification.values : []) as [string, ...string[]]);
  }
  return z.strictObject(shape);
}

/** The classifications as a list of questions for the prompt: `- urgent: Does it need …?`. */
export function classificationQuestions(classifications: Readonly<Record<string, Classification>>): string {
  return Object.entries(classifications)
    .map(
      ([name, classification]) =>
        `- ${name}: ${classification.prompt}${classification.type === 'confidence' ? ' (a confidence from 0 to 1)' : ''}`,
    )
    .join('\n');
}

import type { ToolCall } from '@assistant/llm';
import type * as z from 'zod';

/** Either the validated input or an error message written for the model, so it can correct the call. */
export type ParsedToolArguments<Input> = { ok: true; input: Input } | { ok: false; error: string };

/**
 * Parses and validates the JSON arguments a model wrote for a tool. Never throws: a bad call is the model's mistake
 * to fix, and the message says what was received and what the schema wants.
 */
export function parseToolArguments<Input>(call: ToolCall, schema: z.ZodType<Input>): ParsedToolArguments<Input> {
  let json: unknown;
  // Some models send an empty string for a tool without parameters; that means "no arguments", not broken JSON.
  const text = call.arguments.trim() === '' ? '{}' : call.arguments;
  try {
    json = JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `the arguments of ${call.name} are not valid JSON (${reason}): ${call.arguments}` };
  }
  const parsed = schema.safeParse(json);
  if (parsed.success) return { ok: true, input: parsed.data };
  const problems = parsed.error.issues.map((issue) => {
    const path = issue.path.length === 0 ? '(arguments)' : issue.path.map(String).join('.');
    return `${path}: ${issue.message}`;
  });
  return { ok: false, error: `invalid arguments for ${call.name}: ${problems.join('; ')}; received ${text}` };
}

import { AssistantError } from '@assistant/errors';

/** A request to the model failed for good: after the retries, or with an error retrying cannot fix (401, 400). */
export class LlmRequestError extends AssistantError {
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number | undefined; cause?: unknown; hint?: string } = {}) {
    super('LLM_REQUEST_FAILED', message, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      ...(options.hint === undefined ? {} : { hint: options.hint }),
    });
    this.status = options.status;
  }
}

/** The caller aborted: a cancellation, not a failure, and never retried. */
export class LlmAbortedError extends Error {
  override name = 'LlmAbortedError';
}

/** Structured output stayed invalid after every corrective retry. `attempts` holds each reply and its problem. */
export class LlmOutputError extends AssistantError {
  readonly attempts: readonly { reply: string; problem: string }[];

  constructor(message: string, attempts: readonly { reply: string; problem: string }[]) {
    super('LLM_OUTPUT_INVALID', message, { hint: 'a larger model, or a simpler schema, usually fixes this' });
    this.attempts = attempts;
  }
}

/**
 * The request is longer than the model's context window (Anthropic's "prompt is too long", Gemini's "input token
 * count exceeds", OpenAI's `context_length_exceeded`). Retrying the same request cannot help; a shorter one can.
 */
export class LlmContextTooLongError extends AssistantError {
  readonly status: number | undefined;

  constructor(message: string, options: { status?: number | undefined; cause?: unknown } = {}) {
    super('LLM_CONTEXT_TOO_LONG', message, {
      ...(options.cause === undefined ? {} : { cause: options.cause }),
      hint: 'shorten the conversation or the input, or use a profile with a larger `context_window`',
    });
    this.status = options.status;
  }
}

/**
 * The provider's answer broke its own format: a stream cut off mid-event, a tool call whose arguments are not JSON,
 * an event the adapter cannot read. `excerpt` is the offending part of the raw answer, secrets scrubbed, at most a
 * few hundred characters. Structured output treats it as an invalid answer and asks again.
 */
export class LlmResponseMalformedError extends AssistantError {
  readonly excerpt: string;

  constructor(message: string, excerpt: string, options: { cause?: unknown } = {}) {
    super('LLM_RESPONSE_MALFORMED', message, options.cause === undefined ? {} : { cause: options.cause });
    this.excerpt = excerpt;
  }
}

/**
 * A JSON Schema (a tool's input, a structured answer) uses a construct the provider cannot express (Gemini's schema
 * subset has no `$ref`, `not`, `if`…). `path` is where in the schema, as a JSON pointer.
 */
export class LlmSchemaUnsupportedError extends AssistantError {
  readonly construct: string;
  readonly path: string;

  constructor(provider: string, construct: string, path: string) {
    super(
      'LLM_SCHEMA_UNSUPPORTED',
      `${provider} cannot express \`${construct}\` in a JSON Schema (at ${path === '' ? 'the root' : path})`,
      { hint: 'simplify the schema, or use a profile whose provider takes full JSON Schema' },
    );
    this.construct = construct;
    this.path = path;
  }
}

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

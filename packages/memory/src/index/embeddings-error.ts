import { AssistantError, type AssistantErrorOptions } from '@assistant/errors';

/**
 * The embeddings endpoint is down, overloaded or timing out: an outage. The index keeps the notes pending and tries
 * again later; search stays lexical meanwhile.
 */
export class EmbeddingsUnavailableError extends AssistantError {
  /** The HTTP status when the server answered (408, 429, 5xx); absent when no answer came. */
  readonly status: number | undefined;
  constructor(message: string, options: AssistantErrorOptions & { status?: number } = {}) {
    super('MEMORY_EMBEDDINGS_UNAVAILABLE', message, options);
    this.status = options.status;
  }
}

/** The endpoint answered with something that is not the embeddings asked for: a bad answer, not an outage. */
export class EmbeddingsInvalidError extends AssistantError {
  readonly status: number | undefined;
  constructor(message: string, options: AssistantErrorOptions & { status?: number } = {}) {
    super('MEMORY_EMBEDDINGS_INVALID', message, options);
    this.status = options.status;
  }
}

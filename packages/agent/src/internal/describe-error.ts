import { scrubSecrets } from '@assistant/errors';

/**
 * The one-line text of anything thrown or used as an abort reason, for tool messages and result reasons. Scrubbed of
 * loaded secrets: these reach the model, the transcript, the events and the task's result.
 */
export function describeError(error: unknown): string {
  if (error instanceof Error) return scrubSecrets(error.message);
  if (typeof error === 'string') return scrubSecrets(error);
  return scrubSecrets(String(error));
}

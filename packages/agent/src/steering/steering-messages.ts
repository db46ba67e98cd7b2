/**
 * The user messages that tell the model what its owner did. Bracketed prefixes keep them apart from the task's own
 * text, in the transcript and in summaries of it.
 */
export const steeringMessages = {
  paused: '[steering] paused by the owner',
  resumed: '[steering] resumed',
  stopRequested: (reason: string): string => `[steering] stop requested: ${reason}`,
  interjection: (message: string): string => `[interjection] ${message}`,
} as const;

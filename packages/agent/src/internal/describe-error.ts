/** The one-line text of anything thrown or used as an abort reason, for tool messages and result reasons. */
export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  return String(error);
}

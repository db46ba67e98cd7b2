// Placeholder until the handler lands (issue 18).
export async function createIssue(): Promise<never> {
  throw new Error('the github integration is being built: createIssue is not ready');
}

// Placeholder until the handler lands (issue 18).
export async function receive(): Promise<never> {
  throw new Error('the github integration is being built: receive is not ready');
}

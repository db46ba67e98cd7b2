// Placeholder until the handler lands (issue 18).
export async function evaluate(): Promise<never> {
  throw new Error('the github integration is being built: evaluate is not ready');
}

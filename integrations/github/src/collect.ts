// Placeholder until the handler lands (issue 18).
export async function collect(): Promise<never> {
  throw new Error('the github integration is being built: collect is not ready');
}

// Placeholder until the handler lands (issue 18).
export async function classify(): Promise<never> {
  throw new Error('the github integration is being built: classify is not ready');
}

// Placeholder until the handler lands (issue 18).
export async function act(): Promise<never> {
  throw new Error('the github integration is being built: act is not ready');
}

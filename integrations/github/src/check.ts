// Placeholder until the handler lands (issue 18).
export async function check(): Promise<never> {
  throw new Error('the github integration is being built: check is not ready');
}

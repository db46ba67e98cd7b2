// Placeholder until the handler lands (issue 18).
export async function checkCredentials(): Promise<never> {
  throw new Error('the github integration is being built: checkCredentials is not ready');
}

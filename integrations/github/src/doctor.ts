import { authMode, describeGithubError, githubClient, isStatus, ownerLogin } from './client.ts';
import type { GithubSettings } from './github-settings.ts';

/**
 * `assistant doctor` for a GitHub instance: authenticates (a GitHub App gets an installation token), finds whose
 * items count, and prints the rate limit left, or says exactly what is wrong (credentials, api_url, network).
 */
export async function checkCredentials(options: {
  instance: { name: string; settings: Record<string, unknown> };
  signal: AbortSignal;
}): Promise<{ ok: boolean; message: string; hint?: string }> {
  const instance = { name: options.instance.name, settings: options.instance.settings as unknown as GithubSettings };
  const label = `github ${instance.name}`;
  let mode: 'token' | 'app';
  try {
    mode = authMode(instance);
  } catch (error) {
    return {
      ok: false,
      message: `${label}: ${(error as Error).message}`,
      hint: "put the token (or the App's private key) in secrets.yaml and name it with `!secret name` in config.yaml",
    };
  }
  const api = instance.settings.api_url;
  try {
    const octokit = githubClient(instance);
    const { data } = await octokit.rest.rateLimit.get({ request: { signal: options.signal, retries: 0 } });
    const login = await ownerLogin(instance, options.signal);
    const core = data.resources.core;
    const search = data.resources.search;
    const resets = new Date(core.reset * 1000).toISOString().slice(11, 16);
    const who =
      mode === 'token'
        ? `as @${login}`
        : `as the GitHub App ${instance.settings.app_id}'s installation ${instance.settings.installation_id}, for @${login}`;
    return {
      ok: true,
      message: `${label}: authenticated at ${api} ${who}; rate limit ${core.remaining}/${core.limit} left (resets ${resets} UTC), search ${search.remaining}/${search.limit}`,
    };
  } catch (error) {
    const unauthorized = isStatus(error, 401) || /401|Bad credentials|credentials/i.test((error as Error).message);
    return {
      ok: false,
      message: `${label}: ${describeGithubError(error)}`,
      hint: unauthorized
        ? mode === 'token'
          ? 'the token was refused: make a new one (Settings → Developer settings → Personal access tokens) and put it in secrets.yaml'
          : "the App was refused: check app_id, installation_id and that private_key is the App's current key"
        : `check api_url (${api}: https://HOST/api/v3 for GitHub Enterprise Server) and that this machine reaches it`,
    };
  }
}

import { createHash } from 'node:crypto';
import {
  ActionNotTakenError,
  DelayedError,
  RetryableError,
  UnrecoverableError,
  outageDelay as waitOutOutage,
} from '@assistant/sdk';
import { createAppAuth } from '@octokit/auth-app';
import { retry } from '@octokit/plugin-retry';
import { throttling } from '@octokit/plugin-throttling';
import { Octokit } from '@octokit/rest';
import type { GithubSettings } from './github-settings.ts';

const GithubOctokit = Octokit.plugin(retry, throttling);

/** Octokit with the retry and throttling plugins, authenticated as the instance's token or App installation. */
export type GithubClient = InstanceType<typeof GithubOctokit>;

/** What the client needs of an instance: its name (the cache key and error messages) and its settings. */
export interface ClientInstance {
  name: string;
  settings: GithubSettings;
}

/** A rate-limit wait this short is waited out inside the request; a longer one gives the task back (DelayedError). */
const inlineWaitLimitSeconds = 5;
/** GitHub's advice for a secondary rate limit without a retry-after header: wait at least a minute. */
const secondaryFallbackMs = 60_000;
/** An App installation token is renewed this long before GitHub's expiry, never used up to the last second. */
const tokenRenewalMarginMs = 5 * 60_000;

const clients = new Map<string, { key: string; octokit: GithubClient; login?: Promise<string> | undefined }>();
/** Until when an account (API root and credential) is rate limited: no request is sent before then. */
const limitedUntil = new Map<string, number>();

/** How the instance authenticates, or a config error that says what to set. */
export function authMode(instance: ClientInstance): 'token' | 'app' {
  const { settings } = instance;
  const hasApp = settings.app_id !== undefined || settings.installation_id !== undefined || settings.private_key?.isSet;
  if (settings.token?.isSet && hasApp) {
    throw new UnrecoverableError(
      `github instance ${instance.name}: set either \`token\` or the App's \`app_id\`, \`installation_id\` and \`private_key\`, not both`,
    );
  }
  if (settings.token?.isSet) return 'token';
  if (settings.app_id !== undefined && settings.installation_id !== undefined && settings.private_key?.isSet) {
    return 'app';
  }
  if (hasApp) {
    throw new UnrecoverableError(
      `github instance ${instance.name}: a GitHub App needs \`app_id\`, \`installation_id\` and \`private_key\` (as \`!secret name\`)`,
    );
  }
  throw new UnrecoverableError(
    `github instance ${instance.name} has no credentials: set \`token: !secret name\` (a personal access token) or a GitHub App's \`app_id\`, \`installation_id\` and \`private_key\``,
  );
}

/** The identity of an account for the caches: the API root and a hash of the credential, never the credential. */
function accountKey(instance: ClientInstance): string {
  const { settings } = instance;
  const credential =
    authMode(instance) === 'token'
      ? `token:${settings.token?.reveal()}`
      : `app:${settings.app_id}:${settings.installation_id}:${settings.private_key?.reveal()}`;
  const hash = createHash('sha256').update(credential).digest('hex').slice(0, 16);
  return `${settings.api_url.replace(/\/+$/, '')}|${hash}|${settings.request_timeout}`;
}

/**
 * The instance's Octokit, made once per process and account and shared by every task: the throttling plugin paces
 * all of them together (one search every 2 s, one write a second, as GitHub asks), and an App's installation token
 * is reused until 5 minutes before it expires. Pass `request: {signal: context.signal}` with every call, and
 * `retries: 0` with every write that must not happen twice.
 */
export function githubClient(instance: ClientInstance): GithubClient {
  const key = accountKey(instance);
  const cached = clients.get(instance.name);
  if (cached?.key === key) return cached.octokit;
  const { settings } = instance;
  const timeoutMs = settings.request_timeout;
  const octokit = new GithubOctokit({
    baseUrl: settings.api_url.replace(/\/+$/, ''),
    userAgent: 'assistant-github-integration',
    ...(authMode(instance) === 'token'
      ? { auth: settings.token?.reveal() }
      : {
          authStrategy: createAppAuth,
          auth: {
            appId: settings.app_id,
            installationId: settings.installation_id,
            privateKey: settings.private_key?.reveal(),
            cache: installationTokenCache(),
          },
        }),
    request: {
      // Every request ends at request_timeout, whatever the caller's signal says.
      fetch: (url: string | URL, init?: RequestInit) =>
        fetch(url, {
          ...init,
          signal: init?.signal
            ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)])
            : AbortSignal.timeout(timeoutMs),
        }),
    },
    log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    throttle: {
      // A short wait is waited out; a longer one fails the request, and `callGithub` gives the task back to the
      // queue until the reset instead of holding a worker slot or asking again before it.
      onRateLimit: (retryAfter: number, _options: unknown, _octokit: unknown, retryCount: number) =>
        retryAfter <= inlineWaitLimitSeconds && retryCount < 1,
      onSecondaryRateLimit: (retryAfter: number, _options: unknown, _octokit: unknown, retryCount: number) =>
        retryAfter <= inlineWaitLimitSeconds && retryCount < 1,
    },
    // Server errors are retried twice (1 s, 4 s) by the retry plugin; then the task's own backoff takes over.
    retry: { retries: 2 },
  });
  clients.set(instance.name, { key, octokit });
  return octokit;
}

/**
 * @octokit/auth-app's token cache keeps a token for 59 minutes whatever GitHub said; this one forgets it 5 minutes
 * before the `expires_at` GitHub gave, so a token is renewed before it runs out, never after a 401.
 */
function installationTokenCache() {
  const entries = new Map<string, string>();
  return {
    async get(key: string): Promise<string | undefined> {
      const value = entries.get(key);
      // The cached value is `token|createdAt|expiresAt|…` (auth-app's format).
      const expiresAt = Date.parse(value?.split('|')[2] ?? '');
      if (value === undefined || Number.isNaN(expiresAt) || expiresAt - Date.now() < tokenRenewalMarginMs) {
        entries.delete(key);
        return undefined;
      }
      return value;
    },
    async set(key: string, value: string): Promise<void> {
      entries.set(key, value);
    },
  };
}

/**
 * The login whose review requests, assignments and mentions count: `user` from the settings, else the token's own
 * user (`GET /user`, asked once per process). A GitHub App has no user of its own, so it needs `user`.
 */
export async function ownerLogin(instance: ClientInstance, signal?: AbortSignal): Promise<string> {
  if (instance.settings.user) return instance.settings.user;
  if (authMode(instance) === 'app') {
    throw new UnrecoverableError(
      `github instance ${instance.name} authenticates as a GitHub App, which has no user of its own: set \`user\` to your login`,
    );
  }
  const octokit = githubClient(instance);
  const entry = clients.get(instance.name);
  if (!entry) throw new Error('unreachable: githubClient caches every client');
  entry.login ??= octokit.rest.users.getAuthenticated({ request: signal ? { signal } : {} }).then(
    (response) => response.data.login,
    (error: unknown) => {
      entry.login = undefined;
      throw error;
    },
  );
  return callGithub({ instance, signal }, () => entry.login as Promise<string>);
}

/**
 * The status and headers of GitHub's reply to a failed request, or undefined when there was no reply: Octokit reports
 * a network error (refused, reset, timed out) as a RequestError with status 500 and no `response`.
 */
function replyOf(error: unknown): { status: number; headers: Record<string, string | undefined> } | undefined {
  if (typeof error !== 'object' || error === null || !('status' in error)) return undefined;
  const status = (error as { status: unknown }).status;
  const response = (error as { response?: { headers?: Record<string, string | undefined> } }).response;
  if (typeof status !== 'number' || status < 100 || typeof response !== 'object' || response === null) return undefined;
  return { status, headers: response.headers ?? {} };
}

/** The system error code somewhere in an error's causes (`ECONNREFUSED` under fetch's TypeError under Octokit's). */
function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && typeof current === 'object' && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * When a rate-limited reply allows the next request, in epoch ms, or undefined when the error is not a rate limit:
 * `retry-after` (seconds), else `x-ratelimit-reset` (epoch seconds) when `x-ratelimit-remaining` is 0, else a minute
 * for a secondary rate limit that names no time.
 */
export function rateLimitResetMs(error: unknown, nowMs = Date.now()): number | undefined {
  const reply = replyOf(error);
  if (!reply || (reply.status !== 403 && reply.status !== 429)) return undefined;
  const retryAfter = Number(reply.headers['retry-after']);
  if (reply.headers['retry-after'] !== undefined && Number.isFinite(retryAfter)) {
    return nowMs + Math.max(1, retryAfter) * 1000;
  }
  if (reply.headers['x-ratelimit-remaining'] === '0') {
    const reset = Number(reply.headers['x-ratelimit-reset']) * 1000;
    // One second past the reset, as GitHub advises; a reset in the past still waits that second.
    return Number.isFinite(reset) ? Math.max(reset, nowMs) + 1000 : nowMs + secondaryFallbackMs;
  }
  const message = error instanceof Error ? error.message : '';
  if (reply.status === 429 || /rate limit/i.test(message)) return nowMs + secondaryFallbackMs;
  return undefined;
}

/** `GitHub GET /repos/o/r/pulls/1: 404 Not Found`: what a failed request was and what GitHub said. */
export function describeGithubError(error: unknown): string {
  const request = (error as { request?: { method?: string; url?: string } }).request;
  const where = request?.url ? ` ${request.method ?? ''} ${new URL(request.url).pathname}`.replace(/ {2}/, ' ') : '';
  const reply = replyOf(error);
  const message = error instanceof Error ? error.message : String(error);
  const network = networkCode(error);
  return `GitHub${where}: ${reply ? `${reply.status} ` : ''}${message}${!reply && network && !message.includes(network) ? ` (${network})` : ''}`;
}

/** Throws DelayedError when the instance's account is rate limited: nothing is sent to GitHub before the reset. */
export function assertNotRateLimited(instance: ClientInstance, nowMs = Date.now()): void {
  const until = limitedUntil.get(accountKey(instance));
  if (until !== undefined && until > nowMs) {
    throw new DelayedError(until, `GitHub rate limit: waiting until ${new Date(until).toISOString()}`);
  }
}

/** Records a rate limit seen on a reply, so that no task of this account asks GitHub again before it resets. */
export function noteRateLimit(instance: ClientInstance, untilMs: number): void {
  const key = accountKey(instance);
  limitedUntil.set(key, Math.max(limitedUntil.get(key) ?? 0, untilMs));
}

/**
 * One or more GitHub calls for a task, with the errors a task should see: a rate limit (now or known from an earlier
 * reply) becomes DelayedError until the reset, so the task waits without spending an attempt and nothing is sent
 * before then; a server error or an unreachable GitHub becomes RetryableError (the task's backoff, then the next
 * check finds the item again); a 401 is a configuration problem (UnrecoverableError, with what to check). Other
 * replies (404, 422) are thrown as they are, for the caller to handle.
 */
export async function callGithub<T>(
  context: { instance: ClientInstance; signal?: AbortSignal | undefined },
  call: (octokit: GithubClient) => Promise<T>,
): Promise<T> {
  const { instance } = context;
  assertNotRateLimited(instance);
  try {
    return await call(githubClient(instance));
  } catch (error) {
    if (error instanceof DelayedError || error instanceof UnrecoverableError) throw error;
    if (context.signal?.aborted) throw error;
    const resetMs = rateLimitResetMs(error);
    if (resetMs !== undefined) {
      noteRateLimit(instance, resetMs);
      throw new DelayedError(
        resetMs,
        `${describeGithubError(error)}; waiting until ${new Date(resetMs).toISOString()}`,
      );
    }
    const reply = replyOf(error);
    if (reply?.status === 401) {
      throw new UnrecoverableError(
        `${describeGithubError(error)}: check the instance's ${authMode(instance) === 'token' ? '`token` (expired or revoked?)' : 'App `app_id`, `installation_id` and `private_key`'}`,
        { cause: error },
      );
    }
    if (!reply || reply.status >= 500) throw new RetryableError(describeGithubError(error), { cause: error });
    throw error;
  }
}

/** While GitHub is unreachable or failing, a task that must not be lost waits this long at a time. */
const outageRetryMs = 60_000;

/**
 * For an act task, whose actions are recorded as taken when it is enqueued (no later check asks for them again): a
 * RetryableError from `callGithub` (GitHub unreachable or answering 5xx) becomes a DelayedError a minute on, so the
 * task waits out an outage without spending its attempts, for up to a day after it was enqueued. Undefined for any
 * other error, and after that day.
 */
export function outageDelay(error: unknown, enqueuedAt: string, nowMs = Date.now()): DelayedError | undefined {
  if (!(error instanceof RetryableError)) return undefined;
  return waitOutOutage(
    { createdAt: enqueuedAt },
    nowMs + outageRetryMs,
    `${error.message}; trying again in a minute`,
    nowMs,
  );
}

/**
 * `callGithub` for a task no later check enqueues again (an act task, a service call): an outage is waited out a
 * minute at a time (`outageDelay`) and what GitHub refuses for good fails the task at once, saying what (`what`).
 */
export async function callGithubPatiently<T>(
  context: { instance: ClientInstance; signal?: AbortSignal | undefined; task: { createdAt: string } },
  what: string,
  call: (octokit: GithubClient) => Promise<T>,
): Promise<T> {
  try {
    return await callGithub(context, call);
  } catch (error) {
    throw outageDelay(error, context.task.createdAt) ?? refusedError(error, what) ?? error;
  }
}

/** Whether an error is a GitHub reply with this status (`isStatus(error, 404)`). */
export function isStatus(error: unknown, status: number): boolean {
  return replyOf(error)?.status === status;
}

/**
 * A 4xx reply to a write GitHub refuses for good (no permission, no such item, invalid input: 403, 404, 410, 422), as
 * UnrecoverableError saying what was refused; undefined for anything else. Asking again would get the same answer.
 */
export function refusedError(error: unknown, what: string): UnrecoverableError | undefined {
  const status = replyOf(error)?.status;
  if (status === undefined || status < 400 || status >= 500 || status === 429) return undefined;
  return new UnrecoverableError(`${what}: ${describeGithubError(error)}`, { cause: error });
}

/**
 * For an irreversible write inside `actOnce`: the error as ActionNotTakenError when GitHub certainly did nothing (it
 * answered with a 4xx, or the connection was refused before anything was sent), with the time to try again for a
 * rate limit or an unreachable GitHub; undefined when the request may have been carried out (a timeout, a reset
 * connection, a 5xx), which `actOnce` must record as possibly done.
 */
export function notTakenError(instance: ClientInstance, error: unknown): ActionNotTakenError | undefined {
  const reply = replyOf(error);
  const resetMs = rateLimitResetMs(error);
  if (resetMs !== undefined) {
    noteRateLimit(instance, resetMs);
    return new ActionNotTakenError(describeGithubError(error), { cause: error, retryAtMs: resetMs });
  }
  if (reply && reply.status >= 400 && reply.status < 500) {
    return new ActionNotTakenError(describeGithubError(error), { cause: error });
  }
  const code = networkCode(error);
  if (!reply && (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN')) {
    return new ActionNotTakenError(describeGithubError(error), { cause: error, retryAtMs: Date.now() + 60_000 });
  }
  return undefined;
}

/** Forgets every cached client and rate limit: for tests that start a fresh fake GitHub on the same instance name. */
export function resetGithubClients(): void {
  clients.clear();
  limitedUntil.clear();
}

import { ActionNotTakenError, DelayedError, RetryableError, type Secret, UnrecoverableError } from '@assistant/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ClientInstance,
  callGithub,
  githubClient,
  notTakenError,
  outageDelay,
  rateLimitResetMs,
  refusedError,
  resetGithubClients,
} from './client.ts';
import { FakeGithub } from './testing/fake-github.ts';

/** A secret as config.yaml's `!secret` gives it, for settings built by hand. */
function secret(value: string): Secret {
  return { name: 'test', reveal: () => value, isSet: value !== '' } as unknown as Secret;
}

function instance(github: FakeGithub, auth: 'token' | 'app', name = 'work'): ClientInstance {
  const base = { api_url: github.apiUrl, orgs: [], repos: [], limit: 200, comments: 5, request_timeout: 10_000 };
  return {
    name,
    settings:
      auth === 'token'
        ? { ...base, token: secret(github.token) }
        : {
            ...base,
            user: 'octo-owner',
            app_id: github.app?.appId ?? 0,
            installation_id: github.app?.installationId ?? 0,
            private_key: secret(github.app?.privateKey ?? ''),
          },
  };
}

const rateLimit = (call: ClientInstance) =>
  callGithub({ instance: call }, (octokit) =>
    octokit.rest.issues.get({ owner: 'acme', repo: 'widgets', issue_number: 1 }),
  );

afterEach(() => resetGithubClients());

describe('the GitHub client', () => {
  it("reuses a GitHub App's installation token until five minutes before it expires", async () => {
    await using lasting = await FakeGithub.start({ app: { appId: 1, installationId: 2 } });
    lasting.addIssue({ owner: 'acme', repo: 'widgets', number: 1, title: 'One', user: 'bob' });
    const app = instance(lasting, 'app');
    for (let call = 0; call < 3; call += 1) await rateLimit(app);
    expect(lasting.tokensIssued).toBe(1);

    // A token that expires in four minutes is inside the renewal margin: each request gets a fresh one.
    await using brief = await FakeGithub.start({ app: { appId: 1, installationId: 2, tokenLifetimeMs: 4 * 60_000 } });
    brief.addIssue({ owner: 'acme', repo: 'widgets', number: 1, title: 'One', user: 'bob' });
    const renewing = instance(brief, 'app', 'other');
    await rateLimit(renewing);
    await rateLimit(renewing);
    expect(brief.tokensIssued).toBe(2);
  });

  it('gives a task back until the reset of a long rate limit, and sends nothing before then', async () => {
    await using github = await FakeGithub.start();
    github.addIssue({ owner: 'acme', repo: 'widgets', number: 1, title: 'One', user: 'bob' });
    const reset = Math.ceil(Date.now() / 1000) + 600;
    github.failNext(
      { path: '/repos/acme/widgets/issues/1' },
      {
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
        body: { message: 'API rate limit exceeded' },
      },
    );
    const work = instance(github, 'token');
    const first = await rateLimit(work).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(DelayedError);
    expect((first as DelayedError).untilMs).toBe(reset * 1000 + 1000);
    const sent = github.requests.length;
    // Another task of the same account waits too, without asking GitHub.
    await expect(rateLimit(work)).rejects.toBeInstanceOf(DelayedError);
    expect(github.requests.length).toBe(sent);
  });

  it('reads retry-after and secondary limits, and fails a refused token as a configuration problem', async () => {
    const reply = (status: number, headers: Record<string, string>, message = '') =>
      Object.assign(new Error(message), { status, response: { headers } });
    expect(rateLimitResetMs(reply(429, { 'retry-after': '30' }), 1_000)).toBe(31_000);
    expect(rateLimitResetMs(reply(403, {}, 'You have exceeded a secondary rate limit'), 0)).toBe(60_000);
    expect(rateLimitResetMs(reply(403, {}, 'Resource not accessible by integration'), 0)).toBeUndefined();
    expect(rateLimitResetMs(reply(404, {}), 0)).toBeUndefined();
    // A write GitHub refuses for good fails at once; a server error or a rate limit does not.
    expect(refusedError(reply(422, {}, 'Validation Failed'), 'label')?.message).toBe(
      'label: GitHub: 422 Validation Failed',
    );
    expect(refusedError(reply(502, {}), 'label')).toBeUndefined();
    expect(refusedError(reply(429, {}), 'label')).toBeUndefined();
    expect(refusedError(new Error('fetch failed'), 'label')).toBeUndefined();

    await using github = await FakeGithub.start();
    const wrong = instance(github, 'token');
    wrong.settings.token = secret('ghp_wrong');
    const refused = await rateLimit(wrong).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnrecoverableError);
    expect((refused as Error).message).toMatch(/401 Bad credentials.*check the instance's `token`/);
  });

  it('tells an unreachable GitHub from a reply, for retries and for what was certainly not done', async () => {
    const closed = await FakeGithub.start();
    const unreachable = instance(closed, 'token');
    await closed.close();
    const get = (work: ClientInstance) =>
      githubClient(work).rest.issues.get({ owner: 'a', repo: 'b', issue_number: 1, request: { retries: 0 } });
    // Refused: nothing was sent, so an irreversible write may be tried again, after a minute.
    const refused = await get(unreachable).catch((error: unknown) => error);
    const notTaken = notTakenError(unreachable, refused);
    expect(notTaken).toBeInstanceOf(ActionNotTakenError);
    expect(notTaken?.retryAtMs).toBeGreaterThan(Date.now());
    expect(notTaken?.message).toMatch(/ECONNREFUSED/);
    // For other tasks it is an outage: retried, and an act task waits it out without spending attempts.
    const failed = await callGithub({ instance: unreachable }, () => get(unreachable)).catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(RetryableError);
    const now = Date.parse('2026-11-26T12:00:00Z');
    expect(outageDelay(failed, '2026-11-26T11:00:00Z', now)?.untilMs).toBe(now + 60_000);
    expect(outageDelay(failed, '2026-11-25T11:00:00Z', now)).toBeUndefined();
    expect(outageDelay(new Error('a bug'), '2026-11-26T11:00:00Z', now)).toBeUndefined();

    // A 5xx reply may have done the write; a 4xx certainly did not.
    await using github = await FakeGithub.start();
    const work = instance(github, 'token', 'replies');
    github.failNext({ path: '/repos/a/b/issues/1' }, { status: 502, body: { message: 'Bad Gateway' } });
    expect(notTakenError(work, await get(work).catch((error: unknown) => error))).toBeUndefined();
    const missing = notTakenError(work, await get(work).catch((error: unknown) => error));
    expect(missing).toBeInstanceOf(ActionNotTakenError);
    expect(missing?.retryAtMs).toBeUndefined();
  });
});

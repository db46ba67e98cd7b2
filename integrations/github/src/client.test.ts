import { DelayedError, type Secret, UnrecoverableError } from '@assistant/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { type ClientInstance, callGithub, rateLimitResetMs, resetGithubClients } from './client.ts';
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

    await using github = await FakeGithub.start();
    const wrong = instance(github, 'token');
    wrong.settings.token = secret('ghp_wrong');
    const refused = await rateLimit(wrong).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(UnrecoverableError);
    expect((refused as Error).message).toMatch(/401 Bad credentials.*check the instance's `token`/);
  });
});

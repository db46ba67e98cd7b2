import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createAppAuth } from '@octokit/auth-app';
import { Octokit } from '@octokit/rest';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeGithub, signWebhook } from './fake-github.ts';

const examples = JSON.parse(readFileSync(new URL('./examples/rest.json', import.meta.url), 'utf8')).examples as Record<
  string,
  Record<string, unknown>
>;

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** The status of a rejected Octokit call (a RequestError), or a failure when the call did not reject. */
async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
  } catch (error) {
    return (error as { status: number }).status;
  }
  throw new Error('expected the request to fail');
}

describe('FakeGithub', () => {
  let fake: FakeGithub;
  let octokit: Octokit;

  beforeEach(async () => {
    fake = await FakeGithub.start();
    octokit = new Octokit({ baseUrl: fake.apiUrl, auth: fake.token, log: quiet });
  });

  afterEach(async () => {
    await fake.close();
  });

  it('answers GET /user with the token owner', async () => {
    const { data, headers } = await octokit.rest.users.getAuthenticated();
    expect(data.login).toBe('octo-owner');
    expect(headers['x-ratelimit-resource']).toBe('core');
    expect(headers['x-ratelimit-limit']).toBe('5000');
  });

  it('refuses a wrong token with 401 Bad credentials', async () => {
    const stranger = new Octokit({ baseUrl: fake.apiUrl, auth: 'ghp_wrong', log: quiet });
    await expect(stranger.rest.users.getAuthenticated()).rejects.toMatchObject({
      status: 401,
      response: { data: { message: 'Bad credentials' } },
    });
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/user', status: 401 });
  });

  it('searches with OR groups, org and repo scoping, and paginates with Link headers', async () => {
    const me = fake.user;
    fake.addPull({
      owner: 'acme',
      repo: 'app',
      number: 1,
      title: 'review me',
      user: 'alice',
      requested_reviewers: [me],
    });
    fake.addPull({ owner: 'acme', repo: 'app', number: 2, title: 'assigned', user: 'bob', assignees: [me] });
    fake.addIssue({ owner: 'acme', repo: 'lib', number: 3, title: 'mention', user: 'carol', body: `cc @${me}` });
    fake.addPull({ owner: 'other', repo: 'x', number: 4, title: 'elsewhere', user: 'dave', requested_reviewers: [me] });
    fake.addPull({
      owner: 'acme',
      repo: 'app',
      number: 5,
      title: 'closed',
      user: 'erin',
      state: 'closed',
      assignees: [me],
    });
    fake.addComment('acme', 'app', 2, { user: 'bob', body: 'ping' });

    const q = `(review-requested:${me} OR assignee:${me} OR mentions:${me}) org:ACME is:open archived:false`;
    const items = await octokit.paginate(octokit.rest.search.issuesAndPullRequests, {
      q,
      sort: 'updated',
      order: 'desc',
      per_page: 2,
    });
    // #2 was commented on last, so it is the most recently updated.
    expect(items.map((item) => item.number)).toEqual([2, expect.any(Number), expect.any(Number)]);
    expect(items.map((item) => item.number).sort()).toEqual([1, 2, 3]);
    expect(items.find((item) => item.number === 1)?.pull_request?.html_url).toBe('https://github.test/acme/app/pull/1');
    expect(items.find((item) => item.number === 3)?.pull_request).toBeUndefined();

    const first = await octokit.rest.search.issuesAndPullRequests({ q, per_page: 2 });
    expect(first.data.total_count).toBe(3);
    expect(first.headers['x-ratelimit-resource']).toBe('search');
    expect(first.headers.link).toContain('rel="next"');
    expect(first.headers.link).toContain('rel="last"');

    const repoOnly = await octokit.rest.search.issuesAndPullRequests({ q: `repo:acme/LIB is:issue mentions:${me}` });
    expect(repoOnly.data.items.map((item) => item.number)).toEqual([3]);
    const prsOnly = await octokit.rest.search.issuesAndPullRequests({ q: `is:pr author:dave user:other` });
    expect(prsOnly.data.items.map((item) => item.number)).toEqual([4]);
  });

  it('answers an unknown search qualifier with 422 Validation Failed', async () => {
    await expect(octokit.rest.search.issuesAndPullRequests({ q: 'is:pr frobnicate:yes' })).rejects.toMatchObject({
      status: 422,
      response: { data: { message: 'Validation Failed' } },
    });
  });

  it('answers a GET with a matching If-None-Match with 304, which Octokit throws', async () => {
    fake.addPull({ owner: 'o', repo: 'r', number: 7, title: 'Fix', user: 'alice' });
    const first = await octokit.rest.pulls.get({ owner: 'o', repo: 'r', pull_number: 7 });
    const etag = first.headers.etag;
    expect(etag).toMatch(/^W\/"[0-9a-f]{64}"$/);
    const remaining = Number(first.headers['x-ratelimit-remaining']);
    const status = await statusOf(
      octokit.rest.pulls.get({ owner: 'o', repo: 'r', pull_number: 7, headers: { 'if-none-match': etag } }),
    );
    expect(status).toBe(304);
    expect(fake.requests.at(-1)).toMatchObject({ status: 304, ifNoneMatch: etag });
    // A change gives a new ETag and a full answer.
    fake.update('o', 'r', 7, { title: 'Fix it' });
    const changed = await octokit.rest.pulls.get({
      owner: 'o',
      repo: 'r',
      pull_number: 7,
      headers: { 'if-none-match': etag },
    });
    expect(changed.data.title).toBe('Fix it');
    expect(Number(changed.headers['x-ratelimit-remaining'])).toBe(remaining - 1);
  });

  it("gives a pull the keys of GitHub's documented example and the fake's values", async () => {
    fake.addPull({
      owner: 'o',
      repo: 'r',
      number: 7,
      title: 'Fix',
      user: 'alice',
      labels: ['bug'],
      requested_reviewers: ['bob'],
      head_ref: 'fix',
      head_sha: 'a'.repeat(40),
      draft: true,
    });
    const { data } = await octokit.rest.pulls.get({ owner: 'o', repo: 'r', pull_number: 7 });
    const example = examples['GET /repos/{owner}/{repo}/pulls/{pull_number} 200'] ?? {};
    expect(Object.keys(data)).toEqual(Object.keys(example));
    expect(data).toMatchObject({
      number: 7,
      title: 'Fix',
      user: { login: 'alice' },
      state: 'open',
      draft: true,
      merged: false,
      head: { ref: 'fix', sha: 'a'.repeat(40), repo: { full_name: 'o/r' } },
      base: { ref: 'main' },
      requested_reviewers: [{ login: 'bob' }],
      labels: [{ name: 'bug', color: 'ededed', default: false, description: null }],
      html_url: 'https://github.test/o/r/pull/7',
      url: `${fake.apiUrl}/repos/o/r/pulls/7`,
    });
    const issue = await octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 7 });
    expect(issue.data.pull_request?.html_url).toBe('https://github.test/o/r/pull/7');
    fake.addIssue({ owner: 'o', repo: 'r', number: 8, title: 'Bug', user: 'carol' });
    expect(await statusOf(octokit.rest.pulls.get({ owner: 'o', repo: 'r', pull_number: 8 }))).toBe(404);
  });

  it('adds and removes labels, bumping updated_at each time', async () => {
    const item = fake.addIssue({ owner: 'o', repo: 'r', number: 1, title: 'Bug', user: 'alice', labels: ['bug'] });
    const before = item.updated_at;
    const added = await octokit.rest.issues.addLabels({
      owner: 'o',
      repo: 'r',
      issue_number: 1,
      labels: ['bug', 'p1'],
    });
    expect(added.data.map((label) => label.name)).toEqual(['bug', 'p1']);
    const afterAdd = item.updated_at;
    expect(Date.parse(afterAdd)).toBeGreaterThan(Date.parse(before));
    expect(afterAdd).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const removed = await octokit.rest.issues.removeLabel({ owner: 'o', repo: 'r', issue_number: 1, name: 'bug' });
    expect(removed.data.map((label) => label.name)).toEqual(['p1']);
    expect(Date.parse(item.updated_at)).toBeGreaterThan(Date.parse(afterAdd));
    await expect(
      octokit.rest.issues.removeLabel({ owner: 'o', repo: 'r', issue_number: 1, name: 'bug' }),
    ).rejects.toMatchObject({ status: 404, response: { data: { message: 'Label does not exist' } } });
    expect(fake.writes().map((request) => request.method)).toEqual(['POST', 'DELETE', 'DELETE']);
  });

  it('refuses a merge on a stale sha with 409 and merges on the head sha', async () => {
    const item = fake.addPull({ owner: 'o', repo: 'r', number: 7, title: 'Fix', user: 'alice' });
    const stale = item.head_sha;
    fake.update('o', 'r', 7, { head_sha: 'b'.repeat(40) });
    await expect(octokit.rest.pulls.merge({ owner: 'o', repo: 'r', pull_number: 7, sha: stale })).rejects.toMatchObject(
      {
        status: 409,
        response: { data: { message: 'Head branch was modified. Review and try the merge again.' } },
      },
    );
    const merged = await octokit.rest.pulls.merge({
      owner: 'o',
      repo: 'r',
      pull_number: 7,
      sha: 'b'.repeat(40),
      merge_method: 'squash',
    });
    expect(merged.data).toMatchObject({ merged: true, message: 'Pull Request successfully merged' });
    expect(item).toMatchObject({ merged: true, state: 'closed', merge_method: 'squash' });
    const { data } = await octokit.rest.pulls.get({ owner: 'o', repo: 'r', pull_number: 7 });
    expect(data.merged_at).not.toBeNull();
    expect(data.merged_by?.login).toBe(fake.user);
    expect(await statusOf(octokit.rest.pulls.merge({ owner: 'o', repo: 'r', pull_number: 7 }))).toBe(405);
  });

  it('posts and lists comments, oldest first, paginated', async () => {
    fake.addIssue({ owner: 'o', repo: 'r', number: 3, title: 'Question', user: 'alice' });
    fake.addComment('o', 'r', 3, { user: 'alice', body: 'first' });
    const posted = await octokit.rest.issues.createComment({ owner: 'o', repo: 'r', issue_number: 3, body: 'second' });
    expect(posted.status).toBe(201);
    expect(posted.data).toMatchObject({ body: 'second', user: { login: fake.user } });
    const page = await octokit.rest.issues.listComments({ owner: 'o', repo: 'r', issue_number: 3, per_page: 1 });
    expect(page.headers.link).toContain('rel="next"');
    const all = await octokit.paginate(octokit.rest.issues.listComments, {
      owner: 'o',
      repo: 'r',
      issue_number: 3,
      per_page: 1,
    });
    expect(all.map((comment) => comment.body)).toEqual(['first', 'second']);
    const { data } = await octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 3 });
    expect(data.comments).toBe(2);
  });

  it('reports check runs and the combined status of a commit', async () => {
    const item = fake.addPull({ owner: 'o', repo: 'r', number: 7, title: 'Fix', user: 'alice' });
    const sha = item.head_sha;
    const none = await octokit.rest.repos.getCombinedStatusForRef({ owner: 'o', repo: 'r', ref: sha });
    expect(none.data).toMatchObject({ state: 'pending', total_count: 0, statuses: [] });
    fake.setChecks('o', 'r', sha, {
      check_runs: [{ name: 'ci', status: 'completed', conclusion: 'success' }],
      statuses: [
        { context: 'lint', state: 'success' },
        { context: 'deploy', state: 'failure' },
      ],
    });
    const runs = await octokit.rest.checks.listForRef({ owner: 'o', repo: 'r', ref: sha });
    expect(runs.data.total_count).toBe(1);
    expect(runs.data.check_runs[0]).toMatchObject({ name: 'ci', conclusion: 'success', head_sha: sha });
    expect(runs.data.check_runs[0]?.pull_requests[0]?.number).toBe(7);
    const status = await octokit.rest.repos.getCombinedStatusForRef({ owner: 'o', repo: 'r', ref: sha });
    expect(status.data).toMatchObject({ state: 'failure', total_count: 2, sha });
  });

  it('answers with a scripted failure, then serves normally', async () => {
    const resetSeconds = Math.floor(Date.now() / 1000) + 60;
    fake.failNext(
      { method: 'GET', path: /^\/search\/issues$/ },
      {
        status: 403,
        headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(resetSeconds) },
        body: { message: 'API rate limit exceeded for user ID 1.' },
      },
    );
    await expect(octokit.rest.search.issuesAndPullRequests({ q: 'is:pr' })).rejects.toMatchObject({
      status: 403,
      response: { headers: { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(resetSeconds) } },
    });
    const { status } = await octokit.rest.search.issuesAndPullRequests({ q: 'is:pr' });
    expect(status).toBe(200);
  });

  it('creates an issue numbered after the highest in the repository', async () => {
    fake.addIssue({ owner: 'o', repo: 'r', number: 41, title: 'Old', user: 'alice' });
    const { status, data } = await octokit.rest.issues.create({ owner: 'o', repo: 'r', title: 'New', labels: ['x'] });
    expect(status).toBe(201);
    expect(data).toMatchObject({ number: 42, title: 'New', user: { login: fake.user }, labels: [{ name: 'x' }] });
    expect(fake.item('o', 'r', 42).title).toBe('New');
  });

  it('builds a webhook delivery that names the item, and signs it as GitHub does', () => {
    const item = fake.addPull({ owner: 'acme', repo: 'app', number: 9, title: 'Fix', user: 'alice' });
    const opened = fake.delivery('pull_request.opened', { owner: 'acme', repo: 'app', number: 9 });
    expect(opened.event).toBe('pull_request');
    const payload = JSON.parse(opened.body);
    expect(payload).toMatchObject({
      action: 'opened',
      number: 9,
      repository: { full_name: 'acme/app', name: 'app', owner: { login: 'acme' } },
      pull_request: { number: 9, title: 'Fix', head: { sha: item.head_sha } },
      sender: { login: 'alice' },
    });
    const checkRun = JSON.parse(fake.delivery('check_run.completed', { owner: 'acme', repo: 'app', number: 9 }).body);
    expect(checkRun.check_run.head_sha).toBe(item.head_sha);
    expect(checkRun.check_run.pull_requests[0].number).toBe(9);
    const expected = `sha256=${createHmac('sha256', 'secret').update(opened.body).digest('hex')}`;
    expect(signWebhook('secret', opened.body)).toBe(expected);
  });
});

describe('FakeGithub as a GitHub App', () => {
  it('issues one installation token and reuses it; the App posts as its bot', async () => {
    await using fake = await FakeGithub.start({ app: { appId: 123, installationId: 456 } });
    const app = fake.app;
    if (!app) throw new Error('expected the fake to act as an App');
    const octokit = new Octokit({
      baseUrl: fake.apiUrl,
      log: quiet,
      authStrategy: createAppAuth,
      auth: { appId: app.appId, installationId: app.installationId, privateKey: app.privateKey },
    });
    fake.addIssue({ owner: 'o', repo: 'r', number: 1, title: 'Bug', user: 'alice' });
    await octokit.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 1 });
    const comment = await octokit.rest.issues.createComment({ owner: 'o', repo: 'r', issue_number: 1, body: 'hi' });
    expect(fake.tokensIssued).toBe(1);
    expect(comment.data.user?.login).toMatch(/\[bot\]$/);
    expect(await statusOf(octokit.rest.users.getAuthenticated())).toBe(403);
    // A JWT signed with another key is refused.
    const { privateKey: otherKey } = await FakeGithub.start({ app: { appId: 123, installationId: 456 } }).then(
      async (other) => {
        await other.close();
        return other.app ?? { privateKey: '' };
      },
    );
    const impostor = new Octokit({
      baseUrl: fake.apiUrl,
      log: quiet,
      authStrategy: createAppAuth,
      auth: { appId: 123, installationId: 456, privateKey: otherKey },
    });
    expect(await statusOf(impostor.rest.issues.get({ owner: 'o', repo: 'r', issue_number: 1 }))).toBe(401);
    expect(fake.tokensIssued).toBe(1);
  });
});

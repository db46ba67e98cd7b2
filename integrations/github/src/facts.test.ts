import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { searchQuery } from './check.ts';
import {
  combinedChecks,
  fieldNames,
  type GithubPullData,
  itemFacts,
  itemNoteBody,
  mentions,
  reviewDecision,
} from './facts.ts';
import rest from './testing/examples/rest.json' with { type: 'json' };
import webhooks from './testing/examples/webhooks.json' with { type: 'json' };
import { deliveryTargets } from './webhook.ts';

const examples = rest.examples as Record<string, unknown>;

describe('item facts', () => {
  it('are the fields the manifest declares, for each platform', async () => {
    const manifest = parse(await readFile(new URL('../manifest.yaml', import.meta.url), 'utf8')) as {
      platforms: Record<string, { fields: Record<string, unknown> }>;
    };
    for (const platform of ['pull_requests', 'issues'] as const) {
      expect([...fieldNames[platform]].sort()).toEqual(Object.keys(manifest.platforms[platform]?.fields ?? {}).sort());
    }
  });

  it('reads a documented pull request into the fields automations test', () => {
    const pull = structuredClone(examples['GET /repos/{owner}/{repo}/pulls/{pull_number} 200']) as GithubPullData;
    pull.requested_reviewers = [{ login: 'Octo-Owner' }];
    pull.body = 'Please look, @octo-owner.\n\n```\nnot the end of the fence\n```';
    const facts = itemFacts(
      {
        platform: 'pull_requests',
        ref: { owner: 'Octocat', repo: 'Hello-World', number: pull.number },
        issue: pull,
        pull,
        comments: [{ user: { login: 'hubot' }, body: 'LGTM', created_at: '2026-11-01T00:00:00Z' }],
        reviews: [{ user: { login: 'lead' }, state: 'APPROVED', author_association: 'MEMBER' }],
        checkRuns: [{ status: 'completed', conclusion: 'success' }],
        statuses: [],
      },
      'octo-owner',
    );
    expect(facts).toMatchObject({
      repo: 'octocat/hello-world',
      number: pull.number,
      kind: 'pull',
      title: pull.title,
      author: pull.user?.login,
      review_requested: true,
      mentioned: true,
      authored_by_me: false,
      head_sha: pull.head.sha,
      head_ref: pull.head.ref,
      base_ref: pull.base.ref,
      review_decision: 'approved',
      checks: 'success',
      latest_comments: [{ author: 'hubot', at: '2026-11-01T00:00:00Z', text: 'LGTM' }],
    });
    // Strangers' text is fenced in the note with a fence longer than any inside it.
    const body = itemNoteBody(facts);
    expect(body).toContain('````text\nPlease look');
    expect(body).toContain('@hubot, 2026-11-01T00:00:00Z:');
  });

  it('changes the content hash for new text, not for labels or checks', () => {
    const pull = structuredClone(examples['GET /repos/{owner}/{repo}/pulls/{pull_number} 200']) as GithubPullData;
    const hash = (changed: GithubPullData, checks: 'success' | 'failure' = 'success') =>
      itemFacts(
        {
          platform: 'pull_requests',
          ref: { owner: 'o', repo: 'r', number: 1 },
          issue: changed,
          pull: changed,
          comments: [],
          checkRuns: [{ status: 'completed', conclusion: checks }],
        },
        'me',
      ).content_hash;
    const first = hash(pull);
    expect(hash({ ...pull, labels: [{ name: 'new' }] }, 'failure')).toBe(first);
    expect(hash({ ...pull, body: 'another text' })).not.toBe(first);
    expect(hash({ ...pull, additions: 9_999 })).not.toBe(first);
  });

  it('combines check runs and statuses, and reviews by people who can merge', () => {
    expect(combinedChecks([], [])).toBe('none');
    expect(combinedChecks([{ status: 'completed', conclusion: 'skipped' }], [{ state: 'success' }])).toBe('success');
    expect(combinedChecks([{ status: 'in_progress' }], [{ state: 'success' }])).toBe('pending');
    expect(combinedChecks([{ status: 'in_progress' }], [{ state: 'error' }])).toBe('failure');
    expect(combinedChecks([{ status: 'completed', conclusion: 'timed_out' }], [])).toBe('failure');
    const member = (login: string, state: string) => ({ user: { login }, state, author_association: 'MEMBER' });
    expect(reviewDecision([], [])).toBe('none');
    expect(reviewDecision([], ['me'])).toBe('review_required');
    expect(reviewDecision([member('a', 'CHANGES_REQUESTED'), member('a', 'APPROVED')], [])).toBe('approved');
    expect(reviewDecision([member('a', 'APPROVED'), member('b', 'CHANGES_REQUESTED')], [])).toBe('changes_requested');
    expect(reviewDecision([member('a', 'APPROVED'), member('a', 'COMMENTED')], [])).toBe('approved');
    expect(reviewDecision([{ user: { login: 'x' }, state: 'APPROVED', author_association: 'NONE' }], [])).toBe('none');
  });

  it('finds @mentions of the owner and no one else', () => {
    expect(mentions('thanks @Octo-Owner!', 'octo-owner')).toBe(true);
    expect(mentions('ask @octo-owner-bot', 'octo-owner')).toBe(false);
    expect(mentions('mail octo-owner@example.com', 'octo-owner')).toBe(false);
    expect(mentions('see acme/@octo-owner', 'octo-owner')).toBe(false);
  });
});

describe('the search query', () => {
  it("states the owner's qualifiers and the scope in GitHub's advanced syntax", () => {
    expect(
      searchQuery({
        platform: 'pull_requests',
        login: 'me',
        involves: ['review_requested', 'assigned', 'authored'],
        orgs: ['acme'],
        repos: ['me/dotfiles'],
      }),
    ).toBe(
      'is:pr is:open archived:false (review-requested:me OR assignee:me OR author:me) (org:acme OR repo:me/dotfiles)',
    );
    expect(searchQuery({ platform: 'issues', login: 'me', involves: ['mentioned'], orgs: [], repos: [] })).toBe(
      'is:issue is:open archived:false mentions:me',
    );
  });
});

describe('webhook deliveries', () => {
  const delivery = (name: string) => (webhooks.examples as Record<string, unknown>)[name] as never;
  it('names the item of each recorded delivery GitHub documents', () => {
    const opened = delivery('pull_request.opened') as {
      number: number;
      repository: { name: string; owner: { login: string } };
    };
    expect(deliveryTargets('pull_request', opened)).toEqual([
      {
        platform: 'pull_requests',
        ref: { owner: opened.repository.owner.login, repo: opened.repository.name, number: opened.number },
      },
    ]);
    const issue = deliveryTargets('issues', delivery('issues.opened'));
    expect(issue).toMatchObject([{ platform: 'issues' }]);
    expect(deliveryTargets('issue_comment', delivery('issue_comment.created'))).toHaveLength(1);
    expect(deliveryTargets('pull_request_review', delivery('pull_request_review.submitted'))).toMatchObject([
      { platform: 'pull_requests' },
    ]);
    expect(Array.isArray(deliveryTargets('check_run', delivery('check_run.completed')))).toBe(true);
    expect(deliveryTargets('push', delivery('push'))).toBe('push events do not name a pull request or an issue');
    expect(deliveryTargets('pull_request', {})).toBe('a pull_request delivery without a repository');
  });
});

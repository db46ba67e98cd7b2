import { createHash } from 'node:crypto';
import type { GithubPlatform, ItemRef } from './github-settings.ts';

/** What collect reads of a pull request or an issue, in GitHub's shapes (only the fields used here). */
export interface GithubUser {
  login: string;
}
export interface GithubLabel {
  name?: string;
}
export interface GithubIssueData {
  number: number;
  title: string;
  body?: string | null;
  html_url: string;
  user: GithubUser | null;
  author_association?: string;
  labels: (GithubLabel | string)[];
  assignees?: GithubUser[] | null;
  state: string;
  created_at: string;
  updated_at: string;
  comments?: number;
  pull_request?: unknown;
}
export interface GithubPullData extends GithubIssueData {
  draft?: boolean;
  merged?: boolean;
  merged_at?: string | null;
  requested_reviewers?: GithubUser[] | null;
  requested_teams?: { slug: string }[] | null;
  head: { ref: string; sha: string };
  base: { ref: string };
  additions?: number;
  deletions?: number;
  changed_files?: number;
  mergeable_state?: string;
}
export interface GithubComment {
  user: GithubUser | null;
  body?: string | null;
  created_at: string;
  html_url?: string;
}
export interface GithubReview {
  user: GithubUser | null;
  state: string;
  author_association?: string;
  submitted_at?: string | null;
}
export interface GithubCheckRun {
  status: string;
  conclusion?: string | null;
}
export interface GithubStatus {
  state: string;
}

/** One of the latest comments, as the note keeps it. */
export interface CommentExcerpt {
  author: string;
  at: string;
  text: string;
}

const bodyExcerptChars = 4_000;
const commentExcerptChars = 1_500;

/** The start of a text, cut at `max` characters with `…` when longer. */
function excerpt(text: string | null | undefined, max: number): string {
  const clean = (text ?? '').replace(/\r\n/g, '\n').trim();
  return clean.length <= max ? clean : `${clean.slice(0, max).trimEnd()}…`;
}

/** Whether a text mentions `@login` (GitHub's logins are case-insensitive; `@login-more` is someone else). */
export function mentions(text: string, login: string): boolean {
  if (!login) return false;
  const escaped = login.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_/-])@${escaped}(?![A-Za-z0-9-])`, 'i').test(text);
}

/**
 * From the latest review of each reviewer who can merge (owner, member, collaborator): changes_requested when one of
 * them asks for changes, approved when one approves, else review_required while reviews are requested, else none.
 */
export function reviewDecision(reviews: readonly GithubReview[], requested: readonly string[]): string {
  const latest = new Map<string, string>();
  for (const review of reviews) {
    const login = review.user?.login;
    if (!login || !['OWNER', 'MEMBER', 'COLLABORATOR'].includes(review.author_association ?? '')) continue;
    // A comment is not a verdict: it leaves the reviewer's earlier approval or request for changes standing.
    if (review.state === 'APPROVED' || review.state === 'CHANGES_REQUESTED' || review.state === 'DISMISSED') {
      latest.set(login.toLowerCase(), review.state);
    }
  }
  const verdicts = [...latest.values()];
  if (verdicts.includes('CHANGES_REQUESTED')) return 'changes_requested';
  if (verdicts.includes('APPROVED')) return 'approved';
  return requested.length > 0 ? 'review_required' : 'none';
}

const failedConclusions = new Set(['failure', 'timed_out', 'cancelled', 'action_required', 'startup_failure', 'stale']);

/**
 * The combined state of a commit's check runs and commit statuses: failure when any failed, else pending when any is
 * still running, else success when any passed, else none. (GitHub's combined status says `pending` for a commit with
 * no statuses at all: those count as none here.)
 */
export function combinedChecks(checkRuns: readonly GithubCheckRun[], statuses: readonly GithubStatus[]): string {
  const states = [
    ...checkRuns.map((run) =>
      run.status !== 'completed' ? 'pending' : failedConclusions.has(run.conclusion ?? '') ? 'failure' : 'success',
    ),
    ...statuses.map((status) =>
      status.state === 'error' || status.state === 'failure'
        ? 'failure'
        : status.state === 'pending'
          ? 'pending'
          : 'success',
    ),
  ];
  if (states.includes('failure')) return 'failure';
  if (states.includes('pending')) return 'pending';
  return states.includes('success') ? 'success' : 'none';
}

function labelNames(labels: readonly (GithubLabel | string)[]): string[] {
  return labels.map((label) => (typeof label === 'string' ? label : (label.name ?? ''))).filter(Boolean);
}

function logins(users: readonly GithubUser[] | null | undefined): string[] {
  return (users ?? []).map((user) => user.login);
}

/** Everything collect read about one item. */
export interface Collected {
  platform: GithubPlatform;
  ref: ItemRef;
  issue: GithubIssueData;
  pull?: GithubPullData;
  comments: readonly GithubComment[];
  reviews?: readonly GithubReview[];
  checkRuns?: readonly GithubCheckRun[];
  statuses?: readonly GithubStatus[];
}

/** An item's facts: the frontmatter of its note, the fields automations test, and what the classifier reads. */
export function itemFacts(collected: Collected, owner: string): Record<string, unknown> {
  const { issue, pull, ref } = collected;
  const author = issue.user?.login ?? '';
  const assignees = logins(issue.assignees);
  const latest: CommentExcerpt[] = collected.comments.map((comment) => ({
    author: comment.user?.login ?? '',
    at: comment.created_at,
    text: excerpt(comment.body, commentExcerptChars),
  }));
  const bodyExcerpt = excerpt(issue.body, bodyExcerptChars);
  const me = owner.toLowerCase();
  const facts: Record<string, unknown> = {
    repo: `${ref.owner}/${ref.repo}`.toLowerCase(),
    number: ref.number,
    kind: collected.platform === 'pull_requests' ? 'pull' : 'issue',
    url: issue.html_url,
    title: issue.title,
    author,
    author_association: issue.author_association ?? 'NONE',
    labels: labelNames(issue.labels),
    assignees,
    state: pull?.merged || pull?.merged_at ? 'merged' : issue.state,
    created_at: issue.created_at,
    updated_at: issue.updated_at,
    comments: issue.comments ?? collected.comments.length,
    assigned_to_me: assignees.some((login) => login.toLowerCase() === me),
    authored_by_me: author.toLowerCase() === me,
    mentioned: mentions(issue.body ?? '', owner) || latest.some((comment) => mentions(comment.text, owner)),
  };
  if (pull) {
    const requested = [...logins(pull.requested_reviewers), ...(pull.requested_teams ?? []).map((team) => team.slug)];
    Object.assign(facts, {
      requested_reviewers: requested,
      review_requested: requested.some((login) => login.toLowerCase() === me),
      draft: pull.draft ?? false,
      head_ref: pull.head.ref,
      base_ref: pull.base.ref,
      head_sha: pull.head.sha,
      additions: pull.additions ?? 0,
      deletions: pull.deletions ?? 0,
      changed_files: pull.changed_files ?? 0,
      mergeable_state: pull.mergeable_state ?? 'unknown',
      review_decision: reviewDecision(collected.reviews ?? [], requested),
      checks: combinedChecks(collected.checkRuns ?? [], collected.statuses ?? []),
    });
  }
  facts.body_excerpt = bodyExcerpt;
  facts.latest_comments = latest;
  // What the classifier reads (the text, and a pull request's size), and only that: a label, a check run or a review
  // does not ask the model again; automations test those fields themselves.
  facts.content_hash = createHash('sha256')
    .update(
      JSON.stringify([
        issue.title,
        bodyExcerpt,
        latest,
        pull ? [pull.additions, pull.deletions, pull.changed_files, pull.draft] : [],
      ]),
    )
    .digest('hex')
    .slice(0, 16);
  return facts;
}

/** The fields automations may test on both platforms, as the manifest declares them… */
const itemFields = [
  'repo',
  'number',
  'title',
  'author',
  'author_association',
  'labels',
  'assignees',
  'state',
  'created_at',
  'updated_at',
  'comments',
  'assigned_to_me',
  'authored_by_me',
  'mentioned',
] as const;

/** …and on each platform, a pull request's own after them. */
export const fieldNames: Record<GithubPlatform, readonly string[]> = {
  issues: itemFields,
  pull_requests: [
    ...itemFields,
    'requested_reviewers',
    'review_requested',
    'draft',
    'head_ref',
    'base_ref',
    'head_sha',
    'additions',
    'deletions',
    'changed_files',
    'mergeable_state',
    'review_decision',
    'checks',
  ],
};

/** A code fence longer than any run of backticks in the text, so nothing inside can close it. */
function fence(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((match) => match[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}text\n${text}\n${ticks}`;
}

/**
 * The note's body for people: the title, a line of facts, and the description and latest comments in code fences
 * (written by strangers: shown as text, never as markdown that could render links or images).
 */
export function itemNoteBody(facts: Record<string, unknown>): string {
  const kind = facts.kind === 'pull' ? 'Pull request' : 'Issue';
  const lines = [
    `# ${String(facts.title ?? '').replace(/\s+/g, ' ')}`,
    '',
    `${kind} ${String(facts.repo)}#${String(facts.number)} by @${String(facts.author)}, ${String(facts.state)}: <${String(facts.url)}>`,
  ];
  if (facts.kind === 'pull') {
    lines.push(
      '',
      `${String(facts.head_ref)} → ${String(facts.base_ref)} at ${String(facts.head_sha).slice(0, 12)}: +${String(facts.additions)} −${String(facts.deletions)} in ${String(facts.changed_files)} files; checks ${String(facts.checks)}, review ${String(facts.review_decision)}, ${String(facts.mergeable_state)}`,
    );
  }
  lines.push('', '## Description', '', fence(String(facts.body_excerpt ?? '') || '(empty)'));
  const comments = (facts.latest_comments ?? []) as CommentExcerpt[];
  if (comments.length > 0) {
    lines.push('', `## Latest comments (${comments.length} of ${String(facts.comments)})`);
    for (const comment of comments) lines.push('', `@${comment.author}, ${comment.at}:`, '', fence(comment.text));
  }
  return `${lines.join('\n')}\n`;
}

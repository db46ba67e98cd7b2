import { createHash, createHmac, generateKeyPairSync, type KeyObject, randomBytes, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { z } from 'zod';

/** Options of {@link FakeGithub.start}. */
export interface FakeGithubOptions {
  /** The personal access token it accepts (`Authorization: token X` or `Bearer X`). @default 'ghp_fake_' + random */
  token?: string;
  /** The token owner's login (GET /user). @default 'octo-owner' */
  user?: string;
  /** Also act as a GitHub App: generates an RSA key pair; the app's JWT (RS256, iss = appId) is verified with node:crypto. */
  app?: {
    appId: number;
    installationId: number;
    /** How long an installation token lives. @default 3_600_000 */
    tokenLifetimeMs?: number;
  };
}

/** One request as the fake received it (never a token). */
export interface FakeGithubRequest {
  method: string;
  /** The path without the query, e.g. `/repos/o/r/pulls/7`. */
  path: string;
  query: Record<string, string>;
  /** The status the fake answered with. */
  status: number;
  atMs: number;
  /** The parsed JSON body, if any. */
  body?: unknown;
  /** The If-None-Match header it carried, if any. */
  ifNoneMatch?: string;
}

/** What a test gives to add an issue or a pull request. */
export interface ItemInit {
  owner: string;
  repo: string;
  number: number;
  title: string;
  /** @default '' */
  body?: string;
  /** The author's login. */
  user: string;
  /** @default 'CONTRIBUTOR' */
  author_association?: string;
  /** @default [] */
  labels?: string[];
  /** @default [] */
  assignees?: string[];
  /** @default 'open' */
  state?: 'open' | 'closed';
  /** ISO time. @default now */
  created_at?: string;
  /** ISO time. @default now */
  updated_at?: string;
}

/** What a test gives to add a pull request. */
export interface PullInit extends ItemInit {
  /** @default [] */
  requested_reviewers?: string[];
  /** @default false */
  draft?: boolean;
  /** @default `feature-<number>` */
  head_ref?: string;
  /** @default 'main' */
  base_ref?: string;
  /** @default 40 random hex digits */
  head_sha?: string;
  /** @default 10 */
  additions?: number;
  /** @default 2 */
  deletions?: number;
  /** @default 1 */
  changed_files?: number;
  /** @default true */
  mergeable?: boolean | null;
  /** @default 'clean' */
  mergeable_state?: string;
}

/** An issue or pull request as the fake holds it: live state, changed by the API's writes and by {@link FakeGithub.update}. */
export interface FakeItem {
  kind: 'pull' | 'issue';
  owner: string;
  repo: string;
  number: number;
  title: string;
  body: string;
  user: string;
  author_association: string;
  labels: string[];
  assignees: string[];
  state: 'open' | 'closed';
  merged: boolean;
  created_at: string;
  updated_at: string;
  comments: FakeComment[];
  reviews: FakeReview[];
  requested_reviewers: string[];
  draft: boolean;
  head_ref: string;
  base_ref: string;
  head_sha: string;
  additions: number;
  deletions: number;
  changed_files: number;
  mergeable: boolean | null;
  mergeable_state: string;
  /** How it was merged (`merge`, `squash`, `rebase`), once merged through the API. */
  merge_method?: string;
}

/** A comment on an issue or pull request (the conversation, not a review comment). */
export interface FakeComment {
  id: number;
  user: string;
  body: string;
  created_at: string;
  updated_at: string;
}

/** A submitted pull request review. */
export interface FakeReview {
  id: number;
  user: string;
  state: 'APPROVED' | 'CHANGES_REQUESTED' | 'COMMENTED' | 'DISMISSED';
  commit_id: string;
  body: string;
  submitted_at: string;
}

/** A check run on a commit. */
export interface FakeCheckRun {
  name: string;
  status: 'queued' | 'in_progress' | 'completed';
  /** `success`, `failure`, `neutral`, …; null (the default) while not completed. */
  conclusion?: string | null;
}

/** A commit status (the older statuses API). */
export interface FakeStatus {
  context: string;
  state: 'error' | 'failure' | 'pending' | 'success';
}

type Json = Record<string, unknown>;

/** What a route answers: status, JSON body (or a raw string) and extra headers. */
interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

type Caller = { kind: 'token'; login: string } | { kind: 'installation'; login: string } | { kind: 'app' };

interface Context {
  method: string;
  url: URL;
  params: Record<string, string>;
  query: Record<string, string>;
  body: unknown;
  caller: Caller;
}

interface Route {
  method: string;
  segments: string[];
  /** Who may call it: the App itself (its JWT) or a user/installation token. */
  auth: 'app' | 'token';
  handle: (context: Context) => Reply;
}

/** What the fake tracks about an item besides {@link FakeItem}, which it does not expose. */
interface ItemExtra {
  id: number;
  baseSha: string;
  closedAt?: string | undefined;
  closedBy?: string | undefined;
  mergedAt?: string | undefined;
  mergedBy?: string | undefined;
  mergeCommitSha?: string | undefined;
}

interface RateWindow {
  limit: number;
  windowMs: number;
  used: number;
  resetMs: number;
}

const examplesFile = z.object({ source: z.string(), examples: z.record(z.string(), z.unknown()) });

function loadExamples(name: string): Record<string, unknown> {
  const text = readFileSync(new URL(`./examples/${name}`, import.meta.url), 'utf8');
  return examplesFile.parse(JSON.parse(text)).examples;
}

const restExamples = loadExamples('rest.json');
const webhookExamples = loadExamples('webhooks.json');

const docsUrl = 'https://docs.github.com/rest';
const htmlRoot = 'https://github.test';
/** The repository the REST examples are written about; its name in URLs is rewritten to the item's. */
const restExampleRepo = 'octocat/Hello-World';
/** The repositories the webhook examples are written about. */
const webhookExampleRepos = ['Codertocat/Hello-World', 'Octocoders/Hello-World'];
/** The head sha the pull example uses in its URLs. */
const exampleHeadSha = '6dcb09b5b57875f334f61aebed695e2e4193db5e';
const exampleNumber = '1347';

const invalidJson = Symbol('invalid JSON');

/** A user as the examples show one; cloned for every login the fake renders. */
const userTemplate = asObject(
  asObject(restExamples['GET /repos/{owner}/{repo}/pulls/{pull_number} 200'], 'the pull example').user,
  'the pull example user',
);

/** A deep copy of a REST example (`'GET /user 200'`), or throws when the recorded examples lack it. */
function restExample(key: string): unknown {
  const value = restExamples[key];
  if (value === undefined) throw new Error(`The fake GitHub has no recorded example for \`${key}\`.`);
  return structuredClone(value);
}

function asObject(value: unknown, what: string): Json {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`The fake GitHub expected ${what} to be an object in the recorded examples.`);
  }
  return value as Json;
}

function restObject(key: string): Json {
  return asObject(restExample(key), key);
}

/** The first element of an example that is a list (`GET …/comments 200`). */
function restListItem(key: string): Json {
  const list = restExample(key);
  if (!Array.isArray(list)) throw new Error(`The fake GitHub expected \`${key}\` to be a list.`);
  return asObject(list[0], `the first element of ${key}`);
}

/** The first element of a list inside an example (`check_runs`). */
function firstElement(parent: Json, key: string): Json {
  const list = parent[key];
  if (!Array.isArray(list))
    throw new Error(`The fake GitHub expected \`${key}\` to be a list in the recorded examples.`);
  return asObject(list[0], `the first element of \`${key}\``);
}

function child(parent: Json, key: string): Json {
  return asObject(parent[key], `\`${key}\``);
}

/** Every string inside `value` passed through `rewrite` (the value is changed in place and returned). */
function rewriteStrings<T>(value: T, rewrite: (text: string) => string): T {
  if (typeof value === 'string') return rewrite(value) as T;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index += 1) value[index] = rewriteStrings(value[index], rewrite);
  } else if (typeof value === 'object' && value !== null) {
    const object = value as Json;
    for (const key of Object.keys(object)) object[key] = rewriteStrings(object[key], rewrite);
  }
  return value;
}

/** Sets the keys of `target` that `source` also has to the source's values: the target keeps its own set of keys. */
function overlay(target: Json, source: Json): Json {
  for (const key of Object.keys(target)) if (key in source) target[key] = source[key];
  return target;
}

/** GitHub's time format: ISO 8601 in UTC without milliseconds, `2026-11-26T04:00:01Z`. */
function isoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function normaliseTime(value: string | undefined, nowMs: number, field: string): string {
  if (value === undefined) return isoSeconds(nowMs);
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new Error(`Expected \`${field}\` to be an ISO time, got \`${value}\`.`);
  return isoSeconds(ms);
}

function randomHex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

/** A stable positive id for a name (a user, label or repository), so that the same name always has the same id. */
function stableId(text: string): number {
  return Number.parseInt(createHash('sha256').update(text).digest('hex').slice(0, 8), 16) % 1_000_000_000 || 1;
}

function nodeId(type: string, id: number): string {
  return Buffer.from(`0${type.length}:${type}${id}`).toString('base64');
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function itemKey(owner: string, repo: string, number: number): string {
  return `${owner.toLowerCase()}/${repo.toLowerCase()}#${number}`;
}

function repoKey(owner: string, repo: string): string {
  return `${owner.toLowerCase()}/${repo.toLowerCase()}`;
}

function notFound(): Reply {
  return { status: 404, body: { message: 'Not Found', documentation_url: docsUrl, status: '404' } };
}

function badCredentials(): Reply {
  return { status: 401, body: { message: 'Bad credentials', documentation_url: docsUrl, status: '401' } };
}

function validationFailed(errors: Json[]): Reply {
  return { status: 422, body: { message: 'Validation Failed', errors, documentation_url: docsUrl, status: '422' } };
}

/** Parses a request body against a schema, or answers 422 as GitHub does for a body it cannot use. */
function parseBody<T>(schema: z.ZodType<T>, body: unknown, resource: string): { value: T } | { reply: Reply } {
  const result = schema.safeParse(body ?? {});
  if (result.success) return { value: result.data };
  return {
    reply: validationFailed(
      result.error.issues.map((issue) => ({
        resource,
        field: issue.path.join('.'),
        code: 'invalid',
        message: issue.message,
      })),
    ),
  };
}

const labelName = z.union([z.string(), z.object({ name: z.string() }).transform((label) => label.name)]);
const labelsBody = z.union([
  z.array(labelName),
  z.object({ labels: z.array(labelName) }).transform((body) => body.labels),
]);
const assigneesBody = z.object({ assignees: z.array(z.string()).default([]) });
const reviewersBody = z.object({
  reviewers: z.array(z.string()).default([]),
  team_reviewers: z.array(z.string()).optional(),
});
const commentBody = z.object({ body: z.string().min(1) });
const editBody = z.object({
  state: z.enum(['open', 'closed']).optional(),
  title: z.string().min(1).optional(),
  body: z.string().nullable().optional(),
  labels: z.array(labelName).optional(),
  assignees: z.array(z.string()).optional(),
});
const reviewBody = z.object({
  event: z.enum(['APPROVE', 'REQUEST_CHANGES', 'COMMENT']),
  commit_id: z.string().optional(),
  body: z.string().optional(),
});
const mergeBody = z.object({
  sha: z.string().optional(),
  merge_method: z.enum(['merge', 'squash', 'rebase']).optional(),
  commit_title: z.string().optional(),
  commit_message: z.string().optional(),
});
const createIssueBody = z.object({
  title: z.union([z.string().min(1), z.number()]).transform(String),
  body: z.string().nullable().optional(),
  labels: z.array(labelName).optional(),
  assignees: z.array(z.string()).optional(),
});
const jwtHeader = z.object({ alg: z.literal('RS256') });
const jwtPayload = z.object({ iss: z.union([z.string(), z.number()]), exp: z.number() });

const reviewStates = { APPROVE: 'APPROVED', REQUEST_CHANGES: 'CHANGES_REQUESTED', COMMENT: 'COMMENTED' } as const;

/** Thrown while parsing a search query; answered as 422 Validation Failed. */
class SearchQueryError extends Error {}

type Matcher = (item: FakeItem) => boolean;

/**
 * A local fake of the GitHub REST API for tests only (never a product default), on 127.0.0.1, behind the
 * integration's `api_url`. Replies are GitHub's recorded examples (`examples/rest.json`, from @octokit/openapi) with
 * the fields the fake models overridden, so fields it does not model keep GitHub's documented shape. It supports
 * issue search (a subset of the query language), pulls, issues, comments, reviews, labels, assignees, review
 * requests, merges, checks and statuses, ETag/304, rate-limit headers, a GitHub App's installation tokens, scripted
 * failures ({@link failNext}) and webhook deliveries built from `examples/webhooks.json` ({@link delivery}).
 *
 * @example
 * await using fake = await FakeGithub.start();
 * fake.addPull({ owner: 'o', repo: 'r', number: 7, title: 'Fix', user: 'alice', requested_reviewers: [fake.user] });
 * // settings: {github: {api_url: fake.apiUrl, token: <fake.token as a secret>}}
 */
export class FakeGithub implements AsyncDisposable {
  /** The `api_url` setting, e.g. `http://127.0.0.1:43123` (no trailing slash). */
  readonly apiUrl: string;
  /** The personal access token it accepts. */
  readonly token: string;
  /** The token owner's login. */
  readonly user: string;
  /** Set with options.app: the App's credentials, privateKey as PEM text (PKCS#1, as GitHub hands it out). */
  readonly app?: { appId: number; installationId: number; privateKey: string };
  /** Installation tokens issued so far (POST /app/installations/:id/access_tokens). */
  tokensIssued = 0;
  /** Every request, in order (never a token). */
  readonly requests: FakeGithubRequest[] = [];

  readonly #server: FastifyInstance;
  readonly #routes: Route[];
  readonly #items = new Map<string, FakeItem>();
  readonly #extras = new WeakMap<FakeItem, ItemExtra>();
  readonly #checks = new Map<string, { check_runs: FakeCheckRun[]; statuses: FakeStatus[] }>();
  readonly #failures: {
    method?: string | undefined;
    path: string | RegExp;
    reply: Reply;
    remaining: number;
  }[] = [];
  readonly #installationTokens = new Map<string, number>();
  readonly #publicKey: KeyObject | undefined;
  readonly #tokenLifetimeMs: number;
  readonly #appSlug: string;
  readonly #rate: { core: RateWindow; search: RateWindow };
  #nextItemId = 1000;
  #nextCommentId = 5000;
  #nextReviewId = 8000;
  #closed: Promise<void> | undefined;

  private constructor(
    server: FastifyInstance,
    apiUrl: string,
    options: FakeGithubOptions,
    appKeys: { privateKey: string; publicKey: KeyObject } | undefined,
  ) {
    this.#server = server;
    this.apiUrl = apiUrl;
    this.token = options.token ?? `ghp_fake_${randomHex(16)}`;
    this.user = options.user ?? 'octo-owner';
    if (options.app && appKeys) {
      this.app = {
        appId: options.app.appId,
        installationId: options.app.installationId,
        privateKey: appKeys.privateKey,
      };
    }
    this.#publicKey = appKeys?.publicKey;
    this.#tokenLifetimeMs = options.app?.tokenLifetimeMs ?? 3_600_000;
    this.#appSlug = String(restObject('GET /app 200').slug);
    const now = Date.now();
    // GitHub's primary limits: 5000 core requests an hour, 30 searches a minute.
    this.#rate = {
      core: { limit: 5000, windowMs: 3_600_000, used: 0, resetMs: now + 3_600_000 },
      search: { limit: 30, windowMs: 60_000, used: 0, resetMs: now + 60_000 },
    };
    this.#routes = this.#makeRoutes();
  }

  /** Starts the fake on 127.0.0.1 on a free port. */
  static async start(options: FakeGithubOptions = {}): Promise<FakeGithub> {
    const server = Fastify({ logger: false, forceCloseConnections: true });
    // Every body is read as text and parsed here, so that an empty or broken body gets GitHub's answer, not Fastify's.
    server.removeAllContentTypeParsers();
    server.addContentTypeParser('*', { parseAs: 'string' }, (_request, text, done) => {
      const source = String(text);
      if (source.trim() === '') return done(null, undefined);
      try {
        done(null, JSON.parse(source));
      } catch {
        done(null, invalidJson);
      }
    });
    let fake: FakeGithub | undefined;
    server.route({
      method: ['GET', 'HEAD', 'POST', 'PATCH', 'PUT', 'DELETE'],
      url: '/*',
      exposeHeadRoute: false,
      handler: async (request, reply) => {
        if (fake === undefined) throw new Error('The fake GitHub answered before it finished starting.');
        return fake.#handle(request, reply);
      },
    });
    let appKeys: { privateKey: string; publicKey: KeyObject } | undefined;
    if (options.app) {
      const pair = generateKeyPairSync('rsa', { modulusLength: 2048 });
      appKeys = {
        privateKey: pair.privateKey.export({ type: 'pkcs1', format: 'pem' }).toString(),
        publicKey: pair.publicKey,
      };
    }
    await server.listen({ host: '127.0.0.1', port: 0 });
    const address = server.server.address();
    if (address === null || typeof address === 'string') {
      await server.close();
      throw new Error(`The fake GitHub expected a TCP address, got ${String(address)}.`);
    }
    fake = new FakeGithub(server, `http://127.0.0.1:${address.port}`, options, appKeys);
    return fake;
  }

  /** Adds a pull request (it is an issue too, as on GitHub). */
  addPull(init: PullInit): FakeItem {
    return this.#add('pull', init, init);
  }

  /** Adds an issue. */
  addIssue(init: ItemInit): FakeItem {
    return this.#add('issue', init, {});
  }

  /** The live item, or throws. */
  item(owner: string, repo: string, number: number): FakeItem {
    const item = this.#items.get(itemKey(owner, repo, number));
    if (!item) throw new Error(`The fake GitHub has no item ${owner}/${repo}#${number}.`);
    return item;
  }

  /** Adds a comment as `comment.user`, bumping the item's updated_at. */
  addComment(owner: string, repo: string, number: number, comment: { user: string; body: string }): FakeComment {
    const item = this.item(owner, repo, number);
    this.#touch(item);
    const added: FakeComment = {
      id: this.#nextCommentId++,
      user: comment.user,
      body: comment.body,
      created_at: item.updated_at,
      updated_at: item.updated_at,
    };
    item.comments.push(added);
    return added;
  }

  /**
   * Adds a submitted review, bumping the item's updated_at. As on GitHub, a review by a requested reviewer removes
   * the request. `commit_id` defaults to the pull's head sha.
   */
  addReview(
    owner: string,
    repo: string,
    number: number,
    review: { user: string; state: FakeReview['state']; commit_id?: string; body?: string },
  ): FakeReview {
    const item = this.item(owner, repo, number);
    if (item.kind !== 'pull') throw new Error(`${owner}/${repo}#${number} is an issue; only a pull has reviews.`);
    this.#touch(item);
    const added: FakeReview = {
      id: this.#nextReviewId++,
      user: review.user,
      state: review.state,
      commit_id: review.commit_id ?? item.head_sha,
      body: review.body ?? '',
      submitted_at: item.updated_at,
    };
    item.reviews.push(added);
    item.requested_reviewers = item.requested_reviewers.filter((login) => !sameLogin(login, review.user));
    return added;
  }

  /** Sets the check runs and/or statuses of a commit (those not given stay as they were). */
  setChecks(
    owner: string,
    repo: string,
    sha: string,
    checks: { check_runs?: FakeCheckRun[]; statuses?: FakeStatus[] },
  ): void {
    const key = `${repoKey(owner, repo)}@${sha}`;
    const current = this.#checks.get(key) ?? { check_runs: [], statuses: [] };
    this.#checks.set(key, {
      check_runs: checks.check_runs ? [...checks.check_runs] : current.check_runs,
      statuses: checks.statuses ? [...checks.statuses] : current.statuses,
    });
  }

  /**
   * Changes an item as a person on GitHub would (a new commit: `{head_sha}`; an edit: `{title}`), bumping
   * updated_at (unless the patch sets `updated_at` itself).
   */
  update(
    owner: string,
    repo: string,
    number: number,
    patch: Partial<Omit<FakeItem, 'kind' | 'owner' | 'repo' | 'number' | 'comments' | 'reviews'>>,
  ): FakeItem {
    const item = this.item(owner, repo, number);
    for (const [key, value] of Object.entries(patch)) {
      if (value !== undefined) (item as unknown as Json)[key] = value;
    }
    if (patch.updated_at === undefined) this.#touch(item);
    else item.updated_at = normaliseTime(patch.updated_at, Date.now(), 'updated_at');
    this.#syncTimes(item, item.user);
    return item;
  }

  /** The next `times` requests matching are answered with this reply instead (then normal service resumes). */
  failNext(
    match: { method?: string; path: string | RegExp },
    reply: { status: number; headers?: Record<string, string>; body?: unknown },
    times = 1,
  ): void {
    this.#failures.push({ method: match.method?.toUpperCase(), path: match.path, reply, remaining: times });
  }

  /** Requests other than GET/HEAD, in order. */
  writes(): FakeGithubRequest[] {
    return this.requests.filter((request) => request.method !== 'GET' && request.method !== 'HEAD');
  }

  /**
   * A webhook delivery for an item, built from webhooks.json's example of `event` (`pull_request.opened`,
   * `issues.opened`, `issue_comment.created`, `pull_request_review.submitted`, `check_run.completed`, `ping`, …)
   * with repository owner/name/full_name, the item's number (and head sha for check_run/check_suite/status:
   * `check_run.head_sha`, `check_run.pull_requests[0].number`) set from the fake's item. `event` in the result is the
   * `X-GitHub-Event` header (`pull_request`); `body` is the exact text to sign with {@link signWebhook} and post.
   */
  delivery(event: string, ref?: { owner: string; repo: string; number: number }): { event: string; body: string } {
    const example = webhookExamples[event];
    if (example === undefined) {
      throw new Error(
        `The fake GitHub has no webhook example for \`${event}\`; known: ${Object.keys(webhookExamples).join(', ')}.`,
      );
    }
    const name = event.split('.')[0] ?? event;
    const payload = asObject(structuredClone(example), event);
    if (this.app && !('installation' in payload)) {
      payload.installation = { id: this.app.installationId, node_id: nodeId('IntegrationInstallation', 1) };
    } else if (this.app && typeof payload.installation === 'object' && payload.installation !== null) {
      (payload.installation as Json).id = this.app.installationId;
    }
    if (!ref) return { event: name, body: JSON.stringify(payload) };
    const item = this.item(ref.owner, ref.repo, ref.number);
    if ((name === 'pull_request' || name.startsWith('pull_request_review')) && item.kind !== 'pull') {
      throw new Error(`${item.owner}/${item.repo}#${item.number} is an issue; \`${event}\` needs a pull request.`);
    }
    rewriteStrings(payload, (text) => {
      let result = text;
      for (const from of webhookExampleRepos) result = result.replaceAll(from, `${item.owner}/${item.repo}`);
      return this.#relocateHosts(result);
    });
    const repository = child(payload, 'repository');
    repository.name = item.repo;
    repository.full_name = `${item.owner}/${item.repo}`;
    repository.owner = overlay(child(repository, 'owner'), this.#userObject(item.owner));
    let sender = item.user;
    const pull = item.kind === 'pull' ? this.#pullShape(item) : undefined;
    const issue = this.#issueShape(item);
    if ('pull_request' in payload && pull) payload.pull_request = overlay(child(payload, 'pull_request'), pull);
    if ('number' in payload) payload.number = item.number;
    if ('issue' in payload) {
      const target = overlay(child(payload, 'issue'), issue);
      if (issue.pull_request !== undefined) target.pull_request = issue.pull_request;
      payload.issue = target;
    }
    const lastComment = item.comments.at(-1);
    if (name === 'issue_comment' && lastComment) {
      payload.comment = overlay(child(payload, 'comment'), this.#commentShape(item, lastComment, 'list'));
      sender = lastComment.user;
    }
    const lastReview = item.reviews.at(-1);
    if (name === 'pull_request_review' && lastReview) {
      payload.review = overlay(child(payload, 'review'), this.#reviewShape(item, lastReview, 'list'));
      sender = lastReview.user;
    }
    if (name === 'pull_request' && 'after' in payload) payload.after = item.head_sha;
    if (item.kind === 'pull') this.#deliveryCommit(name, payload, item);
    payload.sender = overlay(child(payload, 'sender'), this.#userObject(sender));
    return { event: name, body: JSON.stringify(payload) };
  }

  /** Stops the server (idempotent). */
  close(): Promise<void> {
    this.#closed ??= this.#server.close();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #add(kind: FakeItem['kind'], init: ItemInit, pull: Partial<PullInit>): FakeItem {
    const key = itemKey(init.owner, init.repo, init.number);
    if (this.#items.has(key)) throw new Error(`The fake GitHub already has ${init.owner}/${init.repo}#${init.number}.`);
    const now = Date.now();
    const item: FakeItem = {
      kind,
      owner: init.owner,
      repo: init.repo,
      number: init.number,
      title: init.title,
      body: init.body ?? '',
      user: init.user,
      author_association: init.author_association ?? 'CONTRIBUTOR',
      labels: [...new Set(init.labels ?? [])],
      assignees: [...new Set(init.assignees ?? [])],
      state: init.state ?? 'open',
      merged: false,
      created_at: normaliseTime(init.created_at, now, 'created_at'),
      updated_at: normaliseTime(init.updated_at, now, 'updated_at'),
      comments: [],
      reviews: [],
      requested_reviewers: [...new Set(pull.requested_reviewers ?? [])],
      draft: pull.draft ?? false,
      head_ref: pull.head_ref ?? `feature-${init.number}`,
      base_ref: pull.base_ref ?? 'main',
      head_sha: pull.head_sha ?? randomHex(20),
      additions: pull.additions ?? 10,
      deletions: pull.deletions ?? 2,
      changed_files: pull.changed_files ?? 1,
      mergeable: pull.mergeable === undefined ? true : pull.mergeable,
      mergeable_state: pull.mergeable_state ?? 'clean',
    };
    this.#items.set(key, item);
    this.#extras.set(item, { id: this.#nextItemId++, baseSha: randomHex(20) });
    this.#syncTimes(item, item.user);
    return item;
  }

  #extra(item: FakeItem): ItemExtra {
    const extra = this.#extras.get(item);
    if (!extra) throw new Error('unreachable: every item has its extra state');
    return extra;
  }

  /** Bumps updated_at as GitHub does on every change, strictly increasing even within one second. */
  #touch(item: FakeItem): void {
    const previous = Date.parse(item.updated_at);
    const nowMs = Math.floor(Date.now() / 1000) * 1000;
    item.updated_at = isoSeconds(Math.max(nowMs, Number.isNaN(previous) ? 0 : previous + 1000));
  }

  /** Keeps closed_at/merged_at in step with state/merged after any change. */
  #syncTimes(item: FakeItem, actor: string): void {
    const extra = this.#extra(item);
    if (item.state === 'closed') {
      extra.closedAt ??= item.updated_at;
      extra.closedBy ??= actor;
    } else {
      extra.closedAt = undefined;
      extra.closedBy = undefined;
    }
    if (item.merged) {
      extra.mergedAt ??= item.updated_at;
      extra.mergedBy ??= actor;
      extra.mergeCommitSha ??= randomHex(20);
    }
  }

  #itemsOf(owner: string, repo: string): FakeItem[] {
    const prefix = `${repoKey(owner, repo)}#`;
    return [...this.#items.entries()].filter(([key]) => key.startsWith(prefix)).map(([, item]) => item);
  }

  async #handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const url = new URL(request.url, this.apiUrl);
    const method = request.method.toUpperCase();
    const header = request.headers['if-none-match'];
    const ifNoneMatch = Array.isArray(header) ? header.join(', ') : header;
    const body: unknown = request.body;
    const entry: FakeGithubRequest = {
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      status: 0,
      atMs: Date.now(),
      ...(body !== undefined && body !== invalidJson ? { body } : {}),
      ...(ifNoneMatch === undefined ? {} : { ifNoneMatch }),
    };
    this.requests.push(entry);
    const resource = url.pathname.startsWith('/search/') ? 'search' : 'core';
    let answer = this.#scriptedFailure(method, url.pathname) ?? this.#answer(method, url, body, request);
    let text: string | undefined;
    let contentType = 'application/json; charset=utf-8';
    if (answer.body !== undefined) {
      if (typeof answer.body === 'string') {
        text = answer.body;
        contentType = 'text/plain; charset=utf-8';
      } else {
        text = JSON.stringify(answer.body);
      }
    }
    const headers: Record<string, string> = { 'x-github-request-id': randomHex(8).toUpperCase() };
    if ((method === 'GET' || method === 'HEAD') && answer.status === 200 && text !== undefined) {
      const etag = `W/"${createHash('sha256').update(text).digest('hex')}"`;
      headers.etag = etag;
      if (ifNoneMatch !== undefined && matchesEtag(ifNoneMatch, etag)) {
        answer = { status: 304, ...(answer.headers ? { headers: answer.headers } : {}) };
        text = undefined;
      }
    }
    // A 304 costs nothing, as on GitHub; neither does asking for the rate limit itself.
    Object.assign(headers, this.#rateHeaders(resource, answer.status !== 304 && url.pathname !== '/rate_limit'));
    Object.assign(headers, answer.headers);
    entry.status = answer.status;
    reply.code(answer.status).headers(headers);
    if (text === undefined || method === 'HEAD') return reply.send();
    return reply.header('content-type', contentType).send(text);
  }

  #scriptedFailure(method: string, path: string): Reply | undefined {
    const index = this.#failures.findIndex(
      (failure) =>
        (failure.method === undefined || failure.method === method) &&
        (typeof failure.path === 'string' ? failure.path === path : failure.path.test(path)),
    );
    const failure = this.#failures[index];
    if (!failure) return undefined;
    failure.remaining -= 1;
    if (failure.remaining <= 0) this.#failures.splice(index, 1);
    const { status, headers, body } = failure.reply;
    return {
      status,
      body: body ?? { message: STATUS_CODES[status] ?? `Error ${status}`, documentation_url: docsUrl },
      ...(headers ? { headers } : {}),
    };
  }

  #rateHeaders(resource: 'core' | 'search', count: boolean): Record<string, string> {
    const window = this.#rate[resource];
    const now = Date.now();
    while (now >= window.resetMs) {
      window.resetMs += window.windowMs;
      window.used = 0;
    }
    // The fake never runs out by itself: a test makes a limit with failNext.
    if (count) window.used = Math.min(window.used + 1, window.limit - 1);
    return {
      'x-ratelimit-limit': String(window.limit),
      'x-ratelimit-remaining': String(window.limit - window.used),
      'x-ratelimit-reset': String(Math.floor(window.resetMs / 1000)),
      'x-ratelimit-used': String(window.used),
      'x-ratelimit-resource': resource,
    };
  }

  #answer(method: string, url: URL, body: unknown, request: FastifyRequest): Reply {
    const segments = url.pathname
      .split('/')
      .filter((segment) => segment !== '')
      .map((segment) => {
        try {
          return decodeURIComponent(segment);
        } catch {
          return segment;
        }
      });
    const routeMethod = method === 'HEAD' ? 'GET' : method;
    let found: { route: Route; params: Record<string, string> } | undefined;
    for (const route of this.#routes) {
      if (route.method !== routeMethod) continue;
      const params = matchSegments(route.segments, segments);
      if (params) {
        found = { route, params };
        break;
      }
    }
    const caller = this.#authenticate(request.headers.authorization);
    const allowed =
      found?.route.auth === 'app' ? caller?.kind === 'app' : caller !== undefined && caller.kind !== 'app';
    if (!caller || !allowed) {
      if (found?.route.auth === 'app') {
        return {
          status: 401,
          body: { message: 'A JSON web token could not be decoded', documentation_url: docsUrl, status: '401' },
        };
      }
      return badCredentials();
    }
    if (!found) return notFound();
    if (body === invalidJson) {
      return { status: 400, body: { message: 'Problems parsing JSON', documentation_url: docsUrl, status: '400' } };
    }
    return found.route.handle({
      method,
      url,
      params: found.params,
      query: Object.fromEntries(url.searchParams),
      body,
      caller,
    });
  }

  #authenticate(authorization: string | undefined): Caller | undefined {
    const match = /^(?:token|bearer)\s+(\S+)\s*$/i.exec(authorization ?? '');
    const credential = match?.[1];
    if (credential === undefined) return undefined;
    if (credential === this.token) return { kind: 'token', login: this.user };
    const expiresAtMs = this.#installationTokens.get(credential);
    if (expiresAtMs !== undefined) {
      return expiresAtMs > Date.now() ? { kind: 'installation', login: `${this.#appSlug}[bot]` } : undefined;
    }
    return this.#verifyJwt(credential) ? { kind: 'app' } : undefined;
  }

  /** Whether a JWT is the App's: RS256 signed with its key, `iss` its id, `exp` in the future. */
  #verifyJwt(jwt: string): boolean {
    if (!this.app || !this.#publicKey) return false;
    const [header, payload, signature, ...rest] = jwt.split('.');
    if (header === undefined || payload === undefined || signature === undefined || rest.length > 0) return false;
    try {
      const headerResult = jwtHeader.safeParse(JSON.parse(Buffer.from(header, 'base64url').toString('utf8')));
      const payloadResult = jwtPayload.safeParse(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')));
      if (!headerResult.success || !payloadResult.success) return false;
      const signed = verify(
        'RSA-SHA256',
        Buffer.from(`${header}.${payload}`),
        this.#publicKey,
        Buffer.from(signature, 'base64url'),
      );
      return (
        signed &&
        String(payloadResult.data.iss) === String(this.app.appId) &&
        payloadResult.data.exp * 1000 > Date.now()
      );
    } catch {
      return false;
    }
  }

  #makeRoutes(): Route[] {
    const route = (
      method: string,
      pattern: string,
      handle: (context: Context) => Reply,
      auth: Route['auth'] = 'token',
    ): Route => ({ method, segments: pattern.split('/').filter((segment) => segment !== ''), auth, handle });
    const repo = '/repos/:owner/:repo';
    return [
      route('GET', '/user', (context) => this.#getUser(context)),
      route('GET', '/rate_limit', () => this.#getRateLimit()),
      route('GET', '/search/issues', (context) => this.#searchIssues(context)),
      route('GET', '/app', () => this.#getApp(), 'app'),
      route('POST', '/app/installations/:id/access_tokens', (context) => this.#issueToken(context), 'app'),
      route('GET', `${repo}/pulls/:number`, (context) =>
        this.#withPull(context, (item) => this.#ok(this.#pullShape(item))),
      ),
      route('GET', `${repo}/issues/:number`, (context) =>
        this.#withItem(context, (item) => this.#ok(this.#issueShape(item))),
      ),
      route('GET', `${repo}/issues/:number/comments`, (context) =>
        this.#withItem(context, (item) =>
          this.#page(
            item.comments.map((comment) => this.#commentShape(item, comment, 'list')),
            context,
          ),
        ),
      ),
      route('GET', `${repo}/issues`, (context) => this.#listIssues(context)),
      route('GET', `${repo}/pulls/:number/reviews`, (context) =>
        this.#withPull(context, (item) =>
          this.#page(
            item.reviews.map((review) => this.#reviewShape(item, review, 'list')),
            context,
          ),
        ),
      ),
      route('GET', `${repo}/commits/:ref/check-runs`, (context) => this.#checkRuns(context)),
      route('GET', `${repo}/commits/:ref/status`, (context) => this.#combinedStatus(context)),
      route('POST', `${repo}/issues/:number/labels`, (context) => this.#addLabels(context)),
      route('DELETE', `${repo}/issues/:number/labels/:name`, (context) => this.#removeLabel(context)),
      route('POST', `${repo}/issues/:number/assignees`, (context) => this.#addAssignees(context)),
      route('POST', `${repo}/pulls/:number/requested_reviewers`, (context) => this.#requestReviewers(context)),
      route('POST', `${repo}/issues/:number/comments`, (context) => this.#postComment(context)),
      route('PATCH', `${repo}/issues/:number`, (context) => this.#edit(context, 'issue')),
      route('PATCH', `${repo}/pulls/:number`, (context) => this.#edit(context, 'pull')),
      route('POST', `${repo}/pulls/:number/reviews`, (context) => this.#postReview(context)),
      route('PUT', `${repo}/pulls/:number/merge`, (context) => this.#merge(context)),
      route('POST', `${repo}/issues`, (context) => this.#createIssue(context)),
    ];
  }

  #ok(body: unknown, status = 200, headers?: Record<string, string>): Reply {
    return { status, body, ...(headers ? { headers } : {}) };
  }

  #findItem(context: Context): FakeItem | undefined {
    const number = Number(context.params.number);
    if (!Number.isInteger(number)) return undefined;
    return this.#items.get(itemKey(context.params.owner ?? '', context.params.repo ?? '', number));
  }

  #withItem(context: Context, handle: (item: FakeItem) => Reply): Reply {
    const item = this.#findItem(context);
    return item ? handle(item) : notFound();
  }

  #withPull(context: Context, handle: (item: FakeItem) => Reply): Reply {
    const item = this.#findItem(context);
    return item?.kind === 'pull' ? handle(item) : notFound();
  }

  /** One page of a list, with GitHub's Link header (prev, next, last, first) when there is more than one page. */
  #page(all: unknown[], context: Context, wrap?: (items: unknown[]) => unknown): Reply {
    const perPage = Math.min(100, Math.max(1, Number.parseInt(context.query.per_page ?? '', 10) || 30));
    const page = Math.max(1, Number.parseInt(context.query.page ?? '', 10) || 1);
    const lastPage = Math.max(1, Math.ceil(all.length / perPage));
    const items = all.slice((page - 1) * perPage, page * perPage);
    const link = (target: number, rel: string) => {
      const url = new URL(`${this.apiUrl}${context.url.pathname}`);
      for (const [key, value] of context.url.searchParams) if (key !== 'page') url.searchParams.set(key, value);
      url.searchParams.set('page', String(target));
      return `<${url.toString()}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (lastPage > 1) {
      if (page > 1) links.push(link(Math.min(page - 1, lastPage), 'prev'));
      if (page < lastPage) links.push(link(page + 1, 'next'), link(lastPage, 'last'));
      if (page > 1) links.push(link(1, 'first'));
    }
    return this.#ok(wrap ? wrap(items) : items, 200, links.length > 0 ? { link: links.join(', ') } : undefined);
  }

  #getUser(context: Context): Reply {
    if (context.caller.kind !== 'token') {
      return {
        status: 403,
        body: { message: 'Resource not accessible by integration', documentation_url: docsUrl, status: '403' },
      };
    }
    const user = overlay(this.#relocate(restObject('GET /user 200')), this.#userObject(this.user));
    user.name = this.user;
    return this.#ok(user);
  }

  #getRateLimit(): Reply {
    const body = restObject('GET /rate_limit 200');
    const resources = child(body, 'resources');
    for (const resource of ['core', 'search'] as const) {
      const window = this.#rate[resource];
      resources[resource] = {
        limit: window.limit,
        used: window.used,
        remaining: window.limit - window.used,
        reset: Math.floor(window.resetMs / 1000),
      };
    }
    body.rate = resources.core;
    return this.#ok(body);
  }

  #getApp(): Reply {
    const body = this.#relocate(restObject('GET /app 200'));
    body.id = this.app?.appId;
    return this.#ok(body);
  }

  #issueToken(context: Context): Reply {
    if (!this.app || Number(context.params.id) !== this.app.installationId) return notFound();
    const token = `ghs_${randomHex(18)}`;
    const expiresAtMs = Date.now() + this.#tokenLifetimeMs;
    this.#installationTokens.set(token, expiresAtMs);
    this.tokensIssued += 1;
    const body = this.#relocate(restObject('POST /app/installations/{installation_id}/access_tokens 201'));
    body.token = token;
    body.expires_at = isoSeconds(expiresAtMs);
    return this.#ok(body, 201);
  }

  #searchIssues(context: Context): Reply {
    const query = context.query.q ?? '';
    let matcher: Matcher;
    try {
      matcher = parseSearchQuery(query, this.#itemText);
    } catch (error) {
      if (!(error instanceof SearchQueryError)) throw error;
      return validationFailed([{ message: error.message, resource: 'Search', field: 'q', code: 'invalid' }]);
    }
    const sort = context.query.sort === 'created' ? 'created_at' : 'updated_at';
    const ascending = context.query.order === 'asc';
    const found = [...this.#items.values()].filter(matcher).sort((a, b) => {
      const difference = Date.parse(b[sort]) - Date.parse(a[sort]);
      return (ascending ? -difference : difference) || b.number - a.number;
    });
    // Only these three keys: octokit.paginate takes any other key of a search reply for the list and fails.
    return this.#page(
      found.map((item) => ({ ...this.#issueShape(item), score: 1 })),
      context,
      (items) => ({ total_count: found.length, incomplete_results: false, items }),
    );
  }

  /** The text `mentions:` searches: the body and every comment. */
  readonly #itemText = (item: FakeItem): string[] => [item.body, ...item.comments.map((comment) => comment.body)];

  #listIssues(context: Context): Reply {
    const { owner = '', repo = '' } = context.params;
    const state = context.query.state ?? 'open';
    const { creator, assignee, labels } = context.query;
    const wanted = labels ? labels.split(',').map((label) => label.trim().toLowerCase()) : [];
    const sort = context.query.sort === 'updated' ? 'updated_at' : 'created_at';
    const ascending = context.query.direction === 'asc';
    const found = this.#itemsOf(owner, repo)
      .filter((item) => state === 'all' || item.state === state)
      .filter((item) => creator === undefined || sameLogin(item.user, creator))
      .filter((item) => assignee === undefined || item.assignees.some((login) => sameLogin(login, assignee)))
      .filter((item) => wanted.every((label) => item.labels.some((name) => name.toLowerCase() === label)))
      .sort((a, b) => {
        const difference = Date.parse(b[sort]) - Date.parse(a[sort]);
        return (ascending ? -difference : difference) || b.number - a.number;
      });
    return this.#page(
      found.map((item) => this.#issueShape(item)),
      context,
    );
  }

  #checksOf(
    owner: string,
    repo: string,
    ref: string,
  ): { sha: string; check_runs: FakeCheckRun[]; statuses: FakeStatus[] } {
    // A branch name means the head of the pull whose head it is.
    const byBranch = this.#itemsOf(owner, repo).find((item) => item.kind === 'pull' && item.head_ref === ref);
    const sha = /^[0-9a-f]{40}$/i.test(ref) || !byBranch ? ref : byBranch.head_sha;
    const checks = this.#checks.get(`${repoKey(owner, repo)}@${sha}`) ?? { check_runs: [], statuses: [] };
    return { sha, ...checks };
  }

  #checkRuns(context: Context): Reply {
    const { owner = '', repo = '', ref = '' } = context.params;
    const { sha, check_runs } = this.#checksOf(owner, repo, ref);
    const example = restObject('GET /repos/{owner}/{repo}/commits/{ref}/check-runs 200');
    const exampleRun = this.#relocate(firstElement(example, 'check_runs'), owner, repo);
    const pulls = this.#itemsOf(owner, repo).filter((item) => item.kind === 'pull' && item.head_sha === sha);
    const runs = check_runs.map((run, index) => {
      const id = stableId(`${owner}/${repo}@${sha}/${run.name}/${index}`);
      const completed = run.status === 'completed';
      return {
        ...structuredClone(exampleRun),
        id,
        head_sha: sha,
        node_id: nodeId('CheckRun', id),
        url: `${this.apiUrl}/repos/${owner}/${repo}/check-runs/${id}`,
        html_url: `${htmlRoot}/${owner}/${repo}/runs/${id}`,
        status: run.status,
        conclusion: completed ? (run.conclusion ?? null) : null,
        completed_at: completed ? exampleRun.completed_at : null,
        name: run.name,
        pull_requests: pulls.map((item) => this.#pullReference(item)),
      };
    });
    return this.#ok({ ...example, total_count: runs.length, check_runs: runs });
  }

  #combinedStatus(context: Context): Reply {
    const { owner = '', repo = '', ref = '' } = context.params;
    const { sha, statuses } = this.#checksOf(owner, repo, ref);
    const example = this.#relocate(restObject('GET /repos/{owner}/{repo}/commits/{ref}/status 200'), owner, repo);
    const exampleStatus = firstElement(example, 'statuses');
    const states = statuses.map((status) => status.state);
    const state =
      states.includes('failure') || states.includes('error')
        ? 'failure'
        : states.length === 0 || states.includes('pending')
          ? 'pending'
          : 'success';
    const repository = child(example, 'repository');
    repository.name = repo;
    repository.full_name = `${owner}/${repo}`;
    repository.owner = this.#userObject(owner);
    return this.#ok({
      ...example,
      state,
      statuses: statuses.map((status, index) => {
        const id = stableId(`${owner}/${repo}@${sha}/${status.context}/${index}`);
        return {
          ...structuredClone(exampleStatus),
          url: `${this.apiUrl}/repos/${owner}/${repo}/statuses/${sha}`,
          id,
          node_id: nodeId('Status', id),
          state: status.state,
          context: status.context,
        };
      }),
      sha,
      total_count: statuses.length,
      commit_url: `${this.apiUrl}/repos/${owner}/${repo}/commits/${sha}`,
      url: `${this.apiUrl}/repos/${owner}/${repo}/commits/${sha}/status`,
    });
  }

  #addLabels(context: Context): Reply {
    return this.#withItem(context, (item) => {
      const parsed = parseBody(labelsBody, context.body, 'Label');
      if ('reply' in parsed) return parsed.reply;
      for (const name of parsed.value) {
        if (!item.labels.some((label) => label.toLowerCase() === name.toLowerCase())) item.labels.push(name);
      }
      this.#touch(item);
      return this.#ok(item.labels.map((name) => this.#labelObject(item, name)));
    });
  }

  #removeLabel(context: Context): Reply {
    return this.#withItem(context, (item) => {
      const name = (context.params.name ?? '').toLowerCase();
      const index = item.labels.findIndex((label) => label.toLowerCase() === name);
      if (index < 0) {
        return { status: 404, body: { message: 'Label does not exist', documentation_url: docsUrl, status: '404' } };
      }
      item.labels.splice(index, 1);
      this.#touch(item);
      return this.#ok(item.labels.map((label) => this.#labelObject(item, label)));
    });
  }

  #addAssignees(context: Context): Reply {
    return this.#withItem(context, (item) => {
      const parsed = parseBody(assigneesBody, context.body, 'Issue');
      if ('reply' in parsed) return parsed.reply;
      for (const login of parsed.value.assignees) {
        if (!item.assignees.some((existing) => sameLogin(existing, login))) item.assignees.push(login);
      }
      this.#touch(item);
      return this.#ok(this.#issueShape(item), 201);
    });
  }

  #requestReviewers(context: Context): Reply {
    return this.#withPull(context, (item) => {
      const parsed = parseBody(reviewersBody, context.body, 'PullRequest');
      if ('reply' in parsed) return parsed.reply;
      if (parsed.value.reviewers.some((login) => sameLogin(login, item.user))) {
        return validationFailed([
          {
            message: 'Review cannot be requested from pull request author.',
            resource: 'PullRequest',
            field: 'reviewers',
            code: 'invalid',
          },
        ]);
      }
      for (const login of parsed.value.reviewers) {
        if (!item.requested_reviewers.some((existing) => sameLogin(existing, login))) {
          item.requested_reviewers.push(login);
        }
      }
      this.#touch(item);
      return this.#ok(this.#pullShape(item), 201);
    });
  }

  #postComment(context: Context): Reply {
    return this.#withItem(context, (item) => {
      const parsed = parseBody(commentBody, context.body, 'IssueComment');
      if ('reply' in parsed) return parsed.reply;
      const comment = this.addComment(item.owner, item.repo, item.number, {
        user: callerLogin(context.caller),
        body: parsed.value.body,
      });
      return this.#ok(this.#commentShape(item, comment, 'created'), 201);
    });
  }

  #edit(context: Context, kind: FakeItem['kind']): Reply {
    const handle = (item: FakeItem): Reply => {
      const parsed = parseBody(editBody, context.body, kind === 'pull' ? 'PullRequest' : 'Issue');
      if ('reply' in parsed) return parsed.reply;
      const { state, title, body, labels, assignees } = parsed.value;
      if (item.merged && state === 'open') {
        return validationFailed([
          {
            message: 'state cannot be changed. The pull request has been merged.',
            resource: 'PullRequest',
            field: 'state',
            code: 'invalid',
          },
        ]);
      }
      if (state !== undefined) item.state = state;
      if (title !== undefined) item.title = title;
      if (body !== undefined) item.body = body ?? '';
      if (labels !== undefined && kind === 'issue') item.labels = [...new Set(labels)];
      if (assignees !== undefined && kind === 'issue') item.assignees = [...new Set(assignees)];
      this.#touch(item);
      this.#syncTimes(item, callerLogin(context.caller));
      return this.#ok(kind === 'pull' ? this.#pullShape(item) : this.#issueShape(item));
    };
    return kind === 'pull' ? this.#withPull(context, handle) : this.#withItem(context, handle);
  }

  #postReview(context: Context): Reply {
    return this.#withPull(context, (item) => {
      const parsed = parseBody(reviewBody, context.body, 'PullRequestReview');
      if ('reply' in parsed) return parsed.reply;
      const { event, commit_id, body } = parsed.value;
      const login = callerLogin(context.caller);
      const invalid = (message: string) =>
        validationFailed([{ message, resource: 'PullRequestReview', field: 'event', code: 'invalid' }]);
      if (event !== 'COMMENT' && sameLogin(login, item.user)) {
        return invalid(
          event === 'APPROVE'
            ? 'Can not approve your own pull request'
            : 'Can not request changes on your own pull request',
        );
      }
      if (event !== 'APPROVE' && !body) return invalid(`Review Body is required for ${event}.`);
      const review = this.addReview(item.owner, item.repo, item.number, {
        user: login,
        state: reviewStates[event],
        ...(commit_id === undefined ? {} : { commit_id }),
        ...(body === undefined ? {} : { body }),
      });
      return this.#ok(this.#reviewShape(item, review, 'created'));
    });
  }

  #merge(context: Context): Reply {
    return this.#withPull(context, (item) => {
      const parsed = parseBody(mergeBody, context.body, 'PullRequest');
      if ('reply' in parsed) return parsed.reply;
      if (item.state === 'closed' || item.merged || item.mergeable === false) {
        return { status: 405, body: restExample('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge 405') };
      }
      if (parsed.value.sha !== undefined && parsed.value.sha !== item.head_sha) {
        return { status: 409, body: restExample('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge 409') };
      }
      item.state = 'closed';
      item.merged = true;
      item.merge_method = parsed.value.merge_method ?? 'merge';
      this.#touch(item);
      this.#syncTimes(item, callerLogin(context.caller));
      const body = restObject('PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge 200');
      body.sha = this.#extra(item).mergeCommitSha;
      return this.#ok(body);
    });
  }

  #createIssue(context: Context): Reply {
    const { owner = '', repo = '' } = context.params;
    const parsed = parseBody(createIssueBody, context.body, 'Issue');
    if ('reply' in parsed) return parsed.reply;
    const number = Math.max(0, ...this.#itemsOf(owner, repo).map((item) => item.number)) + 1;
    const item = this.addIssue({
      owner,
      repo,
      number,
      title: parsed.value.title,
      body: parsed.value.body ?? '',
      user: callerLogin(context.caller),
      author_association: sameLogin(owner, callerLogin(context.caller)) ? 'OWNER' : 'NONE',
      labels: parsed.value.labels ?? [],
      assignees: parsed.value.assignees ?? [],
    });
    return this.#ok(this.#issueShape(item), 201);
  }

  /** Rewrites the example's repository (`octocat/Hello-World`) to `owner/repo` and its hosts to the fake's. */
  #relocate(value: Json, owner?: string, repo?: string): Json {
    return rewriteStrings(value, (text) =>
      this.#relocateHosts(owner && repo ? text.replaceAll(restExampleRepo, `${owner}/${repo}`) : text),
    );
  }

  #relocateHosts(text: string): string {
    return text
      .replace(/^https?:\/\/api\/?github\.com/, this.apiUrl)
      .replace(/^https?:\/\/api\.github\.com/, this.apiUrl)
      .replaceAll('github.com', 'github.test');
  }

  #userObject(login: string): Json {
    const encoded = encodeURIComponent(login);
    const object = rewriteStrings(structuredClone(userTemplate), (text) =>
      this.#relocateHosts(text.replace(/\/octocat(?=\/|\{|$)/, `/${encoded}`)),
    );
    const id = stableId(`user:${login.toLowerCase()}`);
    object.login = login;
    object.id = id;
    object.node_id = nodeId('User', id);
    object.avatar_url = `https://avatars.github.test/u/${id}?v=4`;
    object.type = login.endsWith('[bot]') ? 'Bot' : 'User';
    return object;
  }

  #labelObject(item: FakeItem, name: string): Json {
    const id = stableId(`label:${repoKey(item.owner, item.repo)}:${name.toLowerCase()}`);
    return {
      id,
      node_id: nodeId('Label', id),
      url: `${this.apiUrl}/repos/${item.owner}/${item.repo}/labels/${encodeURIComponent(name)}`,
      name,
      description: null,
      color: 'ededed',
      default: false,
    };
  }

  #repositoryObject(template: unknown, owner: string, repo: string): Json {
    const repository = asObject(template, 'repository');
    const id = stableId(`repo:${repoKey(owner, repo)}`);
    repository.id = id;
    repository.node_id = nodeId('Repository', id);
    repository.name = repo;
    repository.full_name = `${owner}/${repo}`;
    repository.owner = this.#userObject(owner);
    return repository;
  }

  /** Rewrites the example's item number and head sha in URLs to the item's. */
  #renumber(value: Json, item: FakeItem): Json {
    return rewriteStrings(value, (text) =>
      text.replaceAll(`/${exampleNumber}`, `/${item.number}`).replaceAll(exampleHeadSha, item.head_sha),
    );
  }

  #pullShape(item: FakeItem): Json {
    const extra = this.#extra(item);
    const pull = this.#renumber(
      this.#relocate(restObject('GET /repos/{owner}/{repo}/pulls/{pull_number} 200'), item.owner, item.repo),
      item,
    );
    const html = `${htmlRoot}/${item.owner}/${item.repo}/pull/${item.number}`;
    const assignees = item.assignees.map((login) => this.#userObject(login));
    for (const [side, ref, sha] of [
      ['head', item.head_ref, item.head_sha],
      ['base', item.base_ref, extra.baseSha],
    ] as const) {
      const branch = child(pull, side);
      branch.label = `${item.owner}:${ref}`;
      branch.ref = ref;
      branch.sha = sha;
      branch.user = this.#userObject(item.owner);
      branch.repo = this.#repositoryObject(branch.repo, item.owner, item.repo);
    }
    return Object.assign(pull, {
      url: `${this.apiUrl}/repos/${item.owner}/${item.repo}/pulls/${item.number}`,
      id: extra.id,
      node_id: nodeId('PullRequest', extra.id),
      html_url: html,
      diff_url: `${html}.diff`,
      patch_url: `${html}.patch`,
      number: item.number,
      state: item.state,
      locked: false,
      title: item.title,
      user: this.#userObject(item.user),
      body: item.body,
      labels: item.labels.map((name) => this.#labelObject(item, name)),
      milestone: null,
      active_lock_reason: null,
      created_at: item.created_at,
      updated_at: item.updated_at,
      closed_at: extra.closedAt ?? null,
      merged_at: item.merged ? (extra.mergedAt ?? null) : null,
      merge_commit_sha: extra.mergeCommitSha ?? null,
      assignee: assignees[0] ?? null,
      assignees,
      requested_reviewers: item.requested_reviewers.map((login) => this.#userObject(login)),
      requested_teams: [],
      author_association: item.author_association,
      auto_merge: null,
      draft: item.draft,
      merged: item.merged,
      mergeable: item.mergeable,
      rebaseable: item.mergeable,
      mergeable_state: item.mergeable_state,
      merged_by: item.merged && extra.mergedBy ? this.#userObject(extra.mergedBy) : null,
      comments: item.comments.length,
      review_comments: 0,
      additions: item.additions,
      deletions: item.deletions,
      changed_files: item.changed_files,
    });
  }

  #issueShape(item: FakeItem): Json {
    const extra = this.#extra(item);
    const issue = this.#renumber(
      this.#relocate(restObject('PATCH /repos/{owner}/{repo}/issues/{issue_number} 200'), item.owner, item.repo),
      item,
    );
    const assignees = item.assignees.map((login) => this.#userObject(login));
    const pullHtml = `${htmlRoot}/${item.owner}/${item.repo}/pull/${item.number}`;
    Object.assign(issue, {
      id: extra.id,
      node_id: nodeId(item.kind === 'pull' ? 'PullRequest' : 'Issue', extra.id),
      html_url: item.kind === 'pull' ? pullHtml : `${htmlRoot}/${item.owner}/${item.repo}/issues/${item.number}`,
      number: item.number,
      state: item.state,
      title: item.title,
      body: item.body,
      user: this.#userObject(item.user),
      pinned_comment: null,
      labels: item.labels.map((name) => this.#labelObject(item, name)),
      assignee: assignees[0] ?? null,
      assignees,
      milestone: null,
      locked: false,
      active_lock_reason: null,
      comments: item.comments.length,
      closed_at: extra.closedAt ?? null,
      created_at: item.created_at,
      updated_at: item.updated_at,
      closed_by: extra.closedBy ? this.#userObject(extra.closedBy) : null,
      author_association: item.author_association,
      state_reason: item.state === 'closed' ? (item.merged ? null : 'completed') : null,
    });
    if (item.kind === 'pull') {
      issue.pull_request = {
        url: `${this.apiUrl}/repos/${item.owner}/${item.repo}/pulls/${item.number}`,
        html_url: pullHtml,
        diff_url: `${pullHtml}.diff`,
        patch_url: `${pullHtml}.patch`,
        merged_at: item.merged ? (extra.mergedAt ?? null) : null,
      };
    } else {
      delete issue.pull_request;
    }
    return issue;
  }

  #association(item: FakeItem, login: string): string {
    if (sameLogin(login, item.owner)) return 'OWNER';
    if (sameLogin(login, item.user)) return item.author_association;
    return 'NONE';
  }

  #commentShape(item: FakeItem, comment: FakeComment, which: 'list' | 'created'): Json {
    const example =
      which === 'list'
        ? restListItem('GET /repos/{owner}/{repo}/issues/{issue_number}/comments 200')
        : restObject('POST /repos/{owner}/{repo}/issues/{issue_number}/comments 201');
    const shape = this.#relocate(example, item.owner, item.repo);
    const issuePath = `${item.owner}/${item.repo}/${item.kind === 'pull' ? 'pull' : 'issues'}/${item.number}`;
    return Object.assign(shape, {
      id: comment.id,
      node_id: nodeId('IssueComment', comment.id),
      url: `${this.apiUrl}/repos/${item.owner}/${item.repo}/issues/comments/${comment.id}`,
      html_url: `${htmlRoot}/${issuePath}#issuecomment-${comment.id}`,
      body: comment.body,
      user: this.#userObject(comment.user),
      created_at: comment.created_at,
      updated_at: comment.updated_at,
      issue_url: `${this.apiUrl}/repos/${item.owner}/${item.repo}/issues/${item.number}`,
      author_association: this.#association(item, comment.user),
      ...('pin' in shape ? { pin: null } : {}),
      minimized: null,
    });
  }

  #reviewShape(item: FakeItem, review: FakeReview, which: 'list' | 'created'): Json {
    const example =
      which === 'list'
        ? restListItem('GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews 200')
        : restObject('POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews 200');
    const shape = this.#relocate(example, item.owner, item.repo);
    const html = `${htmlRoot}/${item.owner}/${item.repo}/pull/${item.number}#pullrequestreview-${review.id}`;
    const pullUrl = `${this.apiUrl}/repos/${item.owner}/${item.repo}/pulls/${item.number}`;
    return Object.assign(shape, {
      id: review.id,
      node_id: nodeId('PullRequestReview', review.id),
      user: this.#userObject(review.user),
      body: review.body,
      state: review.state,
      html_url: html,
      pull_request_url: pullUrl,
      _links: { html: { href: html }, pull_request: { href: pullUrl } },
      submitted_at: review.submitted_at,
      commit_id: review.commit_id,
      author_association: this.#association(item, review.user),
    });
  }

  /** A pull as check runs and check suites name it: number, url, head and base. */
  #pullReference(item: FakeItem): Json {
    const extra = this.#extra(item);
    const repository = {
      id: stableId(`repo:${repoKey(item.owner, item.repo)}`),
      url: `${this.apiUrl}/repos/${item.owner}/${item.repo}`,
      name: item.repo,
    };
    return {
      url: `${this.apiUrl}/repos/${item.owner}/${item.repo}/pulls/${item.number}`,
      id: extra.id,
      number: item.number,
      head: { ref: item.head_ref, sha: item.head_sha, repo: repository },
      base: { ref: item.base_ref, sha: extra.baseSha, repo: repository },
    };
  }

  /** Sets the commit fields of check_run, check_suite, status and push deliveries from a pull. */
  #deliveryCommit(name: string, payload: Json, item: FakeItem): void {
    const checks = this.#checksOf(item.owner, item.repo, item.head_sha);
    if (name === 'check_run' || name === 'check_suite') {
      const target = child(payload, name);
      target.head_sha = item.head_sha;
      target.pull_requests = [this.#pullReference(item)];
      if (name === 'check_suite') {
        target.head_branch = item.head_ref;
        target.after = item.head_sha;
      }
      const run = checks.check_runs[0];
      if (name === 'check_run' && run) {
        target.name = run.name;
        target.status = run.status;
        target.conclusion = run.status === 'completed' ? (run.conclusion ?? null) : null;
      }
    } else if (name === 'status') {
      payload.sha = item.head_sha;
      child(payload, 'commit').sha = item.head_sha;
      const status = checks.statuses[0];
      if (status) {
        payload.state = status.state;
        payload.context = status.context;
      }
    } else if (name === 'push') {
      payload.ref = `refs/heads/${item.head_ref}`;
      payload.after = item.head_sha;
      if (typeof payload.head_commit === 'object' && payload.head_commit !== null) {
        (payload.head_commit as Json).id = item.head_sha;
      }
    }
  }
}

/** `sha256=<hex HMAC-SHA256 of body keyed with secret>`, as GitHub's X-Hub-Signature-256. */
export function signWebhook(secret: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
}

function sameLogin(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

function callerLogin(caller: Caller): string {
  return caller.kind === 'app' ? '' : caller.login;
}

function matchesEtag(ifNoneMatch: string, etag: string): boolean {
  if (ifNoneMatch.trim() === '*') return true;
  const weak = (tag: string) => tag.trim().replace(/^W\//, '');
  return ifNoneMatch.split(',').some((tag) => weak(tag) === weak(etag));
}

function matchSegments(pattern: string[], segments: string[]): Record<string, string> | undefined {
  if (pattern.length !== segments.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, part] of pattern.entries()) {
    const segment = segments[index] ?? '';
    if (part.startsWith(':')) params[part.slice(1)] = segment;
    else if (part !== segment) return undefined;
  }
  return params;
}

/**
 * The search query language the fake supports: whitespace-separated terms, all of which must match; a parenthesised
 * group of terms joined by `OR` matches when any matches; `-term` negates; a bare word matches the title or body.
 */
function parseSearchQuery(query: string, textOf: (item: FakeItem) => string[]): Matcher {
  const tokens = query.match(/\(|\)|(?:[^\s()"]|"[^"]*")+/g) ?? [];
  let position = 0;
  const parseOr = (): Matcher => {
    const alternatives = [parseAnd()];
    while (tokens[position] === 'OR') {
      position += 1;
      alternatives.push(parseAnd());
    }
    return (item) => alternatives.some((matcher) => matcher(item));
  };
  const parseAnd = (): Matcher => {
    const terms: Matcher[] = [];
    while (position < tokens.length && tokens[position] !== ')' && tokens[position] !== 'OR') {
      const token = tokens[position] ?? '';
      position += 1;
      if (token === 'AND') continue;
      if (token === '(') {
        terms.push(parseOr());
        if (tokens[position] !== ')') throw new SearchQueryError(`Unbalanced parentheses in the query \`${query}\`.`);
        position += 1;
      } else {
        terms.push(parseTerm(token, textOf));
      }
    }
    return (item) => terms.every((matcher) => matcher(item));
  };
  const matcher = parseOr();
  if (position < tokens.length) throw new SearchQueryError(`Unbalanced parentheses in the query \`${query}\`.`);
  return matcher;
}

function parseTerm(token: string, textOf: (item: FakeItem) => string[]): Matcher {
  if (token.startsWith('-') && token.length > 1) {
    const inner = parseTerm(token.slice(1), textOf);
    return (item) => !inner(item);
  }
  const colon = token.indexOf(':');
  const unquote = (text: string) => text.replace(/^"(.*)"$/, '$1');
  if (colon <= 0) {
    const word = unquote(token).toLowerCase();
    return (item) => `${item.title}\n${item.body}`.toLowerCase().includes(word);
  }
  const qualifier = token.slice(0, colon).toLowerCase();
  const value = unquote(token.slice(colon + 1));
  const lower = value.toLowerCase();
  const unsupported = () =>
    new SearchQueryError(`The fake GitHub does not support \`${qualifier}:${value}\` in a search query.`);
  switch (qualifier) {
    case 'is':
    case 'type':
    case 'state':
      switch (lower) {
        case 'pr':
        case 'pull-request':
          return (item) => item.kind === 'pull';
        case 'issue':
          return (item) => item.kind === 'issue';
        case 'open':
          return (item) => item.state === 'open';
        case 'closed':
          return (item) => item.state === 'closed';
        case 'merged':
          return (item) => item.merged;
        case 'unmerged':
          return (item) => item.kind === 'pull' && item.state === 'closed' && !item.merged;
        case 'draft':
          return (item) => item.draft;
        default:
          throw unsupported();
      }
    case 'archived':
      // The fake has no archived repositories.
      if (lower === 'false') return () => true;
      if (lower === 'true') return () => false;
      throw unsupported();
    case 'draft':
      if (lower === 'true') return (item) => item.draft;
      if (lower === 'false') return (item) => !item.draft;
      throw unsupported();
    case 'review-requested':
      return (item) => item.requested_reviewers.some((login) => sameLogin(login, value));
    case 'assignee':
      return (item) => item.assignees.some((login) => sameLogin(login, value));
    case 'author':
      return (item) => sameLogin(item.user, value);
    case 'label':
      return (item) => item.labels.some((label) => label.toLowerCase() === lower);
    case 'mentions': {
      const mention = new RegExp(`@${escapeRegExp(value)}(?![A-Za-z0-9-])`, 'i');
      return (item) => textOf(item).some((text) => mention.test(text));
    }
    case 'org':
    case 'user':
      return (item) => sameLogin(item.owner, value);
    case 'repo':
      return (item) => `${item.owner}/${item.repo}`.toLowerCase() === lower;
    default:
      throw unsupported();
  }
}

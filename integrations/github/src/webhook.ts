import path from 'node:path';
import type { WebhookContext, WebhookReply } from '@assistant/sdk';
import type { GithubPlatform, GithubSettings, ItemRef } from './github-settings.ts';
import { instanceFolder } from './github-settings.ts';
import { readStateFile, writeStateFile } from './state-file.ts';

/** How long a delivery id is remembered, and how many at most: GitHub redelivers within days, not weeks. */
const rememberMs = 7 * 24 * 60 * 60_000;
const rememberCount = 10_000;

interface Repository {
  name?: string;
  owner?: { login?: string };
}
interface Delivery {
  repository?: Repository;
  number?: number;
  pull_request?: { number?: number };
  issue?: { number?: number; pull_request?: unknown };
  check_run?: { pull_requests?: { number?: number }[] };
  check_suite?: { pull_requests?: { number?: number }[] };
  zen?: string;
}

interface Target {
  platform: GithubPlatform;
  ref: ItemRef;
}

/** The pull requests and issues a delivery is about, or why it is about none. */
export function deliveryTargets(event: string, delivery: Delivery): Target[] | string {
  const owner = delivery.repository?.owner?.login;
  const repo = delivery.repository?.name;
  if (!owner || !repo) return `a ${event} delivery without a repository`;
  const at = (platform: GithubPlatform, numbers: (number | undefined)[]): Target[] =>
    [...new Set(numbers)]
      .filter((number): number is number => Number.isInteger(number) && (number as number) > 0)
      .map((number) => ({ platform, ref: { owner, repo, number } }));
  switch (event) {
    case 'pull_request':
    case 'pull_request_review':
    case 'pull_request_review_comment':
    case 'pull_request_review_thread':
      return at('pull_requests', [delivery.pull_request?.number ?? delivery.number]);
    case 'issues':
    case 'issue_comment':
      return at(delivery.issue?.pull_request ? 'pull_requests' : 'issues', [delivery.issue?.number]);
    case 'check_run':
      return at(
        'pull_requests',
        (delivery.check_run?.pull_requests ?? []).map((pull) => pull.number),
      );
    case 'check_suite':
      return at(
        'pull_requests',
        (delivery.check_suite?.pull_requests ?? []).map((pull) => pull.number),
      );
    default:
      return `${event} events do not name a pull request or an issue`;
  }
}

/** Whether a repository is one the instance watches (`orgs`, `repos`; everything when both are empty). */
function inScope(settings: GithubSettings, ref: ItemRef): boolean {
  if (settings.orgs.length === 0 && settings.repos.length === 0) return true;
  const owner = ref.owner.toLowerCase();
  const full = `${owner}/${ref.repo.toLowerCase()}`;
  return (
    settings.orgs.some((org) => org.toLowerCase() === owner) ||
    settings.repos.some((repo) => repo.toLowerCase() === full)
  );
}

/** The delivery ids seen, per instance, in `data/github/<instance>/deliveries.json`: `{id: received at, ms}`. */
async function readDeliveries(file: string): Promise<Record<string, number>> {
  return (await readStateFile<{ deliveries?: Record<string, number> }>(file))?.deliveries ?? {};
}

/** Adds a delivery id to those read, forgetting the ones older than 7 days and the oldest beyond 10,000. */
async function recordDelivery(file: string, seen: Record<string, number>, id: string, nowMs = Date.now()) {
  const kept = Object.entries(seen)
    .filter(([, at]) => typeof at === 'number' && nowMs - at < rememberMs)
    .sort((left, right) => left[1] - right[1])
    .slice(-(rememberCount - 1));
  kept.push([id, nowMs]);
  await writeStateFile(file, { deliveries: Object.fromEntries(kept) });
}

/** One queue per deliveries file: the check for a replayed id and its record happen together, in this process. */
const locks = new Map<string, Promise<unknown>>();
function serialized<T>(key: string, run: () => Promise<T>): Promise<T> {
  const previous = locks.get(key) ?? Promise.resolve();
  const next = previous.then(run, run);
  const settled = next.catch(() => undefined);
  locks.set(key, settled);
  void settled.then(() => {
    if (locks.get(key) === settled) locks.delete(key);
  });
  return next;
}

function header(context: WebhookContext<GithubSettings>, name: string): string | undefined {
  const value = context.request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The delivery's JSON: the body, or its `payload` field when the webhook posts a form. */
function parseDelivery(context: WebhookContext<GithubSettings>): Delivery | undefined {
  const text = context.request.body.toString('utf8');
  try {
    if ((header(context, 'content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
      return JSON.parse(new URLSearchParams(text).get('payload') ?? '') as Delivery;
    }
    const parsed = JSON.parse(text) as unknown;
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Delivery) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `POST /api/integrations/<instance>/hooks/events`: a GitHub webhook delivery, its `X-Hub-Signature-256` already
 * checked by the server against the instance's `webhook_secret`. Enqueues collect for the pull request or issue the
 * delivery names (a pull request's check runs name it too), so a change is on the note in seconds; the scheduled
 * check stays the safety net for deliveries that never come. A delivery id seen before (GitHub's redelivery, or a
 * captured request replayed) is refused with 409; a ping is answered 200; events about nothing the instance
 * watches are accepted (202) and ignored, so GitHub does not mark the hook as failing.
 */
export async function receive(context: WebhookContext<GithubSettings>): Promise<WebhookReply> {
  const event = header(context, 'x-github-event');
  const deliveryId = header(context, 'x-github-delivery');
  if (!event || !deliveryId || !/^[A-Za-z0-9-]{1,100}$/.test(deliveryId)) {
    return { status: 400, body: { error: 'not a GitHub delivery: X-GitHub-Event and X-GitHub-Delivery are required' } };
  }
  const delivery = parseDelivery(context);
  if (!delivery) return { status: 400, body: { error: 'the delivery is not a JSON object' } };
  const file = path.join(context.dataDir, instanceFolder(context.instance.name), 'deliveries.json');
  return serialized(file, async () => {
    // Missing or damaged: start again (a replay older than the file would be collected once more, which is harmless).
    const seen = await readDeliveries(file);
    if (Object.hasOwn(seen, deliveryId)) {
      context.logger.warn({ delivery: deliveryId, event }, 'github webhook: a replayed delivery was refused');
      return { status: 409, body: { error: `delivery ${deliveryId} was received before` } };
    }
    if (event === 'ping') {
      await recordDelivery(file, seen, deliveryId);
      return { status: 200, body: { ok: true, zen: String(delivery.zen ?? '') } };
    }
    const targets = deliveryTargets(event, delivery);
    const watched =
      typeof targets === 'string' ? [] : targets.filter((target) => inScope(context.instance.settings, target.ref));
    const enqueued: string[] = [];
    let duplicates = 0;
    let disabled: string | undefined;
    for (const target of watched) {
      const outcome = await context.enqueue({
        type: `github.${target.platform}.collect`,
        payload: { owner: target.ref.owner, repo: target.ref.repo, number: target.ref.number },
      });
      if (outcome.status === 'enqueued') enqueued.push(outcome.id);
      else if (outcome.status === 'disabled') disabled = outcome.reason;
      // A collect of the item already waits (the queue's dedup), or one is rate limited: it reads the latest anyway.
      else duplicates += 1;
    }
    // In the ledger before the delivery is recorded and answered: a redelivery is the same event (by its id).
    await context.events?.emit({
      type: 'github.delivery',
      source: `github:${context.instance.name}`,
      nativeId: deliveryId,
      data: {
        instance: context.instance.name,
        event,
        delivery: deliveryId,
        ...deliveryFacts(delivery as unknown as Record<string, unknown>),
      },
    });
    // Recorded once its tasks are in the queue: a delivery that failed half-way can be redelivered from GitHub.
    await recordDelivery(file, seen, deliveryId);
    const ignored =
      typeof targets === 'string'
        ? targets
        : watched.length < targets.length
          ? "outside the instance's orgs and repos"
          : disabled;
    context.logger.info({ delivery: deliveryId, event, enqueued, duplicates, ignored }, 'github webhook delivery');
    return { status: 202, body: { enqueued, duplicates, ...(ignored ? { ignored } : {}) } };
  });
}

/** The delivery's action, repository and sender, as the ledger keeps them (short strings an outsider wrote). */
function deliveryFacts(delivery: Record<string, unknown>): Record<string, string> {
  const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);
  const record = (value: unknown) =>
    typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  const facts: Record<string, string | undefined> = {
    action: text(delivery.action),
    repository: text(record(delivery.repository)?.full_name),
    sender: text(record(delivery.sender)?.login),
  };
  return Object.fromEntries(Object.entries(facts).filter((entry): entry is [string, string] => entry[1] !== undefined));
}

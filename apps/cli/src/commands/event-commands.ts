import { AssistantError } from '@assistant/errors';
import {
  type EventLedger,
  type LedgerEvent,
  openEventLedger,
  parseCursor,
  parseEventTime,
  summarizeEventData,
  withoutControlCharacters,
} from '@assistant/events';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { listenForShutdown } from '../listen-for-shutdown.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

/** The most events one `events ls` prints. */
const maxListLimit = 10_000;
const eventTypeText = /^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/;

export interface EventsListOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** ISO 8601 or a duration back from now (`1h`). */
  since?: string | undefined;
  until?: string | undefined;
  type?: string[] | undefined;
  after?: string | undefined;
  limit?: string | undefined;
  json?: boolean | undefined;
}

export interface EventsTailOptions {
  globals: GlobalOptions;
  context: CliContext;
  type?: string[] | undefined;
  json?: boolean | undefined;
}

/** The ledger of the configured data directory, with the event types of its integrations. */
async function cliLedger(options: { globals: GlobalOptions; context: CliContext }): Promise<EventLedger> {
  const { config, integrations } = await loadCliConfig(options);
  return openEventLedger({
    dataDir: config.paths.dataDir,
    retentionDays: config.events.retentionDays,
    manifests: integrations.map((integration) => ({
      name: integration.manifest.domain,
      events: integration.manifest.events,
    })),
    warn: (message) => options.context.stderr.write(`warning: ${message}\n`),
  });
}

function typesOf(types: readonly string[] | undefined): string[] {
  const list = (types ?? [])
    .flatMap((type) => type.split(','))
    .map((type) => type.trim())
    .filter(Boolean);
  for (const type of list) {
    if (!eventTypeText.test(type)) {
      throw new AssistantError(
        'EVENT_QUERY_INVALID',
        `--type: expected a dotted event type such as mail.received or task.failed, got ${JSON.stringify(type)}`,
      );
    }
  }
  return list;
}

/** One line per event: local time, type, id, a short summary of its data; a `problem` is marked. */
export function formatEventLine(event: LedgerEvent): string {
  const summary = summarizeEventData({ data: event.data });
  const problem = event.problem === undefined ? '' : `  PROBLEM: ${withoutControlCharacters(event.problem)}`;
  return `${formatLocalTime(new Date(event.at))}  ${event.type}  ${event.id}${summary ? `  ${summary}` : ''}${problem}\n`;
}

/**
 * `assistant events ls [--since 1h|ISO] [--until ISO] [--type T]... [--limit N] [--after CURSOR] [--json]`: events in
 * the order appended. When more are left, the cursor to go on from is printed (to stderr, or as `next` in JSON).
 */
export async function eventsListCommand(options: EventsListOptions): Promise<void> {
  const { context } = options;
  const nowMs = Date.now();
  const limit = options.limit === undefined ? 100 : Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > maxListLimit) {
    throw new AssistantError('USAGE', `--limit expects a whole number 1-${maxListLimit}, got \`${options.limit}\``);
  }
  if (options.after !== undefined) parseCursor(options.after);
  const query = {
    ...(options.since === undefined ? {} : { since: parseEventTime({ text: options.since, name: '--since', nowMs }) }),
    ...(options.until === undefined ? {} : { until: parseEventTime({ text: options.until, name: '--until', nowMs }) }),
    types: typesOf(options.type),
    ...(options.after === undefined ? {} : { after: options.after }),
    limit,
  };
  const ledger = await cliLedger(options);
  const page = await ledger.list(query);
  if (options.json) return writeJson(context, page);
  for (const event of page.events) context.stdout.write(formatEventLine(event));
  if (page.events.length === 0) context.stderr.write('no events match\n');
  if (page.next) context.stderr.write(`more: assistant events ls --after ${page.next} (with the same filters)\n`);
}

/** `assistant events tail [--type T]... [--json]`: prints events as they are appended, until Ctrl-C. */
export async function eventsTailCommand(options: EventsTailOptions): Promise<void> {
  const { context } = options;
  const types = new Set(typesOf(options.type));
  const ledger = await cliLedger(options);
  const shutdown = listenForShutdown();
  try {
    const after = await ledger.end();
    context.stderr.write(`following data/events/ from ${after}; Ctrl-C to stop\n`);
    for await (const event of ledger.follow({ after, signal: shutdown.signal })) {
      if (types.size > 0 && !types.has(event.type)) continue;
      // JSON Lines: one event per line, so a pipe (jq, grep) sees each as it comes.
      context.stdout.write(options.json ? `${JSON.stringify(event)}\n` : formatEventLine(event));
    }
  } finally {
    shutdown[Symbol.dispose]();
  }
}

import { AssistantError } from '@assistant/errors';
import { type EventLedger, parseCursor, parseEventTime } from '@assistant/events';
import * as z from 'zod';
import { errorBodySchema, type RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';
import { type EventStreamLimiter, openEventStream } from './event-stream.ts';

/** A comment line on an idle event stream this often keeps proxies and clients from closing it. */
const defaultHeartbeatMs = 15_000;
/** The most events one page holds. */
const maxEventPageLimit = 1_000;

export interface EventRoutesOptions {
  /** The installation's ledger (`data/events/`), opened by the server for reading. */
  events: EventLedger;
  /** Aborted when the server shuts down: open event streams end. */
  signal: AbortSignal;
  /** Counts each client's open event streams (shared with chat streams and the dashboard's `/live`). */
  streams: EventStreamLimiter;
  /** @default 15 s */
  heartbeatMs?: number;
}

const eventTypeText = /^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/;

/** `type=a&type=b` or `type=a,b`: the types to keep. */
const typesQuery = z
  .union([z.string(), z.array(z.string())])
  .optional()
  .transform((value) =>
    (value === undefined ? [] : Array.isArray(value) ? value : [value])
      .flatMap((entry) => entry.split(','))
      .map((entry) => entry.trim())
      .filter((entry) => entry !== ''),
  );

const listQuery = z.strictObject({
  since: z.string().max(100).optional(),
  until: z.string().max(100).optional(),
  type: typesQuery,
  after: z.string().max(100).optional(),
  limit: z.coerce.number().int().min(1).max(maxEventPageLimit).default(100),
});

const eventSchema = z.object({
  id: z.string(),
  type: z.string(),
  at: z.string(),
  source: z.string(),
  native_id: z.string(),
  caused_by: z.array(z.string()).optional(),
  data: z.record(z.string(), z.unknown()),
  problem: z.string().optional(),
  cursor: z.string(),
});

/** Checks the types of a query: a bad one is a clear 400, not a filter that silently matches nothing. */
export function checkEventTypes(types: readonly string[]): string[] {
  for (const type of types) {
    if (!eventTypeText.test(type)) {
      throw new AssistantError(
        'EVENT_QUERY_INVALID',
        `type: expected a dotted event type such as mail.received or task.failed, got ${JSON.stringify(type)}`,
      );
    }
  }
  return [...types];
}

/**
 * `/api/events`: the event ledger (docs/events.md), read only. A page in the order appended with `next` to go on;
 * and a server-sent event stream of what is appended from now (or from a cursor), across the server's and the
 * worker's appends.
 */
export function registerEventRoutes(app: AssistantServer, routes: RouteTable, options: EventRoutesOptions): void {
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  const shutdown = AbortSignal.any([options.signal, closing.signal]);
  const heartbeatMs = options.heartbeatMs ?? defaultHeartbeatMs;

  routes.add(app, {
    method: 'GET',
    url: '/api/events',
    tag: 'events',
    summary: 'Events of the ledger, filtered and paged',
    description: `In the order appended (oldest first). \`since\`/\`until\`: ISO 8601 or a duration back from now (\`1h\`, \`7d\`). \`type\`: repeat it or separate with commas. \`after\`: a cursor (the \`next\` of the previous page, or an event's \`cursor\`). \`limit\` ≤ ${maxEventPageLimit}, default 100. An event whose data broke its schema carries \`problem\`.`,
    query: listQuery,
    inputErrorCode: 'EVENT_QUERY_INVALID',
    responses: {
      200: {
        description: '`events` and, while more are left, `next` (pass it as `after`)',
        schema: z.object({ events: z.array(eventSchema), next: z.string().optional() }),
      },
      400: {
        description: 'EVENT_QUERY_INVALID (a time or type) or EVENT_CURSOR_INVALID (`after`)',
        schema: errorBodySchema,
      },
    },
    handler: async ({ query }) => {
      const nowMs = Date.now();
      if (query.after !== undefined) parseCursor(query.after);
      const page = await options.events.list({
        ...(query.since === undefined ? {} : { since: parseEventTime({ text: query.since, name: 'since', nowMs }) }),
        ...(query.until === undefined ? {} : { until: parseEventTime({ text: query.until, name: 'until', nowMs }) }),
        types: checkEventTypes(query.type),
        ...(query.after === undefined ? {} : { after: query.after }),
        limit: query.limit,
      });
      return page;
    },
  });

  routes.add(app, {
    method: 'GET',
    url: '/api/events/stream',
    tag: 'events',
    summary: 'New events as server-sent events',
    description:
      'Each event: `event: <type>`, `id: <cursor>` (a resume point) and the event as JSON `data`. Starts at the end (only what is appended next) unless `after` or `Last-Event-ID` (which wins) names a cursor. `type` filters as on `GET /api/events`. A comment every 15 s keeps it open; it ends when the client goes away or the server stops.',
    query: z.strictObject({ type: typesQuery, after: z.string().max(100).optional() }),
    inputErrorCode: 'EVENT_QUERY_INVALID',
    responses: {
      200: {
        description: 'text/event-stream: `event: <type>`, `id: <cursor>`, `data: <json>`',
        contentType: 'text/event-stream',
      },
      400: {
        description: 'EVENT_QUERY_INVALID (a type) or EVENT_CURSOR_INVALID (`after` or Last-Event-ID)',
        schema: errorBodySchema,
      },
      429: {
        description:
          'EVENT_STREAMS_FULL: this client already holds `server.event_streams_per_client` streams; `retry-after` says when to try again',
        schema: errorBodySchema,
      },
    },
    handler: async ({ query, request, reply }) => {
      const types = new Set(checkEventTypes(query.type));
      const lastEventId = request.headers['last-event-id'];
      const resumeFrom = typeof lastEventId === 'string' && lastEventId !== '' ? lastEventId : query.after;
      // Checked before the stream opens, so a bad cursor is a 400 and not a stream that ends at once.
      if (resumeFrom !== undefined) parseCursor(resumeFrom);
      const after = resumeFrom ?? (await options.events.end());
      const release = options.streams.acquire(request, reply);
      const stream = new AbortController();
      const signal = AbortSignal.any([stream.signal, shutdown]);
      const raw = openEventStream(reply);
      raw.on('close', () => stream.abort());
      if (raw.destroyed) stream.abort();
      const write = async (text: string) => {
        if (signal.aborted || raw.destroyed) return;
        // A slow client: wait for its buffer to drain rather than hold the ledger in memory.
        if (!raw.write(text)) {
          await new Promise<void>((resolve) => {
            const done = () => {
              raw.off('drain', done);
              signal.removeEventListener('abort', done);
              resolve();
            };
            raw.on('drain', done);
            signal.addEventListener('abort', done, { once: true });
          });
        }
      };
      const heartbeat = setInterval(() => {
        if (!signal.aborted) raw.write(': heartbeat\n\n');
      }, heartbeatMs);
      try {
        await write(`: events after ${after}\n\n`);
        for await (const event of options.events.follow({ after, signal })) {
          if (types.size > 0 && !types.has(event.type)) continue;
          await write(`event: ${event.type}\nid: ${event.cursor}\ndata: ${JSON.stringify(event)}\n\n`);
        }
      } catch (error) {
        request.log.warn({ err: error }, 'the event ledger stream broke off');
      } finally {
        clearInterval(heartbeat);
        raw.end();
        release();
      }
    },
  });
}

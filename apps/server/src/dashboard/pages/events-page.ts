import { AssistantError } from '@assistant/errors';
import { compareCursors, type LedgerEvent, parseCursor, parseEventTime, summarizeEventData } from '@assistant/events';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { checkEventTypes } from '../../routes/event-routes.ts';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, queryField } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import { sendPage, timeTag } from '../layout.ts';

/** Events per page, newest first. */
const eventsPerPage = 50;
/** What the ledger is read in, looking for a page. */
const readBatch = 1_000;
/** `ev-` and 20 hex digits: an event; anything else in `caused_by` is a task id. */
const eventIdPattern = /^ev-[0-9a-f]{20}$/;

interface EventsFilter {
  types: string[];
  since?: string;
  until?: string;
  /** Only events before this cursor (the next page, going back in time). */
  before?: string;
}

/**
 * The Events page: the ledger (`data/events/`), newest first, filtered by type and time, 50 a page with a link to
 * older ones; each event's data shown escaped, its lineage (`caused_by`) linked to the events and tasks that caused
 * it, a `problem` marked. The first page follows the ledger live: new events of the filter's types are pushed in at
 * the top (the `events` topic of `/live`). `/events/<id>` shows one event.
 */
export function registerEventsPage(app: AssistantServer, context: DashboardContext): void {
  context.live.registerTopic('events', async ({ param, send, signal }) => {
    // `*` or a comma list of types, then `@` and the cursor the page was rendered from: nothing appended between the
    // page and its stream is missed. Without a (valid) cursor, from the end of the ledger when the stream opens.
    const at = param.lastIndexOf('@');
    const typeList = at < 0 ? param : param.slice(0, at);
    const cursor = at < 0 ? undefined : param.slice(at + 1);
    const after = cursor !== undefined && /^\d{4}-\d{2}-\d{2}:\d{1,15}$/.test(cursor) ? cursor : undefined;
    const types = new Set(typeList === '*' ? [] : typeList.split(',').filter((type) => type !== ''));
    for await (const event of context.events.follow({ signal, ...(after ? { after } : {}) })) {
      if (types.size > 0 && !types.has(event.type)) continue;
      send('ledger-event', renderEventRow(event).toString());
    }
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/events',
    handler: async (request, reply) => sendEventsPage(request, reply, context),
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/events/:id',
    handler: async (request, reply) => {
      const id = (request.params as { id: string }).id;
      const event = eventIdPattern.test(id) ? await context.events.get(id) : undefined;
      if (!event) throw new AssistantError('NOT_FOUND', `no event ${JSON.stringify(id)} in the ledger (data/events/)`);
      const body = html`<p><a href="/events">All events</a> · <a href="/events${queryString({ type: event.type })}">${event.type} events</a></p>
${renderEventDetails(event, { open: true })}`;
      return sendPage(reply, { request, title: `Event ${event.id}`, section: 'events', body });
    },
  });
}

function filterOf(request: FastifyRequest): EventsFilter {
  const nowMs = Date.now();
  const field = (name: string) => {
    const value = queryField(request, name)?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const typeText = field('type');
  const since = field('since');
  const until = field('until');
  const before = field('before');
  if (before !== undefined) parseCursor(before);
  return {
    types: checkEventTypes(typeText === undefined ? [] : typeText.split(',').map((type) => type.trim())),
    ...(since === undefined ? {} : { since: parseEventTime({ text: since, name: 'since', nowMs }) }),
    ...(until === undefined ? {} : { until: parseEventTime({ text: until, name: 'until', nowMs }) }),
    ...(before === undefined ? {} : { before }),
  };
}

/**
 * The newest `eventsPerPage` events of the filter before `before`, newest first, and whether older ones are left.
 * The ledger is read oldest first (its files are append-only), keeping the last page's worth.
 */
async function newestPage(
  context: DashboardContext,
  filter: EventsFilter,
): Promise<{ events: LedgerEvent[]; older: boolean }> {
  const kept: LedgerEvent[] = [];
  let older = false;
  let after: string | undefined;
  for (;;) {
    const page = await context.events.list({
      ...(filter.since === undefined ? {} : { since: filter.since }),
      ...(filter.until === undefined ? {} : { until: filter.until }),
      types: filter.types,
      ...(after === undefined ? {} : { after }),
      limit: readBatch,
    });
    let past = false;
    for (const event of page.events) {
      if (filter.before !== undefined && compareCursors(event.cursor, filter.before) >= 0) {
        past = true;
        break;
      }
      kept.push(event);
      if (kept.length > eventsPerPage) {
        kept.shift();
        older = true;
      }
    }
    if (past || !page.next) break;
    after = page.next;
  }
  return { events: kept.reverse(), older };
}

async function sendEventsPage(
  request: FastifyRequest,
  reply: FastifyReply,
  context: DashboardContext,
): Promise<FastifyReply> {
  const filter = filterOf(request);
  // Taken before the page is read: an event appended meanwhile may show twice, never not at all.
  const from = await context.events.end();
  const { events, older } = await newestPage(context, filter);
  const typeText = filter.types.join(',');
  const raw = (name: string) => queryField(request, name) ?? '';
  const known = context.events.registry.names();
  // Only the newest page, with no upper bound, can take new events at its top.
  const following = filter.before === undefined && filter.until === undefined;
  const oldest = events.at(-1);
  const olderLink =
    older && oldest
      ? html`<p><a href="/events${queryString({ type: typeText || undefined, since: raw('since') || undefined, until: raw('until') || undefined, before: oldest.cursor })}">Older events</a></p>`
      : '';
  const body = html`<form method="get" action="/events" class="filters">
<label>Type <input name="type" list="event-types" value="${typeText}" placeholder="mail.received,task.failed"></label>
<datalist id="event-types">${known.map((name) => html`<option value="${name}">`)}</datalist>
<label>Since <input name="since" value="${raw('since')}" placeholder="1h, 7d or 2026-11-28"></label>
<label>Until <input name="until" value="${raw('until')}" placeholder="ISO 8601"></label>
<button type="submit">Filter</button>
${filter.before === undefined ? '' : html`<a href="/events${queryString({ type: typeText || undefined })}">Newest</a>`}
</form>
${events.length === 0 ? html`<p class="muted" id="events-empty">No events${filter.types.length > 0 || filter.since || filter.until ? ' match' : ' yet'}.</p>` : ''}
<ul class="events" id="events"${following ? html` sse-swap="ledger-event" hx-swap="afterbegin"` : ''}>${events.map((event) => renderEventRow(event))}</ul>
${olderLink}`;
  return sendPage(reply, {
    request,
    title: 'Events',
    section: 'events',
    body,
    ...(following
      ? { live: `/live${queryString({ topics: 'approvals', events: `${typeText || '*'}@${from}` })}` }
      : {}),
  });
}

/** One event in the list: time, type, id, a summary; the data and lineage behind a disclosure. All escaped. */
function renderEventRow(event: LedgerEvent): SafeHtml {
  return html`<li class="event${event.problem === undefined ? '' : ' problem'}" id="${event.id}">${renderEventDetails(event, { open: false })}</li>`;
}

function renderEventDetails(event: LedgerEvent, options: { open: boolean }): SafeHtml {
  const summary = summarizeEventData({ data: event.data });
  const lineage =
    event.caused_by && event.caused_by.length > 0
      ? html`<p>Caused by ${event.caused_by.map((cause, index) => html`${index > 0 ? ', ' : ''}${causeLink(cause)}`)}</p>`
      : '';
  return html`<details${options.open ? html` open` : ''}>
<summary>${timeTag(event.at)} <a href="/events/${event.id}"><code>${event.type}</code></a> <span class="muted">${event.id}</span> ${summary}${event.problem === undefined ? '' : html` <strong class="bad">problem: ${event.problem}</strong>`}</summary>
<p>Source <code>${event.source}</code>, native id <code>${event.native_id}</code>.</p>
${lineage}
<pre>${JSON.stringify(event.data, null, 2)}</pre>
</details>`;
}

/** An event id links to its event, anything else (a queue task id) to its task. */
function causeLink(cause: string): SafeHtml {
  if (eventIdPattern.test(cause)) return html`<a href="/events/${cause}">${cause}</a>`;
  return html`<a href="/tasks/${encodeURIComponent(cause)}">task ${cause}</a>`;
}

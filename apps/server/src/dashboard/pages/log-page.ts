import { AssistantError } from '@assistant/errors';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, queryField } from '../dashboard-route.ts';
import { html, queryString, type SafeHtml } from '../html.ts';
import {
  formatLogDate,
  logDates,
  parseLogDate,
  readLogAfter,
  readLogBefore,
  renderLinesWithin,
} from '../human-log-view.ts';
import { logLinkSubjects } from '../item-subjects.ts';
import { sendFragment, sendPage } from '../layout.ts';

/** Lines per page of the Log page, at most, and the HTML they may take: the page stays under 100 KB. */
const linesPerPage = 200;
const linesMaxBytes = 64 * 1024;
/** Days listed under "Other days". */
const listedDates = 62;

/**
 * The daily human log: `/log` is today's, `/log/YYYY-MM-DD` another day's; the last 200 lines, with a link to the
 * lines before (`?before=<byte offset>`). Today's page follows the file live: on each `log` event the cursor at the
 * end of the list fetches what was appended after its byte offset (`/log/<date>/after?offset=N`) and replaces itself
 * with those lines and a new cursor. Without JavaScript a reload shows the same.
 */
export function registerLogPage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/log',
    handler: async (request, reply) => {
      // The date form posts nothing: it asks for `/log?date=…`, which goes to the day's own address.
      const asked = queryField(request, 'date');
      if (asked !== undefined && asked !== '') {
        return reply.redirect(`/log/${formatLogDate(requireDate(asked))}`, 303);
      }
      return sendLogPage(request, reply, context, new Date());
    },
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/log/:date',
    handler: async (request, reply) =>
      sendLogPage(request, reply, context, requireDate((request.params as { date: string }).date)),
  });

  dashboardRoute(app, {
    method: 'GET',
    url: '/log/:date/after',
    handler: async (request, reply) => {
      const day = requireDate((request.params as { date: string }).date);
      const offset = requireOffset(queryField(request, 'offset'), 'offset');
      const file = context.humanLog.fileFor(day);
      const chunk = await readLogAfter(file, { afterOffset: offset, maxLines: linesPerPage });
      const gap = chunk.skipped
        ? html`<li class="muted">… more lines were written than a live update shows; <a href="/log/${formatLogDate(day)}">reload</a> to page through them.</li>`
        : '';
      const shown = renderLinesWithin(chunk, linesMaxBytes, await logLinkSubjects(context, chunk.lines));
      const cut =
        shown.startOffset > chunk.startOffset
          ? html`<li class="muted">… more lines were written than a live update shows; <a href="/log/${formatLogDate(day)}">reload</a> to page through them.</li>`
          : '';
      return sendFragment(reply, html`${chunk.skipped ? gap : cut}${shown.items}${cursor(day, chunk.endOffset)}`);
    },
  });
}

function requireDate(text: string | undefined): Date {
  const date = parseLogDate(text);
  if (!date) {
    throw new AssistantError('BAD_REQUEST', `Expected a date as YYYY-MM-DD (a real day), got \`${text ?? ''}\``);
  }
  return date;
}

function requireOffset(text: string | undefined, name: string): number {
  if (text === undefined || !/^\d{1,15}$/.test(text)) {
    throw new AssistantError(
      'BAD_REQUEST',
      `Expected \`${name}\` to be a byte offset (a whole number), got \`${text ?? ''}\``,
    );
  }
  return Number(text);
}

/**
 * The element that fetches the lines appended after `offset` when the live stream says the log grew (dashboard.js
 * sends it `live-refresh`, at most once a second and once after the last change).
 */
function cursor(day: Date, offset: number): SafeHtml {
  return html`<li hidden class="log-cursor" hx-get="/log/${formatLogDate(day)}/after${queryString({ offset: String(offset) })}" hx-trigger="live-refresh" data-live-events="log" hx-swap="outerHTML"></li>`;
}

async function sendLogPage(
  request: FastifyRequest,
  reply: FastifyReply,
  context: DashboardContext,
  day: Date,
): Promise<FastifyReply> {
  const date = formatLogDate(day);
  const today = formatLogDate(new Date());
  const beforeText = queryField(request, 'before');
  const before = beforeText === undefined || beforeText === '' ? undefined : requireOffset(beforeText, 'before');
  const [chunk, dates] = await Promise.all([
    readLogBefore(context.humanLog.fileFor(day), {
      maxLines: linesPerPage,
      ...(before === undefined ? {} : { beforeOffset: before }),
    }),
    logDates(context.humanLog.directory),
  ]);
  const atEnd = chunk.endOffset >= chunk.fileSize;
  // A line about an item links to its note by the item's subject (the mail's subject, the pull request's title).
  const shown = renderLinesWithin(chunk, linesMaxBytes, await logLinkSubjects(context, chunk.lines));
  const following = date === today && before === undefined;
  const body = html`${renderDateNavigation(date, today, dates)}
<section aria-labelledby="log-lines-title">
<h2 id="log-lines-title">${date === today ? html`Today, ${date}` : date}</h2>
${renderPager(date, shown.startOffset)}
${
  chunk.lines.length === 0 && !following
    ? html`<p class="muted">${dates.includes(date) ? 'No lines here.' : 'Nothing was logged that day.'}</p>`
    : html`${chunk.lines.length === 0 ? html`<p class="muted">Nothing logged today yet; new lines appear here.</p>` : ''}<ul class="log" id="log-lines">${shown.items}${following ? cursor(day, chunk.endOffset) : ''}</ul>`
}
${!atEnd && before !== undefined ? html`<p><a href="/log/${date}">Latest lines</a></p>` : ''}
</section>`;
  return sendPage(reply, {
    request,
    title: 'Log',
    section: 'log',
    body,
    ...(following ? { live: '/live?topics=log' } : {}),
  });
}

function renderPager(date: string, startOffset: number): SafeHtml {
  if (startOffset === 0) return html``;
  return html`<nav class="pager" aria-label="Lines of this day"><a href="/log/${date}${queryString({ before: String(startOffset) })}">Earlier lines</a></nav>`;
}

function renderDateNavigation(date: string, today: string, dates: readonly string[]): SafeHtml {
  // `dates` is newest first; the neighbours are the nearest days that have a log.
  const previous = dates.find((candidate) => candidate < date);
  const next = [...dates].reverse().find((candidate) => candidate > date && candidate <= today);
  const links = [
    previous ? html`<a href="/log/${previous}" rel="prev">← ${previous}</a>` : '',
    next ? html`<a href="/log/${next}" rel="next">${next} →</a>` : '',
    date === today ? '' : html`<a href="/log">Today</a>`,
  ];
  const others = dates.slice(0, listedDates);
  return html`<nav class="log-days" aria-label="Days">
<div class="pager">${links}</div>
<form method="get" action="/log" class="toolbar">
<div class="field"><label for="log-date">Day</label><input id="log-date" name="date" type="date" value="${date}" max="${today}" required></div>
<button type="submit">Show that day</button>
</form>
${
  others.length === 0
    ? ''
    : html`<details class="log-dates"><summary>Days with a log (${dates.length})</summary><ul class="plain log-date-list">${others.map(
        (day) => html`<li><a href="/log/${day}"${day === date ? html` aria-current="page"` : ''}>${day}</a></li>`,
      )}</ul>${dates.length > others.length ? html`<p class="muted">Older days: pick one above.</p>` : ''}</details>`
}
</nav>`;
}

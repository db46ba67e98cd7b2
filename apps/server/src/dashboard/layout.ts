import { assistantVersion } from '@assistant/process';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { csrfTokenOf, sessionOf } from './dashboard-auth.ts';
import { html, type SafeHtml } from './html.ts';
import { pageHead } from './page-head.ts';

const dashboardSections = [
  { id: 'overview', href: '/', label: 'Overview' },
  { id: 'tasks', href: '/tasks', label: 'Tasks' },
  { id: 'approvals', href: '/approvals', label: 'Approvals' },
  { id: 'notes', href: '/notes', label: 'Notes' },
  { id: 'contacts', href: '/contacts', label: 'Contacts' },
  { id: 'my-tasks', href: '/my-tasks', label: 'My tasks' },
  { id: 'chat', href: '/chat', label: 'Chat' },
  { id: 'events', href: '/events', label: 'Events' },
  { id: 'hooks', href: '/hooks', label: 'Hooks' },
  { id: 'personas', href: '/personas', label: 'Personas' },
  { id: 'log', href: '/log', label: 'Log' },
  { id: 'history', href: '/history', label: 'History' },
  { id: 'config', href: '/config', label: 'Config' },
] as const;

type DashboardSection = (typeof dashboardSections)[number]['id'];

export interface PageOptions {
  request: FastifyRequest;
  /** The page's own title; the document title adds " · Assistant". */
  title: string;
  /** The navigation entry to mark as current. */
  section: DashboardSection | undefined;
  body: SafeHtml;
  /**
   * The live stream this page listens to (`/live?topics=queue,log`, plus `task=<id>` or `chat=<id>`). Elements take
   * pushed HTML with `sse-swap="<event>"`, or refresh themselves with `hx-trigger="live-refresh"
   * data-live-events="queue log"` (dashboard.js: at most once a second, never missing the last change; htmx's own
   * `throttle:` drops it). @default no live parts
   */
  live?: string;
}

/** Counts the navigation shows beside a section, per request (set by a hook before the page renders). */
export interface NavCounts {
  /** Approval requests waiting for the owner. */
  approvals: number;
}

const navCounts = new WeakMap<FastifyRequest, NavCounts>();

/** Gives the page this request renders its navigation counts (register-dashboard.ts, for logged-in requests). */
export function setNavCounts(request: FastifyRequest, counts: NavCounts): void {
  navCounts.set(request, counts);
}

/**
 * The count of pending approvals beside "Approvals", on every page: refreshed from `/nav/approvals` when the page's
 * live stream tells of a change in the approvals folder. Hidden (but present, for the refresh) at zero.
 */
export function approvalsBadge(count: number): SafeHtml {
  return html`<span id="nav-approvals-count" class="nav-count" hx-get="/nav/approvals" hx-trigger="live-refresh" data-live-events="approvals" hx-swap="outerHTML"${count === 0 ? html` hidden` : ''}> ${count}<span class="visually-hidden"> waiting</span></span>`;
}

/** The hidden CSRF field every form of a page carries. */
export function csrfField(request: FastifyRequest): SafeHtml {
  return html`<input type="hidden" name="_csrf" value="${csrfTokenOf(request)}">`;
}

/**
 * A whole page: semantic landmarks, a skip link, the navigation, and the scripts (htmx, its SSE extension and ours,
 * all from /assets: the CSP allows no inline script or style). A browser gets it through the bootstrap page, with the
 * login's origin key (decision 0023); its forms still post as plain forms.
 */
export function renderPage(options: PageOptions): string {
  const { request } = options;
  const session = sessionOf(request);
  const csrf = csrfTokenOf(request);
  const headers = csrf === '' ? undefined : JSON.stringify({ 'x-csrf-token': csrf });
  const counts = navCounts.get(request);
  const nav = dashboardSections.map(
    (section) =>
      html`<li><a href="${section.href}"${section.id === options.section ? html` aria-current="page"` : ''}>${section.label}${section.id === 'approvals' && counts ? approvalsBadge(counts.approvals) : ''}</a></li>`,
  );
  const logout = session
    ? html`<form method="post" action="/logout" class="logout">${csrfField(request)}<button type="submit" class="link">Log out</button></form>`
    : '';
  // An EventSource cannot send the origin key's header: the stream takes the session's stream token in its query,
  // which this page (served only to a request with the key) is the one place to find (decision 0023).
  // The nav's approvals count follows the approvals folder on every page that has a live stream.
  const topics = options.live && counts ? withApprovalsTopic(options.live) : options.live;
  const live =
    topics && session ? `${topics}${topics.includes('?') ? '&' : '?'}stream_token=${session.streamToken}` : topics;
  const liveAttributes = live ? html` hx-ext="sse" sse-connect="${live}"` : '';
  return `<!doctype html>\n${html`<html lang="en">
${pageHead({ title: `${options.title} · Assistant` })}
<body${headers ? html` hx-headers="${headers}"` : ''}${liveAttributes}>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
<a class="brand" href="/">Assistant</a>
<nav aria-label="Sections"><ul>${nav}</ul></nav>
<span id="live-status" class="live-status" role="status" aria-live="polite">${options.live ? 'connecting…' : ''}</span>
${logout}
</header>
<div id="flash" class="flash" role="alert" aria-live="assertive"></div>
<main id="main">
<h1>${options.title}</h1>
${options.body}
</main>
<footer class="bottom"><small>Assistant ${assistantVersion}</small></footer>
</body>
</html>`}\n`;
}

/** `/live?topics=queue` → `/live?topics=queue,approvals` (unchanged when it has them, or names no topics: all). */
function withApprovalsTopic(live: string): string {
  const match = /([?&]topics=)([^&]*)/.exec(live);
  if (!match) return live;
  const names = (match[2] ?? '').split(',');
  if (names.includes('approvals')) return live;
  return live.replace(match[0], `${match[1]}${[...names, 'approvals'].join(',')}`);
}

/** Sends a whole page as HTML. */
export function sendPage(reply: FastifyReply, options: PageOptions): FastifyReply {
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(renderPage(options));
}

/** Sends part of a page (what htmx swaps in). */
export function sendFragment(reply: FastifyReply, fragment: SafeHtml): FastifyReply {
  return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(fragment.toString());
}

/** Whether the request is htmx asking for a fragment rather than a browser asking for the page. */
export function wantsFragment(request: FastifyRequest): boolean {
  return request.headers['hx-request'] === 'true' && request.headers['hx-history-restore-request'] !== 'true';
}

/** A timestamp people read: local date and time to the second, with the ISO value in a `<time>`. */
export function timeTag(iso: string | undefined): SafeHtml {
  if (iso === undefined || iso === '') return html`<span class="muted">—</span>`;
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return html`${iso}`;
  const pad = (value: number) => String(value).padStart(2, '0');
  const text = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  // Local time, as the human log writes it; the title gives the zone and the exact instant.
  const offsetMinutes = -date.getTimezoneOffset();
  const zone = `UTC${offsetMinutes >= 0 ? '+' : '-'}${pad(Math.floor(Math.abs(offsetMinutes) / 60))}:${pad(Math.abs(offsetMinutes) % 60)}`;
  return html`<time datetime="${date.toISOString()}" title="${date.toISOString()} (${zone})">${text}</time>`;
}

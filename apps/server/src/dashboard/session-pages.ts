import { html, type SafeHtml } from './html.ts';
import { assetUrl, pageHead } from './page-head.ts';

/**
 * A page of its own for the login's two steps (decision 0023): what `<html>` carries tells session.js what to do. Not
 * the layout's page: these carry no navigation, no data and no CSRF token.
 */
function sessionPage(options: { attributes: SafeHtml; body: SafeHtml; head?: SafeHtml }): string {
  return `<!doctype html>\n${html`<html lang="en"${options.attributes}>
${
  options.head ??
  html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>Assistant</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetUrl('dashboard.css')}">
<script src="${assetUrl('session.js')}" defer></script>
</head>`
}
<body>
<main id="main">
${options.body}
</main>
</body>
</html>`}\n`;
}

const withoutScript = html`<noscript><p class="notice bad">The dashboard needs JavaScript: this browser tab keeps the
login's key in the dashboard's own storage and sends it with every request, so that the login cookie alone, which
every port of this host receives, opens nothing.</p></noscript>`;

/**
 * What a page asked for with the login cookie but without the origin key gets: nothing of the page, only session.js,
 * which asks for the same URL again with the key from this origin's storage and shows the answer (or goes to the
 * login when this origin holds no key).
 */
export function bootstrapPage(): string {
  return sessionPage({
    attributes: html` data-assistant-session="load"`,
    // The page's own head: session.js swaps the page's body in and has htmx process it, with the page's scripts.
    head: pageHead({ title: 'Assistant' }),
    body: html`<p id="session-status" class="muted" role="status">Loading…</p>
${withoutScript}`,
  });
}

/**
 * The answer to a right login: the session's origin key, for session.js to keep in this origin's storage, and the
 * page to go to next (already checked to be a path on this server).
 */
export function loginDonePage(options: { originKey: string; next: string }): string {
  return sessionPage({
    attributes: html` data-assistant-session="store" data-key="${options.originKey}" data-next="${options.next}"`,
    body: html`<p class="muted" role="status">Logged in. <a href="${options.next}">Continue</a></p>
${withoutScript}`,
  });
}

import { assistantVersion } from '@assistant/process';
import { html, type SafeHtml } from './html.ts';

/** Versioned asset URLs, cached for a long time by the browser: a new release changes the URL. */
export function assetUrl(name: string): string {
  return `/assets/${name}?v=${encodeURIComponent(assistantVersion)}`;
}

/**
 * The `<head>` of every dashboard page, and of the bootstrap page that loads one (session-pages.ts): the same
 * scripts and htmx config, so that the page the bootstrap swaps in runs in what it expects. session.js comes first:
 * it adds the origin key to htmx's requests (decision 0023).
 */
export function pageHead(options: { title: string }): SafeHtml {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"historyCacheSize":0}'>
<title>${options.title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${assetUrl('dashboard.css')}">
<script src="${assetUrl('session.js')}" defer></script>
<script src="${assetUrl('htmx.min.js')}" defer></script>
<script src="${assetUrl('sse.min.js')}" defer></script>
<script src="${assetUrl('dashboard.js')}" defer></script>
</head>`;
}

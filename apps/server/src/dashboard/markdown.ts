import path from 'node:path';
import MarkdownIt from 'markdown-it';
import { type SafeHtml, trustedHtml } from './html.ts';

/**
 * A note's markdown as HTML. Raw HTML in the note is text (`html: false`), bare URLs stay text (`linkify: false`),
 * markdown-it refuses `javascript:`, `vbscript:`, `file:` and `data:` links (they render as the text they were),
 * images become links (an image in a mail note would otherwise fetch a tracking pixel each time it is viewed), every
 * link gets `rel="noopener noreferrer"`, and a relative link points at the linked note's page.
 */
const markdown = new MarkdownIt({ html: false, linkify: false, typographer: false });
markdown.disable('image');

const hasScheme = /^[a-z][a-z0-9+.-]*:/i;

markdown.renderer.rules.link_open = (tokens, index, options, environment, self) => {
  const token = tokens[index];
  if (token) {
    const href = String(token.attrGet('href') ?? '');
    if (!hasScheme.test(href) && !href.startsWith('#') && !href.startsWith('//')) {
      const target = noteLinkTarget(notePathOf(environment), href);
      if (target === undefined) token.attrs = (token.attrs ?? []).filter(([name]) => name !== 'href');
      else token.attrSet('href', target);
    }
    token.attrSet('rel', 'noopener noreferrer');
  }
  return self.renderToken(tokens, index, options);
};

/** The note being rendered, as `renderNoteMarkdown` passes it in markdown-it's environment. */
function notePathOf(environment: unknown): string {
  const value = (environment as { notePath?: unknown } | undefined)?.notePath;
  return typeof value === 'string' ? value : '';
}

/**
 * Where a relative link in a note goes: the linked note's page, resolved against the note's folder (or the notes
 * root for `/x.md`); undefined when it would leave the notes folder.
 */
export function noteLinkTarget(notePath: string, href: string): string | undefined {
  const [withoutFragment = '', fragment] = href.split('#', 2);
  const [linkPath = ''] = withoutFragment.split('?', 1);
  let decoded: string;
  try {
    decoded = decodeURIComponent(linkPath);
  } catch {
    return undefined;
  }
  const resolved = decoded.startsWith('/')
    ? path.posix.normalize(decoded.slice(1))
    : path.posix.normalize(path.posix.join(path.posix.dirname(notePath), decoded));
  if (resolved === '..' || resolved.startsWith('../') || resolved.includes('\0')) return undefined;
  const page = resolved === '.' || resolved === '' ? '/notes' : notePageUrl(resolved);
  return fragment === undefined ? page : `${page}#${encodeURIComponent(fragment)}`;
}

/** The dashboard page of a note (or, with `edit`, its edit form); each path segment is percent-encoded. */
export function notePageUrl(notePath: string, options: { edit?: boolean } = {}): string {
  const encoded = notePath
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => encodeURIComponent(segment))
    .join('/');
  return `/notes/${encoded}${options.edit ? '?edit' : ''}`;
}

/** Renders a note's body; `notePath` (relative to the notes root) resolves its relative links. */
export function renderNoteMarkdown(body: string, notePath: string): SafeHtml {
  // The only trustedHtml call on note text: markdown-it with html off escapes everything it does not produce.
  return trustedHtml(markdown.render(body, { notePath }));
}

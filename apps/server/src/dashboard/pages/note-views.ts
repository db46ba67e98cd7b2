import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { type FrontmatterData, NotePathError, NoteSearchIndex } from '@assistant/notes';
import type { DashboardContext } from '../dashboard-context.ts';
import { html, type SafeHtml } from '../html.ts';
import { notePageUrl } from '../markdown.ts';

/** The link to a folder's listing (the notes root for ''). */
export function folderUrl(folder: string): string {
  return folder === '' ? '/notes' : `/notes?${new URLSearchParams({ folder }).toString()}`;
}

/** Notes › mail › personal (› the note): each ancestor a link, the last one the current page. */
export function breadcrumbs(where: string, options: { isNote: boolean }): SafeHtml {
  const segments = where === '' ? [] : where.split('/').filter((segment) => segment !== '');
  const items: SafeHtml[] = [
    segments.length === 0
      ? html`<li><a href="/notes" aria-current="page">Notes</a></li>`
      : html`<li><a href="/notes">Notes</a></li>`,
  ];
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    const target = segments.slice(0, index + 1).join('/');
    const href = last && options.isNote ? notePageUrl(target) : folderUrl(target);
    items.push(html`<li><a href="${href}"${last ? html` aria-current="page"` : ''}>${segment}</a></li>`);
  });
  return html`<nav aria-label="Breadcrumb" class="breadcrumbs"><ol>${items}</ol></nav>`;
}

/** The words a note is known by: its `title`, `subject` or `name` (as `GET /api/notes` gives them). */
export function noteTitle(data: FrontmatterData): string | undefined {
  for (const key of ['title', 'subject', 'name']) {
    const value = data[key];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** The folder a note is in ('' for the root). */
export function folderOf(notePath: string): string {
  const folder = path.posix.dirname(notePath);
  return folder === '.' ? '' : folder;
}

/** A path outside the notes folder is a bad request, said as the store says it (the path relative, nothing more). */
export function pathProblem(error: unknown): unknown {
  if (error instanceof NotePathError) return new AssistantError('BAD_REQUEST', error.message);
  return error;
}

const searchIndexes = new WeakMap<DashboardContext, NoteSearchIndex>();

/**
 * The server's in-memory search index of the notes, started the first time someone opens the Notes pages (not at
 * server start: an install nobody browses never pays for it) and closed as the server shuts down. Until its first
 * full read is done, searches read the notes instead.
 */
export function noteSearchIndex(context: DashboardContext): NoteSearchIndex {
  let index = searchIndexes.get(context);
  if (!index) {
    const created = new NoteSearchIndex({ store: context.notes });
    index = created;
    searchIndexes.set(context, created);
    if (context.signal.aborted) return created;
    created.start().catch(() => {
      // A failed start (the notes folder unreadable) leaves the index not ready: searches keep reading the notes.
    });
  }
  return index;
}

/** Stops the search index's watch, if the Notes pages started one (the server calls this as it closes). */
export async function closeNoteSearchIndex(context: DashboardContext): Promise<void> {
  await searchIndexes.get(context)?.close();
}

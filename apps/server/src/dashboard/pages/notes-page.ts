import { AssistantError } from '@assistant/errors';
import { BrokenNoteError, type NoteWhere, parseWhereFlag, type SearchNotesResult, searchNotes } from '@assistant/notes';
import type { FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, queryField } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { sendPage } from '../layout.ts';
import { notePageUrl } from '../markdown.ts';
import { registerNotePage } from './note-page.ts';
import { breadcrumbs, closeNoteSearchIndex, folderUrl, noteSearchIndex, noteTitle, pathProblem } from './note-views.ts';

/** Rows per page, in a folder and in search results. */
const notesPageSize = 50;

/** What `/notes` was asked: a folder to browse, or a search (text and/or field conditions) within it. */
interface NotesQuery {
  folder: string;
  text: string;
  fields: string[];
  page: number;
}

function readQuery(request: FastifyRequest): NotesQuery {
  const raw = (request.query as Record<string, unknown> | undefined)?.field;
  const fields = (Array.isArray(raw) ? raw : [raw])
    .filter((value): value is string => typeof value === 'string')
    .map((value) => value.trim())
    .filter((value) => value !== '');
  const pageText = queryField(request, 'page') ?? '1';
  const page = /^\d{1,6}$/.test(pageText) ? Math.max(1, Number(pageText)) : 1;
  const folder = (queryField(request, 'folder') ?? '').trim().replace(/^\/+|\/+$/g, '');
  return { folder, text: (queryField(request, 'q') ?? '').trim(), fields, page };
}

/** `/notes?…` with the query's values (repeated `field`s kept), for pager links. */
function notesUrl(query: NotesQuery, page: number): string {
  const search = new URLSearchParams();
  if (query.folder !== '') search.set('folder', query.folder);
  if (query.text !== '') search.set('q', query.text);
  for (const field of query.fields) search.append('field', field);
  if (page > 1) search.set('page', String(page));
  const text = search.toString();
  return text === '' ? '/notes' : `/notes?${text}`;
}

function pager(query: NotesQuery, total: number): SafeHtml {
  const pages = Math.max(1, Math.ceil(total / notesPageSize));
  if (pages === 1) return html``;
  return html`<nav class="pager" aria-label="Pages">
${query.page > 1 ? html`<a href="${notesUrl(query, query.page - 1)}" rel="prev">Previous page</a>` : ''}
<span>Page ${query.page} of ${pages}</span>
${query.page < pages ? html`<a href="${notesUrl(query, query.page + 1)}" rel="next">Next page</a>` : ''}
</nav>`;
}

/** The search form: text, the field conditions already given (one input each) and one more, the folder. */
function searchForm(query: NotesQuery): SafeHtml {
  const fieldInputs = [...query.fields, ''].map(
    (field, index) =>
      html`<label>Field condition ${index + 1}<input type="text" name="field" value="${field}" placeholder="status=new" spellcheck="false"></label>`,
  );
  return html`<form method="get" action="/notes" class="toolbar notes-search" role="search" aria-label="Search notes">
<label>Text<input type="search" name="q" value="${query.text}"></label>
${fieldInputs}
<label>In folder<input type="text" name="folder" value="${query.folder}" placeholder="all notes" spellcheck="false"></label>
<button type="submit">Search</button>
${query.text !== '' || query.fields.length > 0 ? html`<a href="${folderUrl(query.folder)}">Clear search</a>` : ''}
</form>
<p class="muted hint">Conditions as in <code>assistant notes search --where</code>: <code>status=new</code>, <code>confidence&gt;=0.8</code>, <code>date&lt;2026-12-01</code>, <code>archived?</code>, <code>!archived?</code>.</p>`;
}

interface Row {
  path: string;
  title: string | undefined;
  broken: boolean;
}

function notesTable(rows: Row[], caption: string): SafeHtml {
  return html`<div class="table-wrap"><table class="notes-list">
<caption class="visually-hidden">${caption}</caption>
<thead><tr><th scope="col">Note</th><th scope="col">Title</th></tr></thead>
<tbody>${rows.map(
    (row) =>
      html`<tr><td><a href="${notePageUrl(row.path)}">${row.path}</a></td><td>${row.broken ? html`<span class="badge bad">broken frontmatter</span>` : (row.title ?? html`<span class="muted">—</span>`)}</td></tr>`,
  )}</tbody>
</table></div>`;
}

async function rowsOf(context: DashboardContext, paths: string[]): Promise<Row[]> {
  return Promise.all(
    paths.map(async (notePath): Promise<Row> => {
      try {
        const note = await context.notes.read(notePath);
        return { path: notePath, title: note ? noteTitle(note.data) : undefined, broken: false };
      } catch (error) {
        if (error instanceof BrokenNoteError) return { path: notePath, title: undefined, broken: true };
        throw error;
      }
    }),
  );
}

async function browse(context: DashboardContext, query: NotesQuery): Promise<SafeHtml> {
  // Opening the Notes pages starts the search index, so that the search that often follows is answered from memory.
  noteSearchIndex(context);
  const listing = await context.notes.listFolder(query.folder).catch((error: unknown) => {
    throw pathProblem(error);
  });
  if (!listing) throw new AssistantError('NOT_FOUND', `no folder ${query.folder} in the notes`);
  const total = listing.folders.length + listing.notes.length;
  const start = (query.page - 1) * notesPageSize;
  const entries = [...listing.folders.map((folder) => ({ folder })), ...listing.notes.map((note) => ({ note }))].slice(
    start,
    start + notesPageSize,
  );
  const folders = entries.flatMap((entry) => ('folder' in entry ? [entry.folder] : []));
  const notes = entries.flatMap((entry) => ('note' in entry ? [entry.note] : []));
  const rows = await rowsOf(context, notes);
  const name = (entry: string) => entry.slice(entry.lastIndexOf('/') + 1);
  return html`${breadcrumbs(query.folder, { isNote: false })}
${searchForm(query)}
<h2>${query.folder === '' ? 'All folders' : html`Folder ${query.folder}`}</h2>
<p class="muted">${listing.folders.length} ${listing.folders.length === 1 ? 'folder' : 'folders'}, ${listing.notes.length} ${listing.notes.length === 1 ? 'note' : 'notes'}.</p>
${folders.length > 0 ? html`<ul class="plain folders">${folders.map((folder) => html`<li><a href="${folderUrl(folder)}" class="folder-link">${name(folder)}/</a></li>`)}</ul>` : ''}
${rows.length > 0 ? notesTable(rows, `Notes in ${query.folder === '' ? 'the notes root' : query.folder}`) : ''}
${total === 0 ? html`<p>This folder is empty.</p>` : ''}
${pager(query, total)}`;
}

async function search(context: DashboardContext, query: NotesQuery, signal: AbortSignal): Promise<SafeHtml> {
  const where: NoteWhere = {};
  const problems: string[] = [];
  for (const field of query.fields) {
    try {
      const [key, condition] = parseWhereFlag(field);
      where[key] = condition;
    } catch (error) {
      problems.push((error as Error).message);
    }
  }
  if (problems.length > 0) {
    return html`${breadcrumbs(query.folder, { isNote: false })}${searchForm(query)}
<div class="notice bad" role="alert"><p>Nothing searched:</p><ul>${problems.map((problem) => html`<li>${problem}</li>`)}</ul></div>`;
  }
  const options = {
    ...(query.folder === '' ? {} : { folder: query.folder }),
    ...(query.text === '' ? {} : { text: query.text }),
    where,
    offset: (query.page - 1) * notesPageSize,
    limit: notesPageSize,
  };
  // The folder must be inside the notes (the index would simply find nothing under `../x`; say why instead).
  if (query.folder !== '') {
    const listing = await context.notes.listFolder(query.folder).catch((error: unknown) => {
      throw pathProblem(error);
    });
    if (!listing) throw new AssistantError('NOT_FOUND', `no folder ${query.folder} in the notes`);
  }
  const index = noteSearchIndex(context);
  // The index is being built (it starts with the first dashboard page someone opens): finishing it costs at most what
  // reading every note for this one search would, and then every later search is answered from memory.
  await index.start().catch(() => {});
  let broken = 0;
  let result: SearchNotesResult;
  if (index.ready) {
    const found = index.search(options);
    result = found;
    broken = found.broken;
  } else {
    result = await searchNotes(context.notes, {
      ...options,
      onBroken: () => {
        broken += 1;
      },
      signal,
    });
  }
  const rows = result.notes.map((note) => ({ path: note.path, title: noteTitle(note.data), broken: false }));
  const what = [
    query.text === '' ? undefined : `containing “${query.text}”`,
    query.fields.length === 0 ? undefined : `where ${query.fields.join(' and ')}`,
    query.folder === '' ? undefined : `in ${query.folder}`,
  ]
    .filter((part) => part !== undefined)
    .join(' ');
  return html`${breadcrumbs(query.folder, { isNote: false })}
${searchForm(query)}
<h2>Search results</h2>
<p role="status" class="match-count">${result.total} ${result.total === 1 ? 'note matches' : 'notes match'} ${what}.${broken > 0 ? html` <span class="muted">${broken} broken ${broken === 1 ? 'note was' : 'notes were'} skipped.</span>` : ''}</p>
${rows.length > 0 ? notesTable(rows, 'Matching notes') : ''}
${pager(query, result.total)}`;
}

/** The Notes page: browse a folder, or search by text and by field. */
export function registerNotesPage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/notes',
    handler: async (request, reply) => {
      const query = readQuery(request);
      const searching = query.text !== '' || query.fields.length > 0;
      const body = searching ? await search(context, query, context.signal) : await browse(context, query);
      return sendPage(reply, { request, title: searching ? 'Search notes' : 'Notes', section: 'notes', body });
    },
  });
  registerNotePage(app, context);
  app.addHook('onClose', async () => closeNoteSearchIndex(context));
}

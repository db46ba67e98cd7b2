import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import {
  BrokenNoteError,
  type FrontmatterData,
  FrontmatterError,
  NoteConflictError,
  type NoteText,
  parseFrontmatter,
  splitNote,
} from '@assistant/notes';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AssistantServer } from '../../server-type.ts';
import type { DashboardContext } from '../dashboard-context.ts';
import { dashboardRoute, formField, redirectAfterPost } from '../dashboard-route.ts';
import { html, type SafeHtml } from '../html.ts';
import { csrfField, sendPage } from '../layout.ts';
import { notePageUrl, renderNoteMarkdown } from '../markdown.ts';
import { renderTimeline } from '../timeline-view.ts';
import { renderWhy } from '../why.ts';
import { breadcrumbs, folderOf, folderUrl, noteSearchIndex, noteTitle, pathProblem } from './note-views.ts';

/** A note's text read for a page: parsed, or broken with the problem located. */
type ReadNote =
  | { kind: 'note'; text: NoteText; data: FrontmatterData; frontmatter: string; body: string }
  | { kind: 'broken'; text: NoteText; problem: BrokenNoteError; frontmatter: string; body: string };

function parseText(text: NoteText): ReadNote {
  const parts = splitNote(text.text);
  try {
    // +1: the opening `---` is line 1 of the file.
    const data = parts.hasFrontmatter ? parseFrontmatter(parts.frontmatter, 1) : {};
    return { kind: 'note', text, data, frontmatter: parts.frontmatter, body: parts.body };
  } catch (error) {
    if (!(error instanceof FrontmatterError)) throw error;
    const problem = new BrokenNoteError(text.path, error);
    return { kind: 'broken', text, problem, frontmatter: parts.frontmatter, body: parts.body };
  }
}

/**
 * The note at a page's path, or a redirect for what is not a note: the root and folders go to their listing. A path
 * that leaves the notes folder is a 400, a note that does not exist a 404.
 */
async function readNote(
  context: DashboardContext,
  notePath: string,
): Promise<ReadNote | { kind: 'folder'; folder: string }> {
  const trimmed = notePath.replace(/\/+$/, '');
  if (trimmed === '') return { kind: 'folder', folder: '' };
  let text: NoteText | undefined;
  try {
    text = await context.notes.readText(trimmed);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EISDIR') return { kind: 'folder', folder: trimmed };
    throw pathProblem(error);
  }
  if (!text) throw new AssistantError('NOT_FOUND', `no note ${trimmed} in the notes folder`);
  return parseText(text);
}

/** A frontmatter value as it reads: text as text, anything nested as indented JSON (escaped like everything). */
function valueCell(value: unknown): SafeHtml {
  if (typeof value === 'string') return value.includes('\n') ? html`<pre>${value}</pre>` : html`${value}`;
  if (value === null) return html`<code>null</code>`;
  if (typeof value === 'object') {
    // Short data on one line (`["food","friday"]`), longer data indented.
    const compact = JSON.stringify(value);
    return compact.length <= 60 ? html`<code>${compact}</code>` : html`<pre>${JSON.stringify(value, null, 2)}</pre>`;
  }
  return html`${String(value)}`;
}

/** A frontmatter with more fields than this, or more text, is folded under its heading (the Why and body come first). */
const foldedFrontmatterFields = 8;
const foldedFrontmatterCharacters = 600;

function frontmatterTable(data: FrontmatterData): SafeHtml {
  const entries = Object.entries(data);
  if (entries.length === 0) return html`<p class="muted">No frontmatter.</p>`;
  const table = html`<div class="table-wrap"><table class="kv">
<caption class="visually-hidden">Frontmatter: each key with its value</caption>
<tbody>${entries.map(([key, value]) => html`<tr><th scope="row">${key}</th><td>${valueCell(value)}</td></tr>`)}</tbody>
</table></div>`;
  const long = entries.length > foldedFrontmatterFields || JSON.stringify(data).length > foldedFrontmatterCharacters;
  if (!long) return table;
  return html`<details class="frontmatter"><summary>All ${entries.length} fields</summary>${table}</details>`;
}

function fileLine(context: DashboardContext, notePath: string): SafeHtml {
  // Relative to the data directory, as every path the server shows (a path is not an address to act on).
  return html`<p class="note-file">File: <code>${context.paths.shown(path.join(context.notes.root, notePath))}</code></p>`;
}

async function viewBody(context: DashboardContext, note: ReadNote, saved: boolean): Promise<SafeHtml> {
  const notePath = note.text.path;
  const actions = html`<p class="actions"><a class="button" href="${notePageUrl(notePath, { edit: true })}">Edit note</a>
<a href="${folderUrl(folderOf(notePath))}">Back to the folder</a></p>`;
  if (note.kind === 'broken') {
    return html`${breadcrumbs(notePath, { isNote: true })}
<div class="notice bad" role="alert"><p>This note's frontmatter cannot be read, so it is shown as it is on disk (nothing was changed): <code>${note.problem.message}</code></p></div>
${fileLine(context, notePath)}
${actions}
<h2>Text on disk</h2>
<pre class="note-raw">${note.text.text}</pre>`;
  }
  const [why, timeline] = await Promise.all([renderWhy(context, notePath), renderTimeline(context, notePath)]);
  // What a person opens an item for comes first: why it was handled so, its text, what happened to it; the fields last.
  return html`${breadcrumbs(notePath, { isNote: true })}
${saved ? html`<p class="notice ok" role="status">Saved.</p>` : ''}
${fileLine(context, notePath)}
${actions}
${why ?? ''}
<h2>Body</h2>
<div class="markdown">${note.body.trim() === '' ? html`<p class="muted">Empty.</p>` : renderNoteMarkdown(note.body, notePath)}</div>
${timeline ?? ''}
<h2>Frontmatter</h2>
${frontmatterTable(note.data)}`;
}

/**
 * A textarea holding `text` exactly. The newline after the start tag is there because HTML drops the first newline
 * of a textarea: without it a body starting with a blank line would lose it on every save.
 */
function textarea(options: { name: string; id: string; text: string; rows: number; describedBy?: string }): SafeHtml {
  return html`<textarea name="${options.name}" id="${options.id}" rows="${options.rows}" spellcheck="false"${options.describedBy ? html` aria-describedby="${options.describedBy}"` : ''}>
${options.text}</textarea>`;
}

interface EditFormOptions {
  request: FastifyRequest;
  notePath: string;
  frontmatter: string;
  body: string;
  /** The hash of the file the text is based on. */
  version: string;
  /** Ids prefix, so two forms on one page (the conflict page) keep their labels apart. */
  idPrefix: string;
  submitLabel: string;
  problem?: SafeHtml | undefined;
}

function editForm(options: EditFormOptions): SafeHtml {
  const lines = (text: string, minimum: number) => Math.min(40, Math.max(minimum, text.split('\n').length + 1));
  const problemId = `${options.idPrefix}-problem`;
  return html`<form method="post" action="${notePageUrl(options.notePath)}" class="note-edit">
${csrfField(options.request)}
<input type="hidden" name="version" value="${options.version}">
${options.problem ? html`<div class="notice bad" id="${problemId}" role="alert">${options.problem}</div>` : ''}
<div class="field"><label for="${options.idPrefix}-frontmatter">Frontmatter (YAML)</label>
${textarea({ name: 'frontmatter', id: `${options.idPrefix}-frontmatter`, text: options.frontmatter, rows: lines(options.frontmatter, 4), ...(options.problem ? { describedBy: problemId } : {}) })}</div>
<div class="field"><label for="${options.idPrefix}-body">Body (markdown)</label>
${textarea({ name: 'body', id: `${options.idPrefix}-body`, text: options.body, rows: lines(options.body, 10) })}</div>
<p class="actions"><button type="submit">${options.submitLabel}</button>
<a href="${notePageUrl(options.notePath)}">Cancel</a></p>
</form>`;
}

function editPage(request: FastifyRequest, note: ReadNote, problem?: SafeHtml): SafeHtml {
  const notePath = note.text.path;
  return html`${breadcrumbs(notePath, { isNote: true })}
<p class="muted">The frontmatter is saved exactly as written here, comments and key order included. If the file changes on disk before you save, nothing is written and both versions are shown.</p>
${note.kind === 'broken' ? html`<p class="notice bad" role="alert">The frontmatter on disk cannot be read: <code>${note.problem.message}</code></p>` : ''}
${editForm({ request, notePath, frontmatter: note.frontmatter, body: note.body, version: note.text.hash, idPrefix: 'note', submitLabel: 'Save note', problem })}`;
}

/** The note's text from the two fields: line ends as a form sends them (CRLF) become the file's `\n`. */
function composeText(frontmatter: string, body: string): string {
  const cleanFrontmatter = frontmatter.replace(/\r\n?/g, '\n');
  const cleanBody = body.replace(/\r\n?/g, '\n');
  if (cleanFrontmatter.trim() === '') return cleanBody;
  const block = cleanFrontmatter.endsWith('\n') ? cleanFrontmatter : `${cleanFrontmatter}\n`;
  return `---\n${block}---\n${cleanBody}`;
}

function conflictPage(
  request: FastifyRequest,
  mine: { frontmatter: string; body: string },
  current: ReadNote,
): SafeHtml {
  const notePath = current.text.path;
  return html`${breadcrumbs(notePath, { isNote: true })}
<div class="notice bad" role="alert"><p><strong>Not saved:</strong> the file changed on disk after you opened the editor, so your edit was not written. Both versions are below: save yours over the file as it is now, or keep the file as it is.</p></div>
<div class="conflict">
<section aria-labelledby="mine-heading" class="card">
<h2 id="mine-heading">Your version</h2>
${editForm({ request, notePath, frontmatter: mine.frontmatter, body: mine.body, version: current.text.hash, idPrefix: 'mine', submitLabel: 'Save my version over the file' })}
</section>
<section aria-labelledby="theirs-heading" class="card">
<h2 id="theirs-heading">The file now</h2>
${current.kind === 'broken' ? html`<p class="notice bad">Its frontmatter cannot be read: <code>${current.problem.message}</code></p>` : ''}
<h3>Frontmatter</h3>
<pre class="conflict-text" data-version="current-frontmatter">${current.frontmatter}</pre>
<h3>Body</h3>
<pre class="conflict-text" data-version="current-body">${current.body}</pre>
<p class="actions"><a class="button secondary" href="${notePageUrl(notePath)}">Keep the file as it is</a>
<a href="${notePageUrl(notePath, { edit: true })}">Edit the file as it is now</a></p>
</section>
</div>`;
}

function titleFor(note: ReadNote): string {
  const name = note.text.path.slice(note.text.path.lastIndexOf('/') + 1);
  return note.kind === 'note' ? (noteTitle(note.data) ?? name) : name;
}

async function save(context: DashboardContext, request: FastifyRequest, reply: FastifyReply, notePath: string) {
  const frontmatter = formField(request, 'frontmatter');
  const body = formField(request, 'body');
  const version = formField(request, 'version');
  if (frontmatter === undefined || body === undefined || version === undefined || !/^[0-9a-f]{64}$/.test(version)) {
    throw new AssistantError('BAD_REQUEST', 'a note is saved from its edit form: frontmatter, body and version');
  }
  const read = await readNote(context, notePath);
  if (read.kind === 'folder') throw new AssistantError('BAD_REQUEST', `${notePath} is a folder, not a note`);
  const text = composeText(frontmatter, body);
  const mine = { frontmatter: frontmatter.replace(/\r\n?/g, '\n'), body: body.replace(/\r\n?/g, '\n') };
  try {
    await context.notes.replaceText(read.text.path, { text, basedOnHash: version });
  } catch (error) {
    if (error instanceof NoteConflictError) {
      // Read again: the file as it is now, after the failed save (it may have changed once more).
      const current = await readNote(context, notePath);
      if (current.kind === 'folder') throw new AssistantError('CONFLICT', `${notePath} is now a folder`);
      reply.code(409);
      return sendPage(reply, {
        request,
        title: `Not saved: ${titleFor(current)}`,
        section: 'notes',
        body: conflictPage(request, mine, current),
      });
    }
    if (error instanceof BrokenNoteError) {
      // The file's line 1 is the opening `---`: the frontmatter box's line is one less.
      const problem = html`<p>Not saved: the frontmatter is not valid YAML at line ${error.line - 1} of the frontmatter box (line ${error.line} of the file): <code>${error.message.replace(/^[^:]*:\d+:\d+: /, '')}</code></p>`;
      reply.code(400);
      return sendPage(reply, {
        request,
        title: `Edit ${titleFor(read)}`,
        section: 'notes',
        body: editPage(
          request,
          { ...read, text: { ...read.text, hash: version }, frontmatter: mine.frontmatter, body: mine.body },
          problem,
        ),
      });
    }
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new AssistantError('NOT_FOUND', `${notePath} was deleted while it was being edited; nothing was written`);
    }
    throw error;
  }
  // The next search must see this save, without waiting for the watch to report it.
  await noteSearchIndex(context).refresh(read.text.path);
  return redirectAfterPost(request, reply, `${notePageUrl(read.text.path)}?saved`);
}

/** A note's page (`/notes/<path>`), its edit form (`?edit`) and the save (a POST to the page). */
export function registerNotePage(app: AssistantServer, context: DashboardContext): void {
  dashboardRoute(app, {
    method: 'GET',
    url: '/notes/*',
    handler: async (request, reply) => {
      const notePath = (request.params as { '*': string })['*'];
      const note = await readNote(context, notePath);
      if (note.kind === 'folder') return reply.redirect(folderUrl(note.folder), 303);
      const query = request.query as Record<string, unknown>;
      if ('edit' in query) {
        return sendPage(reply, {
          request,
          title: `Edit ${titleFor(note)}`,
          section: 'notes',
          body: editPage(request, note),
        });
      }
      return sendPage(reply, {
        request,
        title: titleFor(note),
        section: 'notes',
        body: await viewBody(context, note, 'saved' in query),
      });
    },
  });
  dashboardRoute(app, {
    method: 'POST',
    url: '/notes/*',
    handler: async (request, reply) => save(context, request, reply, (request.params as { '*': string })['*']),
  });
}

import { stat } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecrets } from '@assistant/errors';
import type { RootedNoteStore } from '@assistant/notes';
import type { JsonValue, Task } from '@assistant/queue';
import type { DashboardContext } from './dashboard-context.ts';
import { html, type SafeHtml } from './html.ts';
import { type LogLine, linkedNotePaths } from './human-log-view.ts';
import { notePageUrl } from './markdown.ts';

/**
 * How the dashboard names the item a task, an approval or a log line is about: by its subject (a mail's subject and
 * sender, a pull request's title, repository and author), read from the item's note, not by a file name or an id.
 * Everything here is text from outside (a stranger wrote the subject): it is only ever rendered through `html`.
 */
export interface ItemSubject {
  notePath: string;
  /** The mail's subject, the pull request's or issue's title, else the note's `name`; undefined when it has none. */
  subject: string | undefined;
  /** Who it is from: the mail's sender, the GitHub author (`@login`). */
  sender: string | undefined;
  /** Where it is, when the note says: `owner/repo#12`. */
  where: string | undefined;
}

/** Longest subject or sender shown (a subject can be any length; the note has it whole). */
const shownCharacters = 160;
/** Notes whose subject is remembered between page views (each a few hundred bytes). */
const cacheLimit = 5_000;
/** Note reads at once. */
const readConcurrency = 16;

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A note path as tasks carry it: relative, `/`-separated, a `.md` file, never climbing out of the notes folder. */
function asNotePath(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > 500 || !value.endsWith('.md')) return undefined;
  if (value.startsWith('/') || value.includes('\\') || value.includes('\0')) return undefined;
  return value.split('/').every((segment) => segment !== '' && segment !== '.' && segment !== '..') ? value : undefined;
}

/**
 * The item note a task is about, from the fields the pipeline's tasks carry: `item` (act, and approved actions),
 * `note` (classify, evaluate), `requested_by.item` (a script or service an automation asked for, in the payload or in
 * `on_result`), and a done collect task's result `note` (before it ran, a collect task knows only the message's uid or
 * the pull request's number: its item has no note yet). Undefined for a task about no item.
 */
export function itemNoteOfTask(task: Pick<Task, 'payload' | 'onResult' | 'result'>): string | undefined {
  const payload = isRecord(task.payload) ? task.payload : undefined;
  const onResult = isRecord(task.onResult) ? task.onResult : undefined;
  const result = isRecord(task.result) ? task.result : undefined;
  const requestedBy = (holder: Record<string, JsonValue> | undefined) =>
    holder && isRecord(holder.requested_by) ? holder.requested_by.item : undefined;
  for (const candidate of [payload?.item, payload?.note, requestedBy(payload), requestedBy(onResult), result?.note]) {
    const notePath = asNotePath(candidate);
    if (notePath) return notePath;
  }
  return undefined;
}

function shorten(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > shownCharacters ? `${oneLine.slice(0, shownCharacters)}…` : oneLine;
}

function stringField(data: Record<string, unknown>, key: string): string | undefined {
  const value = data[key];
  if (typeof value === 'string' && value.trim() !== '') return shorten(value);
  if (typeof value === 'number') return String(value);
  return undefined;
}

/** The subject of an item from its note's frontmatter (email: subject, from; GitHub: title, author, repo, number). */
export function subjectOfNote(notePath: string, data: Record<string, unknown>): ItemSubject {
  const subject = stringField(data, 'subject') ?? stringField(data, 'title') ?? stringField(data, 'name');
  const author = stringField(data, 'author');
  const sender = stringField(data, 'from') ?? (author ? `@${author}` : undefined);
  const repo = stringField(data, 'repo');
  const number = stringField(data, 'number');
  return { notePath, subject, sender, where: repo && number ? `${repo}#${number}` : undefined };
}

/**
 * Item subjects by note path, remembered while the note's size and modification time stay the same: a page of 50
 * tasks costs 50 stats, and a read only for the notes that changed. At most {@link cacheLimit} are remembered.
 */
export class ItemSubjects {
  readonly #notes: RootedNoteStore;
  readonly #cache = new Map<string, { version: string; subject: ItemSubject | undefined }>();

  constructor(notes: RootedNoteStore) {
    this.#notes = notes;
  }

  /** The subjects of these notes; a note that is gone or cannot be read has none. */
  async lookup(notePaths: Iterable<string>): Promise<Map<string, ItemSubject | undefined>> {
    const unique = [...new Set(notePaths)];
    const found = new Map<string, ItemSubject | undefined>();
    let next = 0;
    const work = async () => {
      while (next < unique.length) {
        const notePath = unique[next] as string;
        next += 1;
        found.set(notePath, await this.#one(notePath));
      }
    };
    await Promise.all(Array.from({ length: Math.min(readConcurrency, unique.length) }, work));
    return found;
  }

  async #one(notePath: string): Promise<ItemSubject | undefined> {
    const file = path.join(this.#notes.root, ...notePath.split('/'));
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) {
      this.#cache.delete(notePath);
      return undefined;
    }
    const version = `${info.size}:${info.mtimeMs}`;
    const cached = this.#cache.get(notePath);
    if (cached?.version === version) {
      // Most recently used last: the oldest entry is the first one dropped.
      this.#cache.delete(notePath);
      this.#cache.set(notePath, cached);
      return cached.subject;
    }
    let subject: ItemSubject | undefined;
    try {
      const note = await this.#notes.read(notePath);
      subject = note ? subjectOfNote(notePath, note.data as Record<string, unknown>) : undefined;
    } catch {
      // A broken note (or a path the store refuses) names nothing; the note's page says what is wrong with it.
      subject = undefined;
    }
    this.#cache.delete(notePath);
    this.#cache.set(notePath, { version, subject });
    if (this.#cache.size > cacheLimit) {
      const oldest = this.#cache.keys().next().value;
      if (oldest !== undefined) this.#cache.delete(oldest);
    }
    return subject;
  }
}

const subjectsByContext = new WeakMap<DashboardContext, ItemSubjects>();

/** The server's one cache of item subjects. */
export function itemSubjects(context: DashboardContext): ItemSubjects {
  let subjects = subjectsByContext.get(context);
  if (!subjects) {
    subjects = new ItemSubjects(context.notes);
    subjectsByContext.set(context, subjects);
  }
  return subjects;
}

/**
 * An item by its subject: `“Lunch on Friday?” from Ada <ada@example.com>`, the subject a link to the item's note
 * (unless `link` is false); the note's path when it has no subject.
 */
export function renderItemSubject(subject: ItemSubject, options: { link?: boolean } = {}): SafeHtml {
  const words = subject.subject ?? subject.notePath;
  const named = options.link === false ? html`${words}` : html`<a href="${notePageUrl(subject.notePath)}">${words}</a>`;
  return html`<span class="item-subject">${subject.where ? html`<span class="muted">${subject.where}</span> ` : ''}${named}${
    subject.sender ? html` <span class="muted">from</span> <span class="item-sender">${subject.sender}</span>` : ''
  }</span>`;
}

/**
 * A task's data in one short line, as a queue browser previews a job's data: `ms: 60000, marker: "x"`. For tasks
 * about no item (a check, an echo, an agent's prompt). Cut at `maxCharacters`.
 */
export function payloadPreview(payload: JsonValue | undefined, maxCharacters = 120): string {
  if (payload === undefined || payload === null) return '';
  let text: string;
  if (isRecord(payload)) {
    text = Object.entries(payload)
      .map(([key, value]) => `${key}: ${JSON.stringify(value)}`)
      .join(', ');
  } else {
    text = JSON.stringify(payload) ?? '';
  }
  // A payload is kept as it was enqueued: a secret someone put in one is not shown.
  text = scrubSecrets(text.replace(/\s+/g, ' '));
  return text.length > maxCharacters ? `${text.slice(0, maxCharacters)}…` : text;
}

/** The subjects of the notes log lines link to, by the links' dashboard addresses (what `renderLogLine` takes). */
export async function logLinkSubjects(
  context: DashboardContext,
  lines: readonly LogLine[],
): Promise<Map<string, string | undefined>> {
  const found = await itemSubjects(context).lookup(linkedNotePaths(lines));
  const subjects = new Map<string, string | undefined>();
  for (const [notePath, subject] of found) {
    if (subject?.subject !== undefined) subjects.set(notePageUrl(notePath), subject.subject);
  }
  return subjects;
}

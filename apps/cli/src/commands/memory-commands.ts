import { AssistantError } from '@assistant/errors';
import {
  type Contact,
  type DueWindow,
  dueStanding,
  dueWindows,
  type MemoryProblem,
  type MemorySearchResult,
  type OwnerTask,
  tasksDue,
} from '@assistant/memory';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import {
  checkDue,
  contactDetail,
  contactNamed,
  normaliseAbout,
  type OwnerMemory,
  openOwnerMemory,
  ownerTaskNamed,
} from '@assistant/server';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

// `assistant contacts …`, `assistant tasks …` (the owner's own tasks, tasks/*.md; the queue's are `assistant task`),
// `assistant memory reindex|status` and `assistant notes search --semantic` (docs/cli.md, docs/memory.md). The local
// CLI is the owner: what it writes is the owner's (facts with trust `owner`, tasks created by `owner`), and merging
// contacts is allowed here as on the dashboard.

export interface MemoryCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  json?: boolean;
}

interface Opened {
  memory: OwnerMemory;
  timeZone: string;
  log: (message: string, link?: string) => Promise<void>;
}

/** Opens the stores (and, when asked, the index) over the config's notes; closes the index when `run` ends. */
async function withMemory<T>(options: MemoryCommandOptions, run: (opened: Opened) => Promise<T>): Promise<T> {
  const { config } = await loadCliConfig(options);
  const notes = new FileNoteStore({ root: config.paths.notes });
  const memory = openOwnerMemory({
    config,
    notes,
    localNotes: notes,
    logger: {
      info: () => {},
      warn: (message) => options.context.stderr.write(`warning: ${message}\n`),
    },
  });
  const humanLog = new FileHumanLog({ directory: config.paths.logs });
  try {
    return await run({
      memory,
      timeZone: config.owner.timeZone,
      log: (message, link) => humanLog.write({ source: 'cli', message, ...(link === undefined ? {} : { link }) }),
    });
  } finally {
    await memory.close();
  }
}

function warnProblems(context: CliContext, problems: readonly MemoryProblem[]): void {
  for (const problem of problems) context.stderr.write(`warning: skipped ${problem.path}: ${problem.message}\n`);
}

function handlesOf(contact: Contact): string[] {
  return Object.entries(contact.handles).flatMap(([platform, values]) => values.map((value) => `${platform}:${value}`));
}

/** `assistant contacts ls [--json]`: every contact, one line each; notes that do not parse on stderr. */
export async function contactsListCommand(options: MemoryCommandOptions): Promise<void> {
  const { context } = options;
  await withMemory(options, async ({ memory }) => {
    const { contacts, problems } = await memory.stores.contacts.list();
    const sorted = [...contacts].sort((a, b) => a.slug.localeCompare(b.slug));
    if (options.json) return writeJson(context, { contacts: sorted, problems });
    warnProblems(context, problems);
    if (sorted.length === 0) {
      context.stdout.write('no contacts\n');
      return;
    }
    for (const contact of sorted) {
      const parts = [
        contact.slug,
        contact.name,
        ...(contact.organisation ? [`(${contact.organisation})`] : []),
        ...contact.emails,
        ...handlesOf(contact),
        ...(contact.merged_into ? [`→ merged into ${contact.merged_into}`] : []),
      ];
      context.stdout.write(`${parts.join('  ')}\n`);
    }
  });
}

/**
 * `assistant contacts show SLUG [--json]`: identity, observed identifiers with their sources, facts about them
 * (superseded ones marked with their replacement), the items they appear in, and merges.
 */
export async function contactsShowCommand(options: MemoryCommandOptions & { slug: string }): Promise<void> {
  const { context } = options;
  await withMemory(options, async ({ memory }) => {
    const detail = await contactDetail({ stores: memory.stores, slug: options.slug });
    if (options.json) {
      return writeJson(context, {
        contact: detail.contact,
        ...(detail.primary ? { primary: detail.primary } : {}),
        merged_from: detail.mergedFrom,
        facts: detail.facts.map((view) =>
          view.supersededBy === undefined ? view.fact : { ...view.fact, superseded_by: view.supersededBy },
        ),
        items: detail.items,
        problems: detail.problems,
      });
    }
    warnProblems(context, detail.problems);
    const { contact } = detail;
    const none = (items: readonly string[]) => (items.length === 0 ? '(none)' : items.join(', '));
    const lines = [
      `${contact.name}  ${contact.path}`,
      ...(detail.primary ? [`  merged into:   ${detail.primary.slug} (${detail.primary.name})`] : []),
      `  aliases:       ${none(contact.aliases)}`,
      `  emails:        ${none(contact.emails)}`,
      `  handles:       ${none(handlesOf(contact))}`,
      `  organisation:  ${contact.organisation ?? '(none)'}`,
      `  relationships: ${none(contact.relationships.map((relation) => `${relation.kind} of ${relation.contact}`))}`,
      `  created by:    ${contact.created_by}`,
      `  merged from:   ${none(detail.mergedFrom.map((merged) => `${merged.slug} (${merged.name})`))}`,
      '',
      'observed:',
      ...(contact.observed.length === 0
        ? ['  (none)']
        : contact.observed.map(
            (seen) => `  ${seen.kind}${seen.platform ? `/${seen.platform}` : ''} ${seen.value}  in ${seen.source}`,
          )),
      '',
      'facts:',
      ...(detail.facts.length === 0
        ? ['  (none)']
        : detail.facts.map(
            ({ fact, supersededBy }) =>
              `  ${fact.id}  ${fact.statement}  [${fact.trust}, ${fact.observed_at.slice(0, 10)}, ${fact.source}]${supersededBy ? `  (superseded by ${supersededBy})` : ''}`,
          )),
      '',
      'items:',
      ...(detail.items.length === 0 ? ['  (none)'] : detail.items.map((item) => `  ${item}`)),
      '',
    ];
    context.stdout.write(lines.join('\n'));
  });
}

/** `assistant contacts merge INTO FROM`: reversible; both notes are kept, linked by merged_into / merged_from. */
export async function contactsMergeCommand(
  options: MemoryCommandOptions & { into: string; from: string },
): Promise<void> {
  const { context } = options;
  await withMemory(options, async ({ memory, log }) => {
    if (options.into === options.from) {
      throw new AssistantError('USAGE', `cannot merge ${options.into} into itself`, {
        hint: 'FROM is merged into INTO: assistant contacts merge INTO FROM',
      });
    }
    // Both must exist: NOT_FOUND names the one that does not.
    await contactNamed(memory.stores, options.into);
    await contactNamed(memory.stores, options.from);
    const merged = await memory.stores.contacts.merge({ into: options.into, from: options.from });
    await log(`merged contact ${merged.from.slug} into ${merged.into.slug}`, merged.into.path);
    if (options.json) return writeJson(context, merged);
    context.stdout.write(
      `merged ${merged.from.slug} into ${merged.into.slug}; undo with: assistant contacts unmerge ${merged.from.slug}\n`,
    );
  });
}

/** `assistant contacts unmerge SLUG`: removes exactly the links a merge added. */
export async function contactsUnmergeCommand(options: MemoryCommandOptions & { slug: string }): Promise<void> {
  const { context } = options;
  await withMemory(options, async ({ memory, log }) => {
    const before = await contactNamed(memory.stores, options.slug);
    await memory.stores.contacts.unmerge({ slug: options.slug });
    const after = await contactNamed(memory.stores, options.slug);
    await log(`unmerged contact ${options.slug}${before.merged_into ? ` from ${before.merged_into}` : ''}`, after.path);
    if (options.json) return writeJson(context, { contact: after });
    context.stdout.write(
      before.merged_into ? `unmerged ${options.slug} from ${before.merged_into}\n` : `unmerged ${options.slug}\n`,
    );
  });
}

function dueWindow(due: string | undefined): DueWindow {
  const value = due ?? 'all';
  if ((dueWindows as readonly string[]).includes(value)) return value as DueWindow;
  throw new AssistantError('USAGE', `--due must be one of ${dueWindows.join(', ')}, got \`${value}\``);
}

const statuses = ['open', 'done', 'dropped'] as const;

function taskStatus(status: string | undefined): OwnerTask['status'] {
  const value = status ?? 'open';
  if ((statuses as readonly string[]).includes(value)) return value as OwnerTask['status'];
  throw new AssistantError('USAGE', `--status must be one of ${statuses.join(', ')}, got \`${value}\``);
}

/**
 * `assistant tasks [ls] [--due overdue|today|week|all] [--status open|done|dropped] [--json]`: the owner's tasks,
 * soonest due first.
 */
export async function tasksListCommand(
  options: MemoryCommandOptions & { due?: string; status?: string },
): Promise<void> {
  const { context } = options;
  const due = dueWindow(options.due);
  const status = taskStatus(options.status);
  await withMemory(options, async ({ memory, timeZone }) => {
    const nowMs = Date.now();
    const { tasks, problems } = await memory.stores.tasks.list({ status });
    const listed = tasksDue({ tasks, due, nowMs, timeZone });
    if (options.json) return writeJson(context, { tasks: listed, problems });
    warnProblems(context, problems);
    if (listed.length === 0) {
      context.stdout.write(`no ${status} tasks${due === 'all' ? '' : ` due ${due === 'week' ? 'this week' : due}`}\n`);
      return;
    }
    for (const task of listed) {
      const standing = dueStanding(task, { nowMs, timeZone });
      const when =
        task.due === undefined
          ? '(no date)'
          : `${task.due}${standing === 'overdue' ? ' OVERDUE' : standing === 'today' ? ' today' : ''}`;
      const about = task.about.length === 0 ? '' : `  about ${task.about.join(', ')}`;
      context.stdout.write(`${task.id}  ${when}  ${task.title}${about}  [${task.created_by}]\n`);
    }
  });
}

/** `assistant tasks add TITLE [--due DATE] [--about X]…`: a task of the owner's. */
export async function tasksAddCommand(
  options: MemoryCommandOptions & { title: string; due?: string; about?: string[] },
): Promise<void> {
  const { context } = options;
  const title = options.title.trim();
  if (title === '') throw new AssistantError('USAGE', 'a task needs a title');
  let due: string | undefined;
  try {
    due = options.due === undefined ? undefined : checkDue(options.due);
  } catch (error) {
    throw new AssistantError('USAGE', `--due: ${(error as Error).message}`);
  }
  await withMemory(options, async ({ memory, log }) => {
    const about = await normaliseAbout(memory.stores, options.about ?? []);
    const task = await memory.stores.tasks.add({
      title,
      createdBy: 'owner',
      source: 'owner',
      ...(due === undefined ? {} : { due }),
      ...(about.length === 0 ? {} : { about }),
    });
    await log(`added task of yours: ${title.slice(0, 120)}${due ? ` (due ${due})` : ''}`, task.path);
    if (options.json) return writeJson(context, { task });
    context.stdout.write(`${task.id}  ${task.path}\n`);
  });
}

/** `assistant tasks done ID`: marks one of the owner's tasks done (the rest of its note is kept as written). */
export async function tasksDoneCommand(options: MemoryCommandOptions & { id: string }): Promise<void> {
  const { context } = options;
  await withMemory(options, async ({ memory, log }) => {
    const task = await ownerTaskNamed(memory.stores, options.id);
    await memory.stores.tasks.update(task.id, { status: 'done' });
    const after = await ownerTaskNamed(memory.stores, options.id);
    await log(`done: ${task.title.slice(0, 120)}`, task.path);
    if (options.json) return writeJson(context, { task: after });
    context.stdout.write(`done: ${task.id}  ${task.title}\n`);
  });
}

function statusLines(status: Awaited<ReturnType<Awaited<ReturnType<OwnerMemory['index']>>['status']>>): string {
  return [
    `notes:    ${status.notes}`,
    `embedded: ${status.embedded} (model ${status.model})`,
    `pending:  ${status.pending}`,
    `broken:   ${status.broken}`,
    ...(status.lastError === undefined ? [] : [`last error: ${status.lastError}`]),
    '',
  ].join('\n');
}

/**
 * `assistant memory status [--json]`: what the index under data/memory/index holds (reading every note once, as a
 * running index does): notes, those with a vector of the current model, those waiting for one, broken notes.
 */
export async function memoryStatusCommand(options: MemoryCommandOptions): Promise<void> {
  const { context } = options;
  await withMemory(options, async ({ memory }) => {
    const index = await memory.index();
    const status = index.status();
    if (options.json) return writeJson(context, { ...status, cache: index.cacheFile });
    context.stdout.write(`${statusLines(status)}cache:    ${index.cacheFile}\n`);
  });
}

/**
 * `assistant memory reindex [--json]`: drops the vector cache of the current model and reads and embeds every note
 * again. With the endpoint down the notes stay pending (search is lexical meanwhile) and the exit code is 1.
 */
export async function memoryReindexCommand(options: MemoryCommandOptions): Promise<number> {
  const { context } = options;
  return withMemory(options, async ({ memory }) => {
    const index = await memory.index();
    await index.rebuild();
    const status = index.status();
    if (options.json) writeJson(context, status);
    else context.stdout.write(`reindexed\n${statusLines(status)}`);
    if (status.pending > 0 && status.lastError !== undefined) {
      context.stderr.write(
        `warning: ${status.pending} note(s) still wait for a vector (${status.lastError}); search stays lexical for them until the endpoint answers (a running worker or server retries by itself, or run this again)\n`,
      );
      return 1;
    }
    return 0;
  });
}

/**
 * `assistant notes search --semantic QUERY [--in FOLDER] [--explain] [--json]`: hybrid retrieval through the memory
 * index; says the mode it answered in, and `degraded` (why) when only words were used.
 */
export async function notesSemanticSearchCommand(
  options: MemoryCommandOptions & {
    query: string;
    /** False when only --explain or --limit was given, which belong to --semantic. @default true */
    semantic?: boolean;
    where?: string[];
    folder?: string;
    explain?: boolean;
    limit?: number;
  },
): Promise<void> {
  const { context } = options;
  if (options.semantic === false) throw new AssistantError('USAGE', '--explain and --limit go with --semantic');
  if (options.query.trim() === '') {
    throw new AssistantError('USAGE', '--semantic needs the text to look for', {
      hint: 'assistant notes search --semantic "who moved the dentist appointment"',
    });
  }
  if ((options.where ?? []).length > 0) {
    throw new AssistantError('USAGE', '--where filters the words search only; leave it out with --semantic', {
      hint: 'narrow a semantic search to a folder with --in facts',
    });
  }
  await withMemory(options, async ({ memory }) => {
    const index = await memory.index();
    const result: MemorySearchResult = await index.search({
      query: options.query,
      mode: 'hybrid',
      limit: options.limit ?? 10,
      ...(options.folder === undefined ? {} : { folders: [options.folder] }),
    });
    if (options.json) return writeJson(context, result);
    context.stdout.write(`mode: ${result.mode}${result.degraded ? ` (degraded: ${result.degraded})` : ''}\n`);
    if (result.hits.length === 0) {
      context.stdout.write('no matching notes\n');
      return;
    }
    for (const hit of result.hits) {
      context.stdout.write(
        `${hit.score.toFixed(4)}  ${hit.path}  ${hit.title}${hit.superseded ? '  (superseded)' : ''}\n`,
      );
      if (options.explain) {
        const parts = (['lexical', 'vector', 'entity'] as const).map(
          (part) => `${part} ${hit.parts[part] === undefined ? '-' : (hit.parts[part] as number).toFixed(4)}`,
        );
        context.stdout.write(`        ${parts.join('  ')}\n`);
        if (hit.snippet) context.stdout.write(`        ${hit.snippet.replace(/\s+/g, ' ').slice(0, 160)}\n`);
      }
    }
  });
}

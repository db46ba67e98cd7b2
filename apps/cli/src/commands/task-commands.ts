import { rerouteTask } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { type BulkTaskAction, parseDuration, runBulkTaskAction, taskIdPattern } from '@assistant/queue';
import type { CliContext } from '../cli-context.ts';
import { formatTaskRecord } from '../format-task-record.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { openCliQueue, writeJson } from '../open-cli-queue.ts';

export interface TaskCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  id: string;
  json?: boolean;
}

/** `assistant task show ID`: where the task is and what its file says; an unreadable file shows why. */
export async function taskShowCommand(options: TaskCommandOptions): Promise<void> {
  checkId(options.id);
  const queue = await openCliQueue(options);
  const record = await queue.get(options.id);
  if (!record) throw notFound(options.id);
  if (options.json) {
    return writeJson(options.context, {
      id: options.id,
      state: record.state,
      path: record.location,
      ...(record.task ? { task: record.task } : {}),
      ...(record.problem ? { problem: record.problem } : {}),
    });
  }
  options.context.stdout.write(`${formatTaskRecord(record)}\n`);
}

export interface TaskRetryOptions extends Omit<TaskCommandOptions, 'id'> {
  /** One task; or none with the filters below. */
  id?: string | undefined;
  /** The bulk form's state: only `failed` tasks can be retried, and the bulk form says so explicitly. */
  state?: string | undefined;
  /** An exact type or a pattern with `*` (`email.*`). */
  type?: string | undefined;
  /** Failed within this long (`2h`) or since this time (`2026-11-26T06:00:00Z`). */
  since?: string | undefined;
  /** List what would be retried, move nothing. */
  dryRun?: boolean | undefined;
  /** For `--since` durations. @default Date.now() */
  nowMs?: number;
}

/**
 * `assistant task retry ID`: failed → pending, ready now, with a fresh set of attempts. The bulk form
 * (`--state failed [--type PATTERN] [--since 2h]`) does it for every failed task that matches, after an outage.
 */
export async function taskRetryCommand(options: TaskRetryOptions): Promise<number> {
  const bulk = options.state !== undefined || options.type !== undefined || options.since !== undefined;
  if (options.id === undefined) {
    if (!bulk) {
      throw new AssistantError('USAGE', '`assistant task retry` needs a task id, or `--state failed` with filters', {
        hint: "e.g. `assistant task retry --state failed --type 'email.*' --since 2h`",
      });
    }
    return actOnMany(options);
  }
  if (bulk || options.dryRun) {
    throw new AssistantError('USAGE', '`assistant task retry ID` takes no filters; leave out the id to retry in bulk');
  }
  checkId(options.id);
  const queue = await openCliQueue(options);
  // Looked up first only for a friendlier message; retry() checks the state again as it moves the file.
  if (!(await queue.get(options.id))) throw notFound(options.id);
  const record = await queue.retry(options.id);
  if (options.json) writeJson(options.context, { id: options.id, state: record.state, path: record.location });
  else options.context.stdout.write(`${options.id} is pending again: ${record.location}\n`);
  return 0;
}

/**
 * `assistant task delete ID`, or every failed task that matches (`--state failed [--type PATTERN] [--since 2h]`):
 * removes failed tasks for good, as the Tasks page's bulk Delete and `POST /api/tasks/bulk` do. Only failed tasks.
 */
export async function taskDeleteCommand(options: TaskRetryOptions): Promise<number> {
  const bulk = options.state !== undefined || options.type !== undefined || options.since !== undefined;
  if (options.id === undefined) {
    if (!bulk) {
      throw new AssistantError('USAGE', '`assistant task delete` needs a task id, or `--state failed` with filters', {
        hint: "e.g. `assistant task delete --state failed --type 'email.*' --dry-run`",
      });
    }
    return actOnMany(options, 'delete');
  }
  if (bulk || options.dryRun) {
    throw new AssistantError(
      'USAGE',
      '`assistant task delete ID` takes no filters; leave out the id to delete in bulk',
    );
  }
  checkId(options.id);
  const outcome = await runBulkTaskAction({ queue: await openCliQueue(options), action: 'delete', ids: [options.id] });
  const refused = outcome.refused[0];
  if (refused)
    throw new AssistantError(refused.reason.startsWith('no task') ? 'NOT_FOUND' : 'CONFLICT', refused.reason);
  if (options.json) writeJson(options.context, { id: options.id, deleted: true });
  else options.context.stdout.write(`${options.id} is deleted\n`);
  return 0;
}

/** Exit code 1 when some matching task could not be retried (or deleted); the rest are. */
async function actOnMany(options: TaskRetryOptions, action: BulkTaskAction = 'retry'): Promise<number> {
  const command = action === 'retry' ? 'assistant task retry' : 'assistant task delete';
  if (options.state !== 'failed') {
    throw new AssistantError(
      'USAGE',
      options.state === undefined
        ? `the bulk form of \`${command}\` needs \`--state failed\``
        : `only failed tasks can be ${action === 'retry' ? 'retried' : 'deleted'}, not \`${options.state}\``,
      { hint: `e.g. \`${command} --state failed --type 'email.*' --since 2h\`` },
    );
  }
  const sinceMs = options.since === undefined ? undefined : parseSince(options.since, options.nowMs ?? Date.now());
  const queue = await openCliQueue(options);
  const entries = await queue.list({
    state: 'failed',
    ...(options.type === undefined ? {} : { type: options.type }),
    ...(sinceMs === undefined ? {} : { finishedSinceMs: sinceMs }),
  });
  const tasks = entries.flatMap((entry) =>
    // A stray file set aside in failed/ is not a task: nothing to retry.
    entry.name ? [{ id: entry.name.id, type: entry.name.type, path: entry.location }] : [],
  );
  const retried: { id: string; type: string; path: string }[] = [];
  const problems: { id: string; problem: string }[] = [];
  if (options.dryRun) retried.push(...tasks);
  else {
    // The same as the dashboard's bulk retry and POST /api/tasks/bulk: a task retried by someone else meanwhile, or
    // unreadable, is refused with why, and the rest go on.
    const outcome = await runBulkTaskAction({ queue, action, ids: tasks.map((task) => task.id) });
    const typeOf = new Map(tasks.map((task) => [task.id, task.type]));
    for (const done of outcome.done)
      retried.push({ id: done.id, type: typeOf.get(done.id) ?? '', path: done.path ?? '' });
    for (const refused of outcome.refused) problems.push({ id: refused.id, problem: refused.reason });
  }
  if (options.json) {
    writeJson(options.context, {
      dry_run: options.dryRun === true,
      ...(action === 'retry' ? { retried } : { deleted: retried }),
      problems,
    });
  } else {
    const [verb, past, outcome] =
      action === 'retry' ? ['retry', 'retried', 'pending again'] : ['delete', 'deleted', 'deleted'];
    for (const task of retried)
      options.context.stdout.write(`${options.dryRun ? `would ${verb}` : past} ${task.id} ${task.type}\n`);
    for (const problem of problems) options.context.stderr.write(`not ${past} ${problem.id}: ${problem.problem}\n`);
    options.context.stdout.write(
      `${retried.length} failed tasks ${options.dryRun ? 'would be' : 'are'} ${outcome}${problems.length > 0 ? `, ${problems.length} not` : ''}\n`,
    );
  }
  return problems.length > 0 ? 1 : 0;
}

/** `2h` (that long ago) or an ISO date and time. */
function parseSince(text: string, nowMs: number): number {
  const duration = parseDuration(text);
  if (duration !== undefined) return nowMs - duration;
  const date = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isNaN(date)) return date;
  throw new AssistantError(
    'USAGE',
    `--since expects a duration such as 2h or a date such as 2026-11-26T06:00:00Z, got \`${text}\``,
  );
}

/** `assistant task reroute ID`: delivers a done service task's result again, where its `on_result` says. */
export async function taskRerouteCommand(options: TaskCommandOptions): Promise<void> {
  checkId(options.id);
  const { config, registry } = await loadCliConfig(options);
  const queue = await openCliQueue(options);
  const routed = await rerouteTask({
    id: options.id,
    queue,
    notes: new FileNoteStore({ root: config.paths.notes }),
    humanLog: new FileHumanLog({ directory: config.paths.logs }),
    registry,
  });
  if (options.json) return writeJson(options.context, { id: options.id, ...routed });
  const parts = [...routed.notes.map((note) => `note ${note}`), ...routed.enqueued.map((task) => `task ${task}`)];
  options.context.stdout.write(`${options.id}: result delivered to ${parts.join(', ') || 'nowhere (no routes)'}\n`);
}

function checkId(id: string): void {
  if (!taskIdPattern.test(id)) {
    throw new AssistantError('USAGE', `\`${id}\` is not a task id`, {
      hint: 'ids are 26 lower-case letters and digits, as `assistant enqueue` prints and `assistant queue ls` lists',
    });
  }
}

function notFound(id: string): AssistantError {
  return new AssistantError('NOT_FOUND', `no task with id ${id}`, {
    hint: '`assistant queue ls` lists tasks; done and failed tasks are pruned after their retention',
  });
}

import { rerouteTask } from '@assistant/actions';
import { AssistantError } from '@assistant/errors';
import { HumanLog, NoteStore } from '@assistant/notes';
import { taskIdPattern } from '@assistant/queue';
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

/** `assistant task retry ID`: failed → pending, ready now, with a fresh set of attempts. */
export async function taskRetryCommand(options: TaskCommandOptions): Promise<void> {
  checkId(options.id);
  const queue = await openCliQueue(options);
  // Looked up first only for a friendlier message; retry() checks the state again as it moves the file.
  if (!(await queue.get(options.id))) throw notFound(options.id);
  const record = await queue.retry(options.id);
  if (options.json) return writeJson(options.context, { id: options.id, state: record.state, path: record.location });
  options.context.stdout.write(`${options.id} is pending again: ${record.location}\n`);
}

/** `assistant task reroute ID`: delivers a done service task's result again, where its `on_result` says. */
export async function taskRerouteCommand(options: TaskCommandOptions): Promise<void> {
  checkId(options.id);
  const { config, registry } = await loadCliConfig(options);
  const queue = await openCliQueue(options);
  const routed = await rerouteTask({
    id: options.id,
    queue,
    notes: new NoteStore({ root: config.paths.notes }),
    humanLog: new HumanLog({ directory: config.paths.logs }),
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

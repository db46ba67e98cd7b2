import { AssistantError } from '@assistant/errors';
import { stringifyTask } from '@assistant/queue';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { openCliQueue, writeJson } from '../open-cli-queue.ts';

export interface TaskCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  id: string;
  json?: boolean;
}

/** `assistant task show ID`: where the task is and what its file says; an unreadable file shows why. */
export async function taskShowCommand(options: TaskCommandOptions): Promise<void> {
  const queue = await openCliQueue(options);
  const record = await queue.get(options.id);
  if (!record) throw notFound(options.id);
  if (options.json) {
    return writeJson(options.context, {
      id: options.id,
      state: record.state,
      path: record.path,
      ...(record.task ? { task: record.task } : {}),
      ...(record.problem ? { problem: record.problem } : {}),
    });
  }
  const lines = [`state:  ${record.state}`, `path:   ${record.path}`];
  if (record.problem) lines.push(`problem: ${record.problem}`);
  if (record.task) {
    // The task file's own YAML: the same words a person sees with `cat`, in a fixed order.
    lines.push('', stringifyTask(record.task).trimEnd());
  }
  options.context.stdout.write(`${lines.join('\n')}\n`);
}

/** `assistant task retry ID`: failed → pending, ready now, with a fresh set of attempts. */
export async function taskRetryCommand(options: TaskCommandOptions): Promise<void> {
  const queue = await openCliQueue(options);
  const record = await queue.retry(options.id);
  if (options.json) return writeJson(options.context, { id: options.id, state: record.state, path: record.path });
  options.context.stdout.write(`${options.id} is pending again: ${record.path}\n`);
}

function notFound(id: string): AssistantError {
  return new AssistantError('NOT_FOUND', `no task with id ${id}`, {
    hint: '`assistant queue ls` lists tasks; done and failed tasks are pruned after their retention',
  });
}

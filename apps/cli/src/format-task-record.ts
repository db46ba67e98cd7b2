import type { Task, TaskError, TaskRecord } from '@assistant/queue';
import { formatLocalTime } from './format-local-time.ts';

// Errors the queue and handlers throw on purpose to steer a task: their stack says nothing a person needs.
const steeringErrors = new Set([
  'RetryableError',
  'UnrecoverableError',
  'DelayedError',
  'TaskTimeoutError',
  'WorkerDied',
  'WorkerDiedWhileWaiting',
]);

/**
 * `assistant task show` for a person: the key fields aligned, then payload, result or error, and the history of
 * failed attempts. A file that cannot be read as a task shows its problem instead. `--json` has every field.
 */
export function formatTaskRecord(record: TaskRecord): string {
  const { task } = record;
  const fields: [string, string][] = [];
  if (task) fields.push(['id', task.id], ['type', task.type]);
  fields.push(['state', record.state]);
  if (task) fields.push(...taskFields(task));
  fields.push(['file', record.location]);
  if (record.problem) fields.push(['problem', record.problem]);
  const width = Math.max(...fields.map(([label]) => label.length));
  const lines = fields.map(([label, value]) => `${label.padEnd(width)}  ${indentRest(value, width + 2)}`);
  if (!task) return lines.join('\n');

  lines.push('', 'payload:', indent(json(task.payload), 2));
  if (task.result !== undefined) lines.push('', 'result:', indent(json(task.result), 2));
  if (task.onResult !== undefined) lines.push('', 'on_result:', indent(json(task.onResult), 2));
  if (task.error) lines.push('', `error: ${formatError(task.error, 2)}`);
  if (task.history.length > 0) {
    lines.push('', 'history (attempts that ended in an error):');
    for (const attempt of task.history) {
      const took = durationBetween(attempt.startedAt, attempt.finishedAt);
      const worker = attempt.worker ? `  ${attempt.worker}` : '';
      lines.push(
        `  ${attempt.attempt}. ${formatLocalTime(new Date(attempt.startedAt))}  ${took}${worker}`,
        `     ${formatError(attempt.error, 5)}`,
      );
    }
  }
  return lines.join('\n');
}

function taskFields(task: Task): [string, string][] {
  const fields: [string, string][] = [
    ['priority', String(task.priority)],
    ['source', task.source],
  ];
  if (task.integration !== undefined) fields.push(['integration', task.integration]);
  fields.push(
    ['attempts', `${task.attempts} of ${task.maxAttempts}`],
    ['created', formatLocalTime(new Date(task.createdAt))],
    ['ready', formatLocalTime(new Date(task.readyAt))],
  );
  if (task.startedAt !== undefined) fields.push(['started', formatLocalTime(new Date(task.startedAt))]);
  if (task.finishedAt !== undefined) {
    const took = task.startedAt === undefined ? '' : ` (took ${durationBetween(task.startedAt, task.finishedAt)})`;
    fields.push(['finished', `${formatLocalTime(new Date(task.finishedAt))}${took}`]);
  }
  if (task.worker) fields.push(['worker', `${task.worker.id} (pid ${task.worker.pid} on ${task.worker.host})`]);
  return fields;
}

/** `Type: message`, and for errors nobody threw on purpose (a bug in a handler) the stack's frames below it. */
function formatError(error: TaskError, indentBy: number): string {
  const text = `${error.type}: ${error.message}`;
  if (!error.stack || steeringErrors.has(error.type)) return indentRest(text, indentBy);
  const frames = error.stack.split('\n').filter((line) => /^\s+at /.test(line));
  return indentRest([text, ...frames.map((frame) => `  ${frame.trim()}`)].join('\n'), indentBy);
}

function durationBetween(startIso: string, endIso: string): string {
  const ms = Math.max(0, Date.parse(endIso) - Date.parse(startIso));
  return ms < 1_000 ? `${ms}ms` : ms < 60_000 ? `${(ms / 1_000).toFixed(1)}s` : `${(ms / 60_000).toFixed(1)}min`;
}

/** One line when it fits on one, indented over several lines when not. */
function json(value: unknown): string {
  const compact = JSON.stringify(value);
  return compact.length <= 100 ? compact : JSON.stringify(value, null, 2);
}

function indent(text: string, by: number): string {
  return text
    .split('\n')
    .map((line) => ' '.repeat(by) + line)
    .join('\n');
}

/** Indents every line after the first, so a multi-line value stays in its column. */
function indentRest(text: string, by: number): string {
  return text.split('\n').join(`\n${' '.repeat(by)}`);
}

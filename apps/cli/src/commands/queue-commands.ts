import { AssistantError } from '@assistant/errors';
import { type TaskState, taskStates } from '@assistant/queue';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { openCliQueue, writeJson } from '../open-cli-queue.ts';

export interface QueueCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  json?: boolean;
}

/** `assistant queue stats`: counts per state, ready versus scheduled, and per type. */
export async function queueStatsCommand(options: QueueCommandOptions): Promise<void> {
  const stats = await (await openCliQueue(options)).stats();
  if (options.json) {
    // The shape `--json` has always had: per-state type counts are for /metrics.
    const { typesByState: _perState, ...shown } = stats;
    return writeJson(options.context, shown);
  }
  const lines = [
    `pending  ${stats.pending} (${stats.ready} ready, ${stats.scheduled} scheduled for later)`,
    `active   ${stats.active}`,
    `done     ${stats.done}`,
    `failed   ${stats.failed}`,
  ];
  const types = Object.entries(stats.byType).sort(([left], [right]) => (left < right ? -1 : 1));
  if (types.length > 0) {
    lines.push('', 'by type (pending / active):');
    const width = Math.max(...types.map(([type]) => type.length));
    for (const [type, counts] of types) lines.push(`  ${type.padEnd(width)}  ${counts.pending} / ${counts.active}`);
  }
  options.context.stdout.write(`${lines.join('\n')}\n`);
}

export interface QueueListCommandOptions extends QueueCommandOptions {
  state?: string;
  type?: string;
  limit?: string;
}

/** `assistant queue ls`: tasks from their file names, pending in run order, done and failed newest first. */
export async function queueListCommand(options: QueueListCommandOptions): Promise<void> {
  if (options.state !== undefined && !taskStates.includes(options.state as TaskState)) {
    throw new AssistantError('USAGE', `--state must be one of ${taskStates.join(', ')}, got \`${options.state}\``);
  }
  const limit = options.limit === undefined ? undefined : Number(options.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) {
    throw new AssistantError('USAGE', `--limit must be a positive whole number, got \`${options.limit}\``);
  }
  const queue = await openCliQueue(options);
  const entries = await queue.list({
    ...(options.state === undefined ? {} : { state: options.state as TaskState }),
    ...(options.type === undefined ? {} : { type: options.type }),
    ...(limit === undefined ? {} : { limit }),
  });
  if (options.json) {
    return writeJson(
      options.context,
      entries.map((entry) => ({
        state: entry.state,
        id: entry.name?.id ?? null,
        type: entry.name?.type ?? null,
        priority: entry.name?.priority ?? null,
        ready_at: entry.name ? new Date(entry.name.readyAtMs).toISOString() : null,
        file: entry.location.slice(entry.location.lastIndexOf('/') + 1),
        path: entry.location,
      })),
    );
  }
  if (entries.length === 0) {
    options.context.stdout.write('no tasks\n');
    return;
  }
  const rows = entries.map((entry) =>
    entry.name
      ? [
          entry.state,
          String(entry.name.priority),
          formatLocalTime(new Date(entry.name.readyAtMs)),
          entry.name.id,
          entry.name.type,
        ]
      : [entry.state, '-', '-', '(unreadable)', entry.location.slice(entry.location.lastIndexOf('/') + 1)],
  );
  const header = ['STATE', 'P', 'READY', 'ID', 'TYPE'];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] ?? '').length)),
  );
  const format = (row: string[]) =>
    row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0))).join('  ');
  options.context.stdout.write(`${[header, ...rows].map(format).join('\n')}\n`);
}

/** `assistant queue prune`: removes done and failed tasks past their retention now. */
export async function queuePruneCommand(options: QueueCommandOptions): Promise<void> {
  const report = await (await openCliQueue(options)).prune();
  if (options.json) return writeJson(options.context, report);
  options.context.stdout.write(`pruned ${report.done} done and ${report.failed} failed tasks\n`);
}

/** `assistant queue recover`: one recovery pass, as a worker does at start and every 15 seconds. */
export async function queueRecoverCommand(options: QueueCommandOptions): Promise<void> {
  const report = await (await openCliQueue(options)).recover();
  if (options.json) return writeJson(options.context, report);
  const lines = [
    `returned to pending: ${report.requeued.length}`,
    `failed (attempts spent): ${report.failed.length}`,
    `duplicates removed from active/: ${report.removedDuplicates.length}`,
    `unreadable files moved to failed/: ${report.quarantined.length}`,
    `stale tmp/ files removed: ${report.removedTmp}`,
  ];
  for (const fileName of [...report.requeued, ...report.failed]) lines.push(`  ${fileName}`);
  options.context.stdout.write(`${lines.join('\n')}\n`);
}

import { AssistantError } from '@assistant/errors';
import { migrateTasks, type TaskState, taskStates } from '@assistant/queue';
import type { CliContext } from '../cli-context.ts';
import { formatLocalTime } from '../format-local-time.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { openCliQueue, openCommandQueue, writeJson } from '../open-cli-queue.ts';

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
    `stale copies removed (a task in two files): ${report.removedDuplicates.length}`,
    `unreadable files moved to failed/: ${report.quarantined.length}`,
    `stale tmp/ files removed: ${report.removedTmp}`,
  ];
  for (const fileName of [...report.requeued, ...report.failed]) lines.push(`  ${fileName}`);
  options.context.stdout.write(`${lines.join('\n')}\n`);
}

export interface QueueMigrateCommandOptions extends QueueCommandOptions {
  to: string;
  dryRun?: boolean;
}

/**
 * `assistant queue migrate --to redis|file`: moves every task from the backend config.yaml names to the other one
 * (both as config.yaml describes them), then says to switch `queue.backend`. The workers must be stopped.
 */
export async function queueMigrateCommand(options: QueueMigrateCommandOptions): Promise<void> {
  if (options.to !== 'redis' && options.to !== 'file') {
    throw new AssistantError('USAGE', `--to takes \`redis\` or \`file\`, got \`${options.to}\``);
  }
  const to = options.to;
  const { config } = await loadCliConfig(options);
  const from = config.queue.backend;
  if (from === to) {
    throw new AssistantError('USAGE', `config.yaml already says \`queue.backend: ${to}\`: there is nothing to move`, {
      hint: `run the migration with the backend the tasks are in now named in config.yaml, and --to the other`,
    });
  }
  const source = await openCommandQueue({ config, context: options.context });
  const target = await openCommandQueue({ config, context: options.context, backend: to });
  const report = await migrateTasks({ source, target, ...(options.dryRun ? { dryRun: true } : {}) });
  if (options.json) return writeJson(options.context, { from, to, dryRun: options.dryRun === true, ...report });
  const moved = report.moved;
  const verb = options.dryRun ? 'would move' : 'moved';
  const lines = [
    `${verb} from ${from} to ${to}: ${moved.pending} pending, ${moved.active} active, ${moved.failed} failed, ${moved.done} done`,
  ];
  if (report.alreadyThere > 0) lines.push(`already in ${to} (an earlier run): ${report.alreadyThere}`);
  if (report.leftActive.length > 0) {
    lines.push(`still active, left where they are (run again in a minute): ${report.leftActive.join(', ')}`);
  }
  if (report.unreadable.length > 0) lines.push(`not tasks, left where they are: ${report.unreadable.join(', ')}`);
  if (!options.dryRun) lines.push(`now set \`queue.backend: ${to}\` in config.yaml and start Assistant again`);
  options.context.stdout.write(`${lines.join('\n')}\n`);
}

import type { EventSink } from '@assistant/events';
import type { IntegrationRegistry } from '@assistant/integration-host';
import type { EnqueueOutcome, TaskQueue } from '@assistant/queue';
import type { ScheduledJob } from '@assistant/scheduler';
import type { Logger } from 'pino';

export interface ScheduledJobsOptions {
  /** The event ledger: each run is a `schedule.fired` event. @default none */
  events?: EventSink;
  registry: IntegrationRegistry;
  queue: TaskQueue;
  logger: Pick<Logger, 'info' | 'warn'>;
  /** Told every enqueue the policies turned away (a duplicate still pending, a rate limit). */
  onRejected?: (type: string, outcome: Exclude<EnqueueOutcome, { status: 'enqueued' }>) => void;
}

/**
 * One job per enabled instance with a schedule: each run enqueues the entry task of each of its enabled platforms
 * (those whose circuit breaker lets them) as `scheduler` tasks, so the policies apply: an entry task still pending
 * from the last run is not enqueued again.
 */
export function scheduledJobs(options: ScheduledJobsOptions): ScheduledJob[] {
  const { registry, queue, logger } = options;
  return registry.scheduledInstances().map(({ instance, schedule, entries }) => ({
    id: instance.name,
    schedule,
    description: `${instance.name} (${instance.domain}): ${entries.map((entry) => entry.type.split('.')[1]).join(', ')}`,
    taskTypes: entries.map((entry) => entry.type),
    fire: async (run) => {
      // In the ledger before the tasks: the same run (a retry after a crash) is the same event.
      await options.events?.emit({
        type: 'schedule.fired',
        source: 'scheduler',
        nativeId: `${instance.name}@${new Date(run.scheduledAtMs).toISOString()}`,
        data: {
          schedule: instance.name,
          ...(run.taskTypes[0] ? { task_type: run.taskTypes[0] } : {}),
          reason: run.reason,
        },
      });
      for (const entry of entries) {
        if (!run.taskTypes.includes(entry.type)) continue;
        const outcome = await queue.enqueue({
          type: entry.type,
          priority: entry.priority,
          integration: instance.name,
          source: 'scheduler',
        });
        if (outcome.status === 'enqueued') {
          logger.info(
            { task: outcome.task.id, type: entry.type, reason: run.reason },
            `scheduled ${entry.type} for ${instance.name}`,
          );
        } else {
          logger.info(
            { type: entry.type, reason: run.reason },
            `scheduled ${entry.type} for ${instance.name} skipped: ${outcome.reason}`,
          );
          options.onRejected?.(entry.type, outcome);
        }
      }
    },
  }));
}

import type { OwnerTask } from '@assistant/memory';
import { dayIn, type HandlerContext, type JsonValue, UnrecoverableError } from '@assistant/sdk';

/** The event a due owner's task fires (packages/events/src/event-registry.ts, docs/events.md). */
export const taskDueEvent = 'memory.task_due';

/**
 * `memory.due.check` (every 15 minutes by the default instance's schedule): emits `memory.task_due` for every open
 * owner's task whose due date has come: a `YYYY-MM-DD` on or before today in `owner.timezone`, an ISO instant at or
 * before now. The event's native id is the task's note and its due date, so the ledger stores it once however often
 * this runs, and a task the owner moves to another date fires again on that date.
 */
export async function checkDueTasks(context: HandlerContext<JsonValue>, nowMs = Date.now()): Promise<JsonValue> {
  const memory = context.memory;
  if (!memory) throw new UnrecoverableError('memory.due.check runs only as the builtin memory integration');
  const events = context.events;
  if (!events) return { skipped: 'no event ledger in this worker' };
  const { tasks, problems } = await memory.stores.tasks.list({ status: 'open' });
  const due = tasks.filter((task) => isDue(task, nowMs, memory.timeZone));
  let fired = 0;
  for (const task of due) {
    const { duplicate } = await events.emit({
      type: taskDueEvent,
      source: `memory:${context.instance.name}`,
      nativeId: `${task.path}@${task.due}`,
      causedBy: [context.task.id],
      data: {
        task: task.path,
        id: task.id,
        title: task.title,
        due: task.due as string,
        created_by: task.created_by,
        ...(task.about.length === 0 ? {} : { about: task.about }),
        ...(task.source === undefined ? {} : { source: task.source }),
      },
    });
    if (duplicate) continue;
    fired += 1;
    await context.log.human(`task came due (${task.due}): ${task.title.slice(0, 120)}`, {
      reason: `${task.path} is open and due; memory.task_due fired once for this due date`,
      source: 'memory',
    });
  }
  for (const problem of problems) context.log.warn(`memory: skipped ${problem.path}: ${problem.message}`);
  return { due: due.length, fired, ...(problems.length === 0 ? {} : { unreadable: problems.length }) };
}

/** Whether an open task is due at `nowMs`: a day on or before today in the zone, or an instant at or before now. */
export function isDue(task: Pick<OwnerTask, 'due' | 'status'>, nowMs: number, timeZone: string): boolean {
  if (task.status !== 'open' || task.due === undefined) return false;
  if (/^\d{4}-\d{2}-\d{2}$/.test(task.due)) return task.due <= dayIn(nowMs, timeZone);
  const at = Date.parse(task.due);
  return Number.isFinite(at) && at <= nowMs;
}

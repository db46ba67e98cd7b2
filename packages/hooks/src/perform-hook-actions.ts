import { createHash } from 'node:crypto';
import { createHookApprovalRequest, type HookTask } from '@assistant/actions';
import type { EventRecord } from '@assistant/events';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { JsonValue, TaskQueue } from '@assistant/queue';
import type { CompiledHook, HookAction, HookDecision } from './hook-types.ts';
import { resolveAt } from './notify-at.ts';

/** The conversation `notify:` posts to: the owner's notifications (forwarded to Telegram when it is set up). */
export const notificationsConversation = 'notifications';

/**
 * The task types a hook's `notify:`, `chat:` and `pause:` become. Their handlers run in the worker (a notification
 * or chat post is a message in a conversation; a pause is an entry of `system/paused.md`).
 */
export const hookTaskTypes = {
  notify: 'chat.notify',
  chat: 'chat.notify',
  pause: 'system.pause',
  agent: 'system.agent',
  script: 'script.run',
} as const;

/** Who asked, on every task a hook enqueues that carries it: the gate and the human log read it. */
export interface HookRequestedBy {
  hook: string;
  version: string;
  event: string;
  firing: string;
}

export interface PlanHookTasksOptions {
  decision: HookDecision;
  hook: CompiledHook;
  event: EventRecord;
  /** The runner's id of this firing (stable across a retry of the same firing). */
  firingId: string;
  /** The owner's time zone (`owner.timezone`), for `at:`. */
  timeZone: string;
  nowMs: number;
}

/** One action of a firing as the queue task it becomes, and whether it waits for a person. */
export interface PlannedHookTask {
  action: HookAction;
  needsApproval: boolean;
  task: HookTask;
}

/**
 * The tasks a firing enqueues, one per action, from the decision's rendered actions: `enqueue` its task (after
 * `delay`), `service` a `service.{domain}.{service}` task on its instance, `script` a `script.run`, `agent` a
 * `system.agent`, `notify` and `chat` a `chat.notify` (after `after:`, or at `at:` in the owner's time zone), `pause`
 * a `system.pause`. Pure. A due time is written into the task (its ready time), so it survives a restart.
 */
export function planHookTasks(options: PlanHookTasksOptions): PlannedHookTask[] {
  const { decision, hook, event, nowMs } = options;
  const requestedBy: HookRequestedBy = {
    hook: hook.name,
    version: hook.version,
    event: event.id,
    firing: options.firingId,
  };
  return decision.actions.map(({ action, needsApproval, summary }, index) => {
    const base = { summary, tier: action.tier, ...(action.yolo ? { yolo: true } : {}) };
    const readyAt = (delayMs: number | undefined) =>
      delayMs === undefined || delayMs <= 0 ? {} : { ready_at: new Date(nowMs + delayMs).toISOString() };
    let task: HookTask;
    switch (action.kind) {
      case 'enqueue':
        task = { ...base, type: action.type, payload: action.payload ?? {}, ...readyAt(action.delayMs) };
        break;
      case 'service': {
        const [domain = '', instance = '', service = ''] = action.name.split('.');
        task = {
          ...base,
          type: `service.${domain}.${service}`,
          integration: instance,
          priority: 6,
          payload: { inputs: action.inputs ?? {} },
          on_result: {
            routes: action.onResult ?? [{ note: true }],
            ...(action.humanLog === undefined ? {} : { human_log: action.humanLog }),
            requested_by: requestedBy,
          },
        };
        break;
      }
      case 'script':
        task = {
          ...base,
          type: hookTaskTypes.script,
          priority: 7,
          payload: {
            script: action.name,
            inputs: action.inputs ?? {},
            requested_by: requestedBy,
            provenance: decision.provenance ?? hook.provenance,
          },
        };
        break;
      case 'agent':
        task = {
          ...base,
          type: hookTaskTypes.agent,
          payload: { prompt: action.prompt, ...(action.llm === undefined ? {} : { profile: action.llm }) },
        };
        break;
      case 'chat':
      case 'notify': {
        const dueMs =
          action.kind === 'notify' && action.at !== undefined
            ? resolveAt({ at: action.at, nowMs, timeZone: options.timeZone }) - nowMs
            : action.kind === 'notify'
              ? action.delayMs
              : undefined;
        task = {
          ...base,
          type: hookTaskTypes.notify,
          priority: 2,
          payload: {
            conversation:
              action.kind === 'chat' ? (action.conversation ?? notificationsConversation) : notificationsConversation,
            text: action.text,
            // The message's id: a retried task (or a firing performed twice) posts one message, not two.
            message: `h-${createHash('sha256').update(`${options.firingId}\0${index}`).digest('hex').slice(0, 24)}`,
            hook: hook.name,
            event: event.id,
          },
          ...readyAt(dueMs),
        };
        break;
      }
      case 'pause':
        task = {
          ...base,
          type: hookTaskTypes.pause,
          priority: 2,
          payload: {
            integration: action.integration,
            reason: action.reason ?? `hook ${hook.name} fired on ${event.type} ${event.id}`,
            by: `hook:${hook.name}`,
          },
        };
        break;
    }
    return { action, needsApproval, task };
  });
}

export interface PerformHookActionsOptions extends PlanHookTasksOptions {
  deps: {
    queue: Pick<TaskQueue, 'enqueue'>;
    notes: NoteStore;
    humanLog?: Pick<HumanLog, 'write'>;
    /** How long an approval request waits (`approvals.expires`). */
    approvalExpiresMs: number;
  };
}

export interface PerformHookActionsResult {
  /** Tasks enqueued now (or found pending already: a duplicate of the same task). */
  enqueued: { summary: string; type: string; task: string }[];
  /** The request the actions that wait for a person went into, if any: one per firing. */
  approval?: { id: string; path: string; created: boolean };
}

/**
 * Performs a firing's decision through the action layer: the actions that may run alone are enqueued now (through
 * the queue's policies, source `automation`), and those that wait for a person go together into one approval
 * request (id from the hook and the firing: performing the same firing again finds it). A decision that does not
 * fire does nothing. The runner records the firing (and, for `once: true`, disables the hook) atomically before
 * calling this, so a crash repeats at most the enqueues of one firing, which the queue's dedup catches while they
 * are pending.
 */
export async function performHookActions(options: PerformHookActionsOptions): Promise<PerformHookActionsResult> {
  const { decision, hook, event, deps } = options;
  const result: PerformHookActionsResult = { enqueued: [] };
  if (!decision.fire) return result;
  const planned = planHookTasks(options);
  const waiting = planned.filter((entry) => entry.needsApproval);
  for (const { task } of planned.filter((entry) => !entry.needsApproval)) {
    const readyAtMs = task.ready_at === undefined ? undefined : Date.parse(task.ready_at);
    const outcome = await deps.queue.enqueue({
      type: task.type,
      payload: (task.payload ?? {}) as JsonValue,
      source: 'automation',
      ...(task.integration === undefined ? {} : { integration: task.integration }),
      ...(task.priority === undefined ? {} : { priority: task.priority }),
      ...(readyAtMs === undefined ? {} : { readyAtMs }),
      ...(task.on_result === undefined ? {} : { onResult: task.on_result as JsonValue }),
    });
    if (outcome.status === 'rate_limited') throw new Error(`could not enqueue ${task.type}: ${outcome.reason}`);
    const id = outcome.status === 'enqueued' ? outcome.task.id : outcome.existing;
    result.enqueued.push({ summary: task.summary, type: task.type, task: id });
  }
  if (waiting.length > 0) {
    result.approval = await createHookApprovalRequest({
      notes: deps.notes,
      ...(deps.humanLog ? { humanLog: deps.humanLog } : {}),
      firing: {
        hook: hook.name,
        version: hook.version,
        event: event.id,
        event_type: event.type,
        firing: options.firingId,
        tasks: waiting.map((entry) => entry.task),
      },
      provenance: decision.provenance ?? hook.provenance,
      reason: decision.reason,
      expiresMs: deps.approvalExpiresMs,
      nowMs: options.nowMs,
    });
  }
  if (result.enqueued.length > 0) {
    await deps.humanLog?.write({
      source: `hooks/${hook.name}`,
      message: `fired on ${event.type}: ${result.enqueued.map((entry) => entry.summary).join(', ')}`,
      reason: `hook "${hook.name}" (${decision.provenance ?? hook.provenance}): ${decision.reason}`,
    });
  }
  return result;
}

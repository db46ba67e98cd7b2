import type { HumanLog, NoteStore } from '@assistant/notes';
import type { Task } from '@assistant/queue';
import * as z from 'zod';
import { approvalsFolder, isApprovalId } from './approvals.ts';
import { actPayloadSchema } from './enqueue-actions.ts';
import { describe } from './planned-action.ts';

/** How an action task ended, as an approval records it: `done`, or `failed` for good (no retry left). */
export type ActionOutcome = 'done' | 'failed';

/** What a task that takes actions was about: which actions, on which item, for which rule, under which approval. */
interface ActionTaskInfo {
  /** `archive, unsubscribe → leave@lists.example`, `script notify`, `service research.web.search`. */
  what: string;
  item: string;
  source: string;
  rule: string;
  approval: string | undefined;
}

const requestedBySchema = z.looseObject({
  instance: z.string(),
  platform: z.string(),
  item: z.string(),
  rule: z.string(),
  approval: z.string().optional(),
});

/**
 * The action a task takes, when it is one: a platform's `act` task, `script.run` or `service.*` with the item and
 * rule that asked for it. Undefined for every other task (a check, a classification, a chat turn).
 */
function actionTaskInfo(task: Pick<Task, 'type' | 'payload' | 'onResult' | 'integration'>): ActionTaskInfo | undefined {
  const [domain, platform, stage] = task.type.split('.');
  if (task.type === 'script.run') {
    const payload = z
      .looseObject({ script: z.string(), approval: z.string().optional(), requested_by: requestedBySchema })
      .safeParse(task.payload);
    if (!payload.success) return undefined;
    const requested = payload.data.requested_by;
    return {
      what: `script ${payload.data.script}`,
      item: requested.item,
      source: `${requested.instance}/${requested.platform}`,
      rule: requested.rule,
      approval: payload.data.approval ?? requested.approval,
    };
  }
  if (domain === 'service') {
    const onResult = z.looseObject({ requested_by: requestedBySchema }).safeParse(task.onResult ?? {});
    if (!onResult.success) return undefined;
    const requested = onResult.data.requested_by;
    return {
      what: `service ${platform}.${task.integration ?? '?'}.${stage ?? '?'}`,
      item: requested.item,
      source: `${requested.instance}/${requested.platform}`,
      rule: requested.rule,
      approval: requested.approval,
    };
  }
  if (stage !== 'act' || platform === undefined) return undefined;
  const payload = actPayloadSchema.safeParse(task.payload);
  if (!payload.success) return undefined;
  return {
    what: payload.data.actions.map((action) => describe(action)).join(', '),
    item: payload.data.item,
    source: `${task.integration ?? domain}/${platform}`,
    rule: payload.data.rule,
    approval: payload.data.approval,
  };
}

/** What the owner reads about why an action failed: a stable code first, then the error's message cut short. */
export interface ActionFailure {
  /** An AssistantError's code, a system error's (`ECONNREFUSED`), or the error's type (`UnrecoverableError`). */
  code: string;
  message: string;
}

/** How much of an error's message the human log and the approval keep; the failed task holds all of it. */
const shortMessageMaxChars = 200;

/**
 * The code and first line of what a handler threw: the first `code` along its `cause` chain (an AssistantError's
 * registered code, or Node's `ECONNREFUSED`), else its type, so the line can be searched for and looked up in
 * docs/errors.md.
 */
export function actionFailureOf(error: unknown): ActionFailure {
  let code: string | undefined;
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current instanceof Error && code === undefined; depth += 1) {
    const own = (current as { code?: unknown }).code;
    if (typeof own === 'string' && own !== '') code = own;
    current = current.cause;
  }
  const name = error instanceof Error ? error.name : 'Error';
  const text = (error instanceof Error ? error.message : String(error)).replace(/\s+/g, ' ').trim();
  return {
    code: code ?? name,
    message: text.length > shortMessageMaxChars ? `${text.slice(0, shortMessageMaxChars - 1)}…` : text,
  };
}

export interface RecordActionOutcomeOptions {
  notes: NoteStore;
  humanLog: Pick<HumanLog, 'write'>;
  task: Pick<Task, 'id' | 'type' | 'payload' | 'onResult' | 'integration'>;
  outcome: ActionOutcome;
  /** Why it failed, for `failed`. */
  failure?: ActionFailure;
  /**
   * False when the failure already has its own line in the human log (the act gate's refusal writes one), so only
   * the approval records it.
   * @default true
   */
  logFailure?: boolean;
  nowMs?: number;
}

/**
 * Records how an action task ended where the owner looks: a failure gets a `FAILED:` line in the human log (the
 * `decided:` line written when the action was enqueued must not stand alone, reading as done), and an approval the
 * task acts under gets `outcome`, `outcome_reason` and `outcome_at`. One approval may enqueue several tasks (an act
 * task and a script): another task's failure is not overwritten by a later `done`, so `outcome: done` means none
 * failed (`outcome_task` names the task the outcome is about). Does
 * nothing for a task that takes no action. Never throws: the task's own outcome is already on disk.
 */
export async function recordActionOutcome(options: RecordActionOutcomeOptions): Promise<void> {
  const info = actionTaskInfo(options.task);
  if (!info) return;
  const at = new Date(options.nowMs ?? Date.now());
  const reason = options.failure ? `${options.failure.code}: ${options.failure.message}` : undefined;
  if (options.outcome === 'failed' && options.logFailure !== false) {
    const title = await titleOf(options.notes, info.item);
    await options.humanLog
      .write({
        source: info.source,
        message: `FAILED: ${info.what} for ${title}: ${reason ?? 'no reason given'}`,
        reason: `task ${options.task.id}; rule "${info.rule}"${info.approval ? `, approved (${info.approval})` : ''}`,
        link: info.item,
        at,
      })
      .catch(() => {});
  }
  if (info.approval === undefined || !isApprovalId(info.approval)) return;
  await options.notes
    .update(`${approvalsFolder}/${info.approval}.md`, {
      change: (current) => {
        // Another task's failure stands; this task's own (retried by hand since) is replaced by how it ends now.
        const otherFailed = current.data.outcome === 'failed' && current.data.outcome_task !== options.task.id;
        if (otherFailed && options.outcome === 'done') return {};
        return {
          set: {
            outcome: options.outcome,
            outcome_at: at.toISOString(),
            outcome_task: options.task.id,
            // A `done` after a retry clears the reason an earlier failure left (undefined removes the key).
            outcome_reason: reason,
          },
        };
      },
    })
    .catch(() => {
      // The outcome is on the task in failed/ or done/ all the same; only its copy on the approval is missing.
    });
}

/** The item as a log line names it: its subject or title when the note has one, else its path. */
async function titleOf(notes: NoteStore, item: string): Promise<string> {
  try {
    const note = await notes.read(item);
    const named = note?.data.subject ?? note?.data.title;
    if (typeof named === 'string' && named.trim() !== '') return JSON.stringify(named.replace(/\s+/g, ' ').trim());
  } catch {
    // A note that cannot be read is named by its path.
  }
  return item;
}

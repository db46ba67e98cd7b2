// Deciding an approval request and enqueueing what it approved: above both the requests (approvals.ts) and the
// enqueueing (enqueue-actions.ts, which makes requests), so neither imports the other (issue 38: no import circles).
import type { AutomationMatch } from '@assistant/automations';
import { AssistantError } from '@assistant/errors';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import {
  type ApprovalRequest,
  approvalsFolder,
  describeApproval,
  isRecord,
  logExpiry,
  parseApproval,
  readApproval,
  unboundProblem,
} from './approvals.ts';
import { type EnqueueActionsResult, enqueueActions } from './enqueue-actions.ts';

export interface DecideApprovalOptions {
  notes: NoteStore;
  queue: TaskQueue;
  humanLog?: Pick<HumanLog, 'write'>;
  id: string;
  decision: 'approve' | 'reject';
  /** Who decided, for the record: `cli`, `api`. */
  by: string;
  /**
   * Whether an instance is in shadow mode now (config.yaml's `shadow:`): a shadow proposal of such an instance cannot
   * be approved (decision 0031). Absent, every shadow proposal is refused approval: nothing may reach a mailbox
   * unless the caller knows the instance left shadow mode.
   */
  inShadow?: (instance: string) => boolean;
  /**
   * The digest the deciding person was shown (`''` for a request shown without one). When given, a request whose
   * digest is another is refused with CONFLICT and left pending: the person decided on something else (decision
   * 0017). @default not checked (the request is decided as it is now)
   */
  shownDigest?: string;
  nowMs?: number;
}

export interface DecideApprovalResult {
  request: ApprovalRequest;
  enqueued?: EnqueueActionsResult['enqueued'];
}

/**
 * A person's decision on a request. Approving enqueues the actions (recorded on the item like any other, so they are
 * still taken only once); rejecting drops them. A request decided already, or past its expiry, is refused with
 * CONFLICT and left as it is (an expired one is marked expired).
 */
export async function decideApproval(options: DecideApprovalOptions): Promise<DecideApprovalResult> {
  const nowMs = options.nowMs ?? Date.now();
  const found = await readApproval(options.notes, options.id);
  if (!found) throw new AssistantError('NOT_FOUND', `no approval request ${options.id}`);
  const notePath = `${approvalsFolder}/${options.id}.md`;
  const decided = { decided_at: new Date(nowMs).toISOString(), decided_by: options.by };
  // Check and decide in one step under the note's lock: of two people (or processes) deciding at once, exactly one
  // finds the request pending; the others get CONFLICT and the note keeps the first decision.
  let request = found;
  let expired = false;
  await options.notes.update(notePath, {
    change: (current) => {
      request = parseApproval(options.id, current.data);
      expired = false;
      if (request.status !== 'pending') {
        throw new AssistantError(
          'CONFLICT',
          `approval ${options.id} was ${request.status} already${request.decided_at ? ` at ${request.decided_at}` : ''}`,
        );
      }
      if (options.shownDigest !== undefined && (request.digest ?? '') !== options.shownDigest) {
        throw new AssistantError(
          'CONFLICT',
          `approval ${options.id} is not what was shown: it was shown as ${options.shownDigest || '(no digest)'}, it is now ${request.digest ?? '(no digest)'}; nothing was decided, look at it again`,
        );
      }
      if (options.decision === 'approve') {
        const unbound = unboundProblem(request);
        if (unbound !== undefined) throw new AssistantError('CONFLICT', unbound);
        if (request.shadow === true && (options.inShadow?.(request.instance) ?? true)) {
          throw new AssistantError(
            'CONFLICT',
            `approval ${options.id} is a shadow-mode proposal of ${request.instance}, which is still in shadow mode: nothing is done to it while it is`,
            { hint: `leave shadow mode first with \`assistant shadow off ${request.instance}\`, then approve it` },
          );
        }
      }
      if (Date.parse(request.expires_at) <= nowMs) {
        expired = true;
        return { set: { status: 'expired', decided_at: decided.decided_at, decided_by: 'expiry' } };
      }
      return { set: { status: options.decision === 'approve' ? 'approved' : 'rejected', ...decided } };
    },
  });
  if (expired) {
    await logExpiry(options, request);
    throw new AssistantError('CONFLICT', `approval ${options.id} expired at ${request.expires_at}; nothing was done`);
  }
  if (options.decision === 'reject') {
    await options.humanLog?.write({
      source: 'approvals',
      message: `rejected ${describeApproval(request)} for ${request.title}`,
      reason: `a person (${options.by}) said no to ${request.kind === 'tool_call' ? 'the tool call' : request.kind === 'hook' ? `hook "${request.rule}"` : request.provenance === 'manual' ? 'their own request' : `rule "${request.rule}"`}`,
      link: notePath,
    });
    return { request: { ...request, status: 'rejected', ...decided } };
  }
  if (request.kind === 'tool_call') {
    // Nothing to enqueue: the loop that asked polls the request and runs the call itself, once.
    await options.humanLog?.write({
      source: 'approvals',
      message: `approved ${describeApproval(request)} for ${request.title}`,
      reason: `a person (${options.by}) said yes; the waiting agent loop runs it`,
      link: notePath,
    });
    return { request: { ...request, status: 'approved', ...decided } };
  }
  const approved: ApprovalRequest = { ...request, status: 'approved', ...decided };
  if (approved.hook_firing !== undefined) {
    const enqueued = await enqueueHookTasks(options, approved, nowMs);
    return { request: { ...approved, tasks: enqueued.map((entry) => entry.task) }, enqueued };
  }
  const result = await enqueueApproved(options, approved, nowMs);
  return { request: { ...approved, tasks: result.enqueued.map((entry) => entry.task) }, enqueued: result.enqueued };
}

/** Enqueues the actions of an approved request, citing it, and records their tasks on it. */
export async function enqueueApproved(
  options: { notes: NoteStore; queue: TaskQueue; humanLog?: Pick<HumanLog, 'write'> },
  request: ApprovalRequest,
  nowMs: number,
): Promise<EnqueueActionsResult> {
  const match: AutomationMatch = {
    rule: request.rule,
    ...(request.rule_index === undefined ? {} : { ruleIndex: request.rule_index }),
    provenance: request.provenance,
    reason: request.reason,
    approval: true,
    actions: request.actions.map((action) => ({
      kind: action.kind,
      name: action.name,
      key: action.key,
      tier: action.tier,
      yolo: action.yolo,
      ...(action.argument === undefined ? {} : { argument: action.argument as never }),
      ...(action.inputs === undefined ? {} : { inputs: action.inputs }),
      ...(action.human_log === undefined ? {} : { humanLog: action.human_log }),
      ...(action.on_result === undefined ? {} : { onResult: action.on_result as never }),
      // The text the owner read goes to the act task as it is: the act sends it, not new words.
      ...(action.text === undefined ? {} : { text: action.text }),
    })),
  };
  const result = await enqueueActions({
    notes: options.notes,
    queue: options.queue,
    ...(options.humanLog ? { humanLog: options.humanLog } : {}),
    instance: request.instance,
    domain: request.domain,
    platform: request.platform,
    notePath: request.item,
    title: request.title,
    matches: [match],
    approvalExpiresMs: 0,
    approvedBy: { approval: request.id },
    // A person's own request is this person asking now: what can be undone is done again each time they ask.
    repeatReversible: request.provenance === 'manual',
    nowMs,
  });
  const tasks = result.enqueued.map((entry) => entry.task);
  await options.notes.update(`${approvalsFolder}/${request.id}.md`, { set: { tasks: [...new Set(tasks)] } });
  return result;
}

/** Enqueues the tasks of an approved hook request, as they were rendered, and records them on it. */
async function enqueueHookTasks(
  options: { notes: NoteStore; queue: TaskQueue; humanLog?: Pick<HumanLog, 'write'> },
  request: ApprovalRequest,
  nowMs: number,
): Promise<EnqueueActionsResult['enqueued']> {
  const enqueued: EnqueueActionsResult['enqueued'] = [];
  for (const task of request.hook_firing?.tasks ?? []) {
    const readyAtMs = task.ready_at === undefined ? undefined : Date.parse(task.ready_at);
    // A script or service the hook asked for cites this approval, so the worker's gate finds what a person approved.
    const payload =
      task.type === 'script.run' && isRecord(task.payload) ? { ...task.payload, approval: request.id } : task.payload;
    const onResult =
      isRecord(task.on_result) && isRecord(task.on_result.requested_by)
        ? { ...task.on_result, requested_by: { ...task.on_result.requested_by, approval: request.id } }
        : task.on_result;
    const outcome = await options.queue.enqueue({
      type: task.type,
      payload: (payload ?? {}) as never,
      source: 'automation',
      ...(task.integration === undefined ? {} : { integration: task.integration }),
      ...(task.priority === undefined ? {} : { priority: task.priority }),
      ...(readyAtMs === undefined || Number.isNaN(readyAtMs) || readyAtMs <= nowMs ? {} : { readyAtMs }),
      ...(onResult === undefined ? {} : { onResult: onResult as never }),
    });
    const id =
      outcome.status === 'enqueued' ? outcome.task.id : outcome.status === 'duplicate' ? outcome.existing : undefined;
    if (id === undefined) {
      throw new AssistantError(
        'CONFLICT',
        `could not enqueue ${task.type}: ${outcome.status === 'rate_limited' ? outcome.reason : outcome.status}`,
      );
    }
    enqueued.push({ key: task.summary, type: task.type, task: id });
  }
  const tasks = enqueued.map((entry) => entry.task);
  await options.notes.update(`${approvalsFolder}/${request.id}.md`, { set: { tasks: [...new Set(tasks)] } });
  await options.humanLog?.write({
    source: `hooks/${request.rule}`,
    message: `approved: ${describeApproval(request)}`,
    reason: `a person approved ${request.id}; enqueued ${tasks.join(', ')}`,
    link: `${approvalsFolder}/${request.id}.md`,
  });
  return enqueued;
}

import {
  type ApprovalsIndex,
  approvalRendering,
  decideApproval,
  describeApproval,
  listApprovals,
} from '@assistant/actions';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';

/** A pending approval request as a chat shows it. */
export interface ListenerApprovalSummary {
  id: string;
  /** The item's title (mail subject, say): text from outside, shown to the owner as is. */
  title: string;
  /** What would be done, described: `archive, send_reply "…"`. */
  actions: string;
  /**
   * What will happen, in full (every input, the whole text, all arguments): what the owner approves. A chat with a
   * message limit fits it with `fitRendering`, which says how much more there is; it never cuts it silently.
   */
  rendering: string;
  /** False for a request made before approvals were bound: it cannot be approved. */
  bound: boolean;
  rule: string;
  reason: string;
  expiresAt: string;
}

/**
 * Approvals for the chat listeners: the requests waiting for a person, and deciding one with the same code as
 * `assistant approve ID` / `assistant reject ID` (a CONFLICT error when it was decided or expired already,
 * NOT_FOUND when there is none).
 */
export interface ListenerApprovals {
  pending(): Promise<ListenerApprovalSummary[]>;
  decide(
    id: string,
    decision: 'approve' | 'reject',
    by: string,
  ): Promise<{
    status: string;
    /** `tool_call`: an agent loop waits on it and runs the call itself (it enqueues nothing); `action`: rule actions. */
    kind: 'action' | 'tool_call';
    tasks: string[];
    actions: string;
    title: string;
  }>;
}

export function listenerApprovals(options: {
  notes: NoteStore;
  queue: TaskQueue;
  humanLog?: Pick<HumanLog, 'write'>;
  /** Whether an instance is in shadow mode: its proposals cannot be approved (decision 0031). @default every one is */
  inShadow?: (instance: string) => boolean;
  /** The pending requests read incrementally (the server's one `ApprovalsIndex`); else each pass reads them all. */
  pending?: Pick<ApprovalsIndex, 'pending'>;
}): ListenerApprovals {
  return {
    async pending() {
      const requests = options.pending
        ? await options.pending.pending()
        : await listApprovals(options.notes, { status: 'pending' });
      return requests.map((request) => ({
        id: request.id,
        title: request.title,
        actions: describeApproval(request),
        ...approvalRendering(request),
        rule: request.rule,
        reason: request.reason,
        expiresAt: request.expires_at,
      }));
    },
    async decide(id, decision, by) {
      const result = await decideApproval({
        notes: options.notes,
        queue: options.queue,
        ...(options.humanLog ? { humanLog: options.humanLog } : {}),
        id,
        decision,
        by,
        ...(options.inShadow ? { inShadow: options.inShadow } : {}),
      });
      return {
        status: result.request.status,
        kind: result.request.kind === 'tool_call' ? 'tool_call' : 'action',
        tasks: (result.enqueued ?? []).map((entry) => entry.task),
        actions: describeApproval(result.request),
        title: result.request.title,
      };
    },
  };
}

import type { ApprovalRequest, DecideApprovalResult, ProposedAction } from '@assistant/actions';
import type { ListOptions, TaskEntry, TaskRecord } from '@assistant/queue';

/** The steering requests a chat may send another task: not `ask` (a question of its own) nor `answer`. */
export type ChatSteerAction = 'pause' | 'resume' | 'stop' | 'interject';

/**
 * What the builtin `chat` integration may do beyond enqueueing its own tasks, for the tools of a chat turn
 * (docs/chat.md "Tools"): read tasks and approvals, decide an approval as `assistant approve` does, trigger a
 * platform as `POST /api/integrations/:name/:platform/trigger` does, enqueue a service, steer another task, and turn
 * an action into an approval request, start a workflow run. It checks what the system checks for anyone (the gate, the approval's state);
 * who in a conversation may use which part (the owner, text the owner wrote) is the chat tools' to decide.
 */
export interface ChatConsole {
  tasks: {
    /** A task in any state, its payload, result and error scrubbed of every loaded secret; undefined when none. */
    get(id: string): Promise<TaskRecord | undefined>;
    list(options?: ListOptions): Promise<TaskEntry[]>;
  };
  approvals: {
    /** Newest first; broken request notes are left out. */
    list(options?: { status?: ApprovalRequest['status'] }): Promise<ApprovalRequest[]>;
    read(id: string): Promise<ApprovalRequest | undefined>;
    /** `decideApproval` with `by: chat`: approving enqueues the actions (each taken once per item). */
    decide(options: { id: string; decision: 'approve' | 'reject' }): Promise<DecideApprovalResult>;
    /**
     * Makes a pending approval request for one action on one item (`proposeAction`), its origin the conversation
     * and this turn's task. A turn run again finds the request it made before (`created: false`).
     */
    propose(options: {
      conversation: string;
      instance: string;
      platform: string;
      item: string;
      action: ProposedAction;
      reason: string;
    }): Promise<{ approval: ApprovalRequest; path: string; created: boolean }>;
  };
  /**
   * Enqueues an instance's platform entry task, the task a manual trigger enqueues (the registry's `entryTask`), but
   * through the queue's policies: a pending one already on its way is `duplicate`, a rate limit says when.
   */
  trigger(options: { instance: string; platform: string }): Promise<TriggerOutcome>;
  /**
   * Enqueues a service call `domain.instance.service` that can be undone (`reversible: true`); any other is refused
   * (propose it instead). Its result goes where a service's result goes by default, a note under
   * `services/{domain}/{service}/`, and `on_result.requested_by` names the conversation: the caller cannot route it.
   */
  enqueueService(options: {
    conversation: string;
    call: string;
    inputs: Record<string, string | number | boolean>;
  }): Promise<TriggerOutcome>;
  /**
   * Writes a steering request for a pending or active task (never a `chat.turn`: conversations are steered by their
   * messages); for an active task it waits a moment for the worker to apply it, a pending one gets it when it starts.
   */
  steer(options: {
    task: string;
    action: ChatSteerAction;
    message?: string;
    reason?: string;
  }): Promise<{ request: string; status: 'applied' | 'refused' | 'queued'; message?: string }>;
  /**
   * Starts a run of the workflow `agents/<workflow>.yaml` as `assistant run` does (`startWorkflowRun`, source `chat`),
   * its answer posted back into `conversation` when it ends (`reply_to`). Throws WORKFLOW_UNKNOWN (naming the
   * workflows there are) or WORKFLOW_INVALID before anything is queued.
   */
  runWorkflow(options: { conversation: string; workflow: string; input: string }): Promise<ChatWorkflowRun>;
  /** The workflows that load (name, topology, description), for the model to know what it may start. */
  workflows(): Promise<ChatWorkflowSummary[]>;
}

/** A run started from chat: what the model tells the owner. */
export interface ChatWorkflowRun {
  run: string;
  /** The `system.workflow` task. */
  task: string;
  workflow: string;
  topology: string;
}

export interface ChatWorkflowSummary {
  name: string;
  topology: string;
  description?: string;
}

/** What became of a chat's enqueue: the task, or the one already on its way, or when a rate limit lets it. */
export type TriggerOutcome =
  | { status: 'enqueued'; task: string; type: string }
  | { status: 'duplicate'; task: string; type: string; reason: string }
  | { status: 'rate_limited'; type: string; reason: string; retry_at: string };

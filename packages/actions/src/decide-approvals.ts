import type { HumanLog, NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import { decideApproval } from './approval-decisions.ts';

/** One request of a bulk decision, with the digest of the rendering the person was shown for it. */
export interface ShownApproval {
  id: string;
  /**
   * `''` for a request shown without one (made before approvals were bound). Absent: decided as it is now, as a
   * single decision by id is (the CLI's `assistant approve ID` without `@DIGEST`).
   */
  digest?: string;
}

export interface DecideApprovalsOptions {
  notes: NoteStore;
  queue: TaskQueue;
  humanLog?: Pick<HumanLog, 'write'>;
  decision: 'approve' | 'reject';
  approvals: readonly ShownApproval[];
  /** Who decided, for the record: `dashboard`, `api`, `cli`. */
  by: string;
  /** Whether an instance is in shadow mode now: passed to each decision (decision 0031). */
  inShadow?: (instance: string) => boolean;
  nowMs?: number;
}

export interface DecideApprovalsResult {
  decided: { id: string; status: string; tasks: string[] }[];
  /** Each request left as it was, and why: changed since it was shown, decided already, expired, unknown. */
  refused: { id: string; reason: string }[];
}

/**
 * Several decisions at once (the dashboard's and `POST /api/approvals/bulk`), each one bound to what its person was
 * shown: a request whose digest differs from the one shown is refused alone, and the rest are decided. One after the
 * other, so each is checked and decided under its own note's lock exactly as a single decision is.
 */
export async function decideApprovals(options: DecideApprovalsOptions): Promise<DecideApprovalsResult> {
  const result: DecideApprovalsResult = { decided: [], refused: [] };
  const seen = new Set<string>();
  for (const shown of options.approvals) {
    if (seen.has(shown.id)) continue;
    seen.add(shown.id);
    try {
      const outcome = await decideApproval({
        notes: options.notes,
        queue: options.queue,
        ...(options.humanLog ? { humanLog: options.humanLog } : {}),
        id: shown.id,
        decision: options.decision,
        by: options.by,
        ...(shown.digest === undefined ? {} : { shownDigest: shown.digest }),
        ...(options.inShadow ? { inShadow: options.inShadow } : {}),
        ...(options.nowMs === undefined ? {} : { nowMs: options.nowMs }),
      });
      result.decided.push({ id: shown.id, status: outcome.request.status, tasks: outcome.request.tasks ?? [] });
    } catch (error) {
      result.refused.push({ id: shown.id, reason: error instanceof Error ? error.message : String(error) });
    }
  }
  return result;
}

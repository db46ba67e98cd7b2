import type { ApprovalRequest } from '@assistant/actions';
import type { DashboardContext } from './dashboard-context.ts';

/**
 * The approval requests that wait for the owner now (pending and not past their expiry), newest first: the nav's count
 * on every page and the Overview's list. Read incrementally (the server's `ApprovalsIndex`): a page view costs a stat
 * of the folder and of each pending request while nothing changed.
 */
export async function pendingApprovals(context: DashboardContext): Promise<ApprovalRequest[]> {
  const nowMs = Date.now();
  // A request past its expiry waits for housekeeping to mark it; nobody can approve it any more.
  return (await context.approvals.pending()).filter((request) => Date.parse(request.expires_at) > nowMs);
}

/** Every approval request (any status), read again only where the approvals folder changed (as above). */
export async function allApprovals(context: DashboardContext): Promise<ApprovalRequest[]> {
  return (await context.approvals.list()).requests;
}

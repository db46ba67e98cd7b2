import { stat } from 'node:fs/promises';
import path from 'node:path';
import { type ApprovalRequest, approvalsFolder, PendingApprovals } from '@assistant/actions';
import { approvalsIndexFor } from './approvals-index.ts';
import type { DashboardContext } from './dashboard-context.ts';

const pendingByContext = new WeakMap<DashboardContext, PendingApprovals>();

/**
 * The approval requests that wait for the owner now (pending and not past their expiry), newest first: the nav's count
 * on every page and the Overview's list. Read incrementally (`PendingApprovals`): a page view costs a stat of the
 * folder and of each pending request while nothing changed.
 */
export async function pendingApprovals(context: DashboardContext): Promise<ApprovalRequest[]> {
  let pending = pendingByContext.get(context);
  if (!pending) {
    pending = new PendingApprovals({ notes: context.notes, root: context.notes.root });
    pendingByContext.set(context, pending);
  }
  const nowMs = Date.now();
  // A request past its expiry waits for housekeeping to mark it; nobody can approve it any more.
  return (await pending.list()).filter((request) => Date.parse(request.expires_at) > nowMs);
}

const allKnown = new WeakMap<DashboardContext, { version: string; requests: ApprovalRequest[] }>();

/** Every approval request (any status), read again only when the approvals folder changed (as above). */
export async function allApprovals(context: DashboardContext): Promise<ApprovalRequest[]> {
  const folder = path.join(context.notes.root, approvalsFolder);
  const info = await stat(folder).catch(() => undefined);
  const version = info ? String(info.mtimeMs) : 'none';
  let entry = allKnown.get(context);
  if (entry?.version !== version) {
    entry = { version, requests: info ? (await approvalsIndexFor(context).list(undefined)).requests : [] };
    allKnown.set(context, entry);
  }
  return entry.requests;
}

import { stat } from 'node:fs/promises';
import path from 'node:path';
import { type ApprovalRequest, approvalsFolder } from '@assistant/actions';
import { approvalsIndexFor } from './approvals-index.ts';
import type { DashboardContext } from './dashboard-context.ts';

interface Known {
  /** The approvals folder's modification time when the list was read: every request written or changed moves it. */
  version: string;
  pending: ApprovalRequest[];
}

const known = new WeakMap<DashboardContext, Known>();

/**
 * The approval requests that wait for the owner now (pending and not past their expiry), newest first: the nav's count
 * on every page and the Overview's list. Requests are written atomically (a temporary file renamed into the folder),
 * so the folder's modification time changes with each: a page view costs one stat while nothing changed, and the
 * approvals index's incremental read when something did.
 */
export async function pendingApprovals(context: DashboardContext): Promise<ApprovalRequest[]> {
  const folder = path.join(context.notes.root, approvalsFolder);
  const info = await stat(folder).catch(() => undefined);
  const version = info ? String(info.mtimeMs) : 'none';
  let entry = known.get(context);
  if (entry?.version !== version) {
    const pending = info ? (await approvalsIndexFor(context).list('pending')).requests : [];
    entry = { version, pending };
    known.set(context, entry);
  }
  const nowMs = Date.now();
  // A request past its expiry waits for housekeeping to mark it; nobody can approve it any more.
  return entry.pending.filter((request) => Date.parse(request.expires_at) > nowMs);
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

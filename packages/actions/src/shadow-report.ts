import type { NoteStore } from '@assistant/notes';
import { type ApprovalRequest, approvalsFolder, describeApproval, listApprovals } from './approvals.ts';

/** What an instance in shadow mode would have done to one item, by one rule (one shadow proposal). */
export interface ShadowEntry {
  /** The proposal's id: `assistant approve ID` runs it once the instance has left shadow mode. */
  id: string;
  instance: string;
  platform: string;
  /** The item's note and how people recognise it (a mail's subject). */
  item: string;
  title: string;
  rule: string;
  /** The actions in a few words (`archive, flag`); the proposal's note holds them in full. */
  wouldHave: string;
  /** pending, approved (after leaving shadow mode), rejected or expired. */
  status: ApprovalRequest['status'];
  createdAt: string;
  /** The proposal's note, relative to the notes root. */
  path: string;
}

export interface ShadowReport {
  entries: ShadowEntry[];
  /** Request notes that could not be read: named, not skipped silently. */
  broken: string[];
}

/**
 * What the instances in shadow mode would have done, item by item: every shadow proposal (decision 0031), oldest
 * first so it reads like the log of a day, for one instance or all. The CLI's `assistant shadow report`, `GET
 * /api/shadow` and the dashboard show this one list.
 */
export async function shadowReport(options: { notes: NoteStore; instance?: string }): Promise<ShadowReport> {
  const broken: string[] = [];
  const requests = await listApprovals(options.notes, { onBroken: (message) => broken.push(message) });
  const entries = requests
    .filter((request) => request.shadow === true)
    .filter((request) => options.instance === undefined || request.instance === options.instance)
    .map(
      (request): ShadowEntry => ({
        id: request.id,
        instance: request.instance,
        platform: request.platform,
        item: request.item,
        title: request.title,
        rule: request.rule,
        wouldHave: describeApproval(request),
        status: request.status,
        createdAt: request.created_at,
        path: `${approvalsFolder}/${request.id}.md`,
      }),
    )
    .reverse();
  return { entries, broken };
}

import { randomBytes } from 'node:crypto';
import { actionKey, type ResolvedAction } from '@assistant/automations';
import { AssistantError } from '@assistant/errors';
import type { ManifestPlatform } from '@assistant/manifests';
import { type HumanLog, NotePathError, type NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import type { ActionInstance, ActionRegistry } from './action-registry.ts';
import { enqueueApproved } from './approval-decisions.ts';
import { type ApprovalRequest, approvalsFolder, bindApproval, renderingSection } from './approvals.ts';
import type { EnqueueActionsResult } from './enqueue-actions.ts';
import { approvalId, describe, plannedForApproval } from './planned-action.ts';

export interface RequestManualActionOptions {
  registry: ActionRegistry;
  notes: NoteStore;
  queue: TaskQueue;
  humanLog?: Pick<HumanLog, 'write'>;
  /** The integration instance (`personal`), its platform (`inbox`) and the item's note, relative to the notes root. */
  instance: string;
  platform: string;
  notePath: string;
  /** A platform action from the manifest (`archive`, `unsubscribe`) and its argument when it takes one. */
  action: string;
  /** As typed on a command line (a string) or sent as JSON; a string is read as a number or boolean where needed. */
  argument?: string | number | boolean | undefined;
  /**
   * The full text the action sends or posts (a reply's words, a comment), written by the person who asks. An action
   * that sends text (`send_reply`, GitHub `comment`) sends exactly this and nothing else; without it such an act is
   * refused, since no model writes words a person did not see.
   */
  text?: string | undefined;
  /** Who asked, for the record: `cli`, `api`. */
  by: string;
  nowMs?: number;
}

export interface RequestManualActionResult {
  approval: ApprovalRequest;
  enqueued: EnqueueActionsResult['enqueued'];
  /** The action cannot be undone and was taken on this item already: irreversible actions are taken once per item, by hand too. */
  skipped: EnqueueActionsResult['skipped'];
}

/**
 * A person's own request to take one platform action on one item (`assistant act`, `POST /api/actions`). It is made
 * the same way as everything else that acts: an approval note, created already approved by the person who asked
 * (`provenance: manual`, `decided_by` cli or api), then the act task that cites it, which the worker's gate checks
 * like any other. Nothing in a task file can authorise an irreversible action; this note is the record that a person
 * did. The action must be one the platform declares, and the note must exist and be one of the instance's items
 * (under `{domain}/{instance}/`). An action that can be undone runs each
 * time a person asks for it (flag, unflag, flag again); an irreversible one once per item.
 */
export async function requestManualAction(options: RequestManualActionOptions): Promise<RequestManualActionResult> {
  const nowMs = options.nowMs ?? Date.now();
  const { instance, platform, note } = await findItem(options);
  const spec = platform.actions[options.action];
  if (!spec) {
    const names = Object.keys(platform.actions);
    throw new AssistantError(
      'BAD_REQUEST',
      `\`${options.action}\` is not an action of ${instance.domain}.${options.platform}; its actions: ${names.join(', ') || 'none'}`,
    );
  }
  const argument = readArgument(options.action, spec.argument, options.argument, spec.argument_optional === true);

  const action: ResolvedAction = {
    kind: 'platform',
    name: options.action,
    ...(argument === undefined ? {} : { argument }),
    tier: spec.tier,
    yolo: false,
    key: actionKey(options.action, argument),
    ...(spec.target === undefined ? {} : { targetField: spec.target }),
    ...(options.text === undefined ? {} : { text: options.text }),
  };
  const title = itemTitle(note.data, options.notePath);
  const at = new Date(nowMs).toISOString();
  // A fresh id each time: the request is a record of this person asking now, not a rule's standing question.
  const id = approvalId({
    instance: instance.name,
    platform: options.platform,
    notePath: options.notePath,
    keys: [action.key],
    nonce: randomBytes(8).toString('hex'),
  });
  const unbound: ApprovalRequest = {
    id,
    status: 'approved',
    created_at: at,
    expires_at: at,
    instance: instance.name,
    domain: instance.domain,
    platform: options.platform,
    rule: `by hand (${options.by})`,
    provenance: 'manual',
    reason: `a person asked for it by hand (${options.by})`,
    item: options.notePath,
    title,
    actions: [plannedForApproval(action, note.data)],
    decided_at: at,
    decided_by: options.by,
  };
  const approval = bindApproval(unbound, { path: options.notePath, data: note.data });
  const body = [
    `# ${describe(plannedForApproval(action, note.data))} for ${title}, by hand`,
    '',
    `A person asked for this through ${options.by === 'api' ? 'the API (`POST /api/actions`)' : '`assistant act`'} and`,
    `approved it in the same step. ${action.tier === 'irreversible' ? 'It cannot be undone, so it is taken once per item.' : 'It can be undone, so it is done each time a person asks.'}`,
    '',
    `The item: [${options.notePath}](../${options.notePath})`,
    '',
    ...renderingSection(approval),
  ].join('\n');
  await options.notes.create(`${approvalsFolder}/${id}.md`, { data: approval as never, body });
  const result = await enqueueApproved(options, approval, nowMs);
  return {
    approval: { ...approval, tasks: result.enqueued.map((entry) => entry.task) },
    enqueued: result.enqueued,
    skipped: result.skipped,
  };
}

/**
 * The instance, the platform as its manifest declares it, and the item's note an action is asked for: the instance
 * must exist, have the platform, and the note must be one of its items (`{domain}/{instance}/…`, where every
 * integration keeps them: the gate refuses an act on another instance's note, and a person is told so here rather
 * than by a failed task). Shared by the requests a person makes by hand and the proposals of a chat.
 */
export async function findItem(options: {
  registry: ActionRegistry;
  notes: NoteStore;
  instance: string;
  platform: string;
  notePath: string;
}): Promise<{ instance: ActionInstance; platform: ManifestPlatform; note: { data: Record<string, unknown> } }> {
  const instance = options.registry.instance(options.instance);
  if (!instance) {
    const names = options.registry.instances().map((candidate) => candidate.name);
    throw new AssistantError(
      'NOT_FOUND',
      `no integration instance \`${options.instance}\`; configured: ${names.join(', ') || 'none'}`,
    );
  }
  const platform = options.registry.manifestPlatform(instance.domain, options.platform);
  if (!platform) {
    const names = Object.keys(instance.platforms);
    throw new AssistantError(
      'NOT_FOUND',
      `the ${instance.domain} integration has no platform \`${options.platform}\`; it has: ${names.join(', ') || 'none'}`,
    );
  }
  const prefix = `${instance.domain}/${instance.name}/`;
  if (!options.notePath.startsWith(prefix) || options.notePath.split('/').includes('..')) {
    throw new AssistantError(
      'BAD_REQUEST',
      `${options.notePath} is not an item of ${instance.name}: its items are under ${prefix}`,
    );
  }
  const note = await options.notes.read(options.notePath).catch((error: unknown) => {
    if (error instanceof NotePathError) throw new AssistantError('BAD_REQUEST', error.message);
    throw error;
  });
  if (!note) throw new AssistantError('NOT_FOUND', `no note ${options.notePath}`);
  return { instance, platform, note: { data: note.data as Record<string, unknown> } };
}

export function readArgument(
  action: string,
  type: 'string' | 'number' | 'boolean' | undefined,
  value: string | number | boolean | undefined,
  optional = false,
): string | number | boolean | undefined {
  if (type === undefined) {
    if (value !== undefined) throw new AssistantError('BAD_REQUEST', `\`${action}\` takes no argument`);
    return undefined;
  }
  if (value === undefined || value === '') {
    if (optional) return undefined;
    throw new AssistantError('BAD_REQUEST', `\`${action}\` takes a ${type}, e.g. \`${action} ${example(type)}\``);
  }
  if (typeof value === type) return value;
  if (typeof value === 'string' && type === 'number' && value.trim() !== '' && !Number.isNaN(Number(value))) {
    return Number(value);
  }
  if (typeof value === 'string' && type === 'boolean' && (value === 'true' || value === 'false')) {
    return value === 'true';
  }
  throw new AssistantError('BAD_REQUEST', `\`${action}\` takes a ${type}, not ${JSON.stringify(value)}`);
}

function example(type: 'string' | 'number' | 'boolean'): string {
  return type === 'string' ? 'Bills' : type === 'number' ? '3' : 'true';
}

/** How people recognise an item: its subject, title or name, else its path. */
export function itemTitle(data: Record<string, unknown>, notePath: string): string {
  for (const key of ['subject', 'title', 'name']) {
    const value = data[key];
    if (typeof value === 'string' && value.trim() !== '') return key === 'subject' ? `"${value}"` : value;
  }
  return notePath;
}

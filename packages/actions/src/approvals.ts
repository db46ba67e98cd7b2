import { type AutomationMatch, provenances } from '@assistant/automations';
import { AssistantError } from '@assistant/errors';
import type { BrokenNoteError, HumanLog, NoteStore } from '@assistant/notes';
import * as z from 'zod';
import { approvalId, describe, type PlannedAction, plannedActionSchema, plannedForApproval } from './planned-action.ts';
import { digestOf, moreCharacters, renderActions, renderToolCall, type ShownAction } from './render-approval.ts';
import { renderInputs } from './render-template.ts';
import { toolTiers } from './tool-policy.ts';

/** Approval requests live here, one note each, named by their id. */
export const approvalsFolder = 'approvals';

/** The tool call an agent loop waits to make, on a request of kind `tool_call`. */
const toolCallSchema = z.looseObject({
  /** The tool's name as the model called it (`server__tool` for MCP tools). */
  tool: z.string(),
  tier: z.enum(toolTiers),
  /** The arguments as JSON, in full: what the owner reads is what runs. */
  arguments: z.string(),
  /** The task whose loop asks, and the loop's lineage (`system.agent › research`). */
  task: z.string(),
  loop: z.string(),
  call_id: z.string(),
});

/**
 * One queue task a hook's firing waits to enqueue, on a request of kind `hook` (packages/hooks plans them): exactly
 * what is enqueued once a person approves, shown in full in the rendering the approval binds to.
 */
export const hookTaskSchema = z.looseObject({
  /** For people: `notify "Mail from Anna"`, `enqueue github.pulls.merge {"pr":1}`. */
  summary: z.string(),
  tier: z.enum(['read_only', 'soft', 'hard', 'irreversible']),
  yolo: z.boolean().optional(),
  type: z.string(),
  payload: z.unknown().optional(),
  integration: z.string().optional(),
  priority: z.int().min(0).max(9).optional(),
  /** When it becomes ready (ISO 8601); approved later than this, it is ready at once. */
  ready_at: z.string().optional(),
  on_result: z.unknown().optional(),
});
export type HookTask = z.infer<typeof hookTaskSchema>;

/** What a request of kind `hook` is about: the hook, its version, the event that fired it and the firing. */
const hookFiringSchema = z.looseObject({
  hook: z.string(),
  version: z.string(),
  event: z.string(),
  event_type: z.string(),
  firing: z.string(),
  tasks: z.array(hookTaskSchema).min(1),
});

const approvalSchema = z
  .looseObject({
    id: z.string(),
    /**
     * `tool_call`: an agent loop waits to call a tool and runs it itself once approved (`tool_call` says which);
     * absent: a rule's (or a person's) actions on an item, enqueued when approved.
     */
    kind: z.enum(['tool_call', 'hook']).optional(),
    status: z.enum(['pending', 'approved', 'rejected', 'expired']),
    created_at: z.string(),
    expires_at: z.string(),
    instance: z.string(),
    domain: z.string(),
    platform: z.string(),
    rule: z.string(),
    /** Absent for a person's own request (`provenance: manual`). */
    rule_index: z.int().min(0).optional(),
    provenance: z.enum(provenances),
    reason: z.string(),
    item: z.string(),
    title: z.string(),
    /** Empty for a tool call. */
    actions: z.array(plannedActionSchema),
    tool_call: toolCallSchema.optional(),
    /** On a request of kind `hook`: the firing and the tasks it enqueues once approved (`actions` is empty). */
    hook_firing: hookFiringSchema.optional(),
    /**
     * A proposal of an instance in shadow mode (decision 0031): what its rules would have done. It cannot be approved
     * while the instance is still in shadow mode; once it is not, approving it runs it like any request.
     */
    shadow: z.literal(true).optional(),
    /** When the waiting loop ran the approved tool call: set before it runs, so a resumed loop never runs it twice. */
    tool_ran_at: z.string().optional(),
    decided_at: z.string().optional(),
    decided_by: z.string().optional(),
    tasks: z.array(z.string()).optional(),
    /**
     * What will happen, as every surface shows it (see `render-approval.ts`): the action, its target, every input and
     * the full text to be sent, or the tool call with its arguments. Absent on requests made before approvals were
     * bound to what they show; such a request cannot be approved.
     */
    rendering: z.string().optional(),
    /** The SHA-256 of `rendering`: what the approval binds to. Each action carries the digest of its own part. */
    digest: z.string().optional(),
    /**
     * What became of the actions an approved request enqueued, written by the worker when their tasks end: `done`, or
     * `failed` (for good) with the error's code and message in `outcome_reason`. A failure of one of its tasks is not
     * overwritten by another's `done`. Absent while they wait or run, and on requests not approved.
     */
    outcome: z.enum(['done', 'failed']).optional(),
    outcome_reason: z.string().optional(),
    outcome_at: z.string().optional(),
    /** The task the outcome is about. */
    outcome_task: z.string().optional(),
    /** Tasks refused because what they would run no longer matched what was approved. */
    refusals: z.array(z.looseObject({ at: z.string(), task: z.string().optional(), reason: z.string() })).optional(),
  })
  .check((context) => {
    const request = context.value;
    if (request.kind === 'tool_call' && request.tool_call === undefined) {
      context.issues.push({
        code: 'custom',
        input: request,
        path: ['tool_call'],
        message: 'a request of kind tool_call names its tool_call',
      });
    }
    if (request.kind === 'hook' && request.hook_firing === undefined) {
      context.issues.push({
        code: 'custom',
        input: request,
        path: ['hook_firing'],
        message: 'a request of kind hook names its hook_firing',
      });
    }
    if (request.kind === undefined && request.actions.length === 0) {
      context.issues.push({
        code: 'custom',
        input: request,
        path: ['actions'],
        message: 'expected at least one action',
      });
    }
  });
export type ApprovalRequest = z.infer<typeof approvalSchema>;

const idPattern = /^ap-[0-9a-f]{12}$/;

/** How much of a tool call's arguments a one-line description shows; the rest is named, and in the rendering. */
const describedArgumentsMaxChars = 200;

/**
 * What a request would do, in a few words for log lines and titles: `call fs__write {"path":"/x"}` for a tool call,
 * the actions (`archive, label → urgent`) otherwise. Long arguments end in `… (N more characters: open the request)`:
 * never cut without saying so. What the owner approves is the full rendering ({@link approvalRendering}), which
 * every surface shows next to it.
 */
export function describeApproval(request: ApprovalRequest): string {
  if (request.hook_firing !== undefined) return request.hook_firing.tasks.map((task) => task.summary).join(', ');
  if (request.tool_call !== undefined) {
    const shown = request.tool_call.arguments;
    if (shown.length <= describedArgumentsMaxChars) return `call ${request.tool_call.tool} ${shown}`;
    const more = moreCharacters(shown.length - describedArgumentsMaxChars);
    return `call ${request.tool_call.tool} ${shown.slice(0, describedArgumentsMaxChars)}… (${more})`;
  }
  return request.actions.map((action) => describe(action)).join(', ');
}

/**
 * The actions of a request as they will run: a script's or service's inputs filled from the item's note as
 * `enqueueActions` fills them (when `item` is given; else as written), a service's result routes as its task gets them.
 */
function shownActions(
  actions: readonly PlannedAction[],
  item?: { path: string; data: Record<string, unknown> },
): ShownAction[] {
  return actions.map((action) => {
    let inputs = action.inputs;
    let inputsProblem: string | undefined;
    if (item && action.kind !== 'platform') {
      try {
        inputs = renderInputs(action.inputs, { ...item.data, item: item.path });
      } catch (error) {
        inputsProblem = error instanceof Error ? error.message : String(error);
      }
    }
    return {
      kind: action.kind,
      name: action.name,
      tier: action.tier,
      ...(action.target === undefined ? {} : { target: action.target }),
      ...(action.argument === undefined ? {} : { argument: action.argument }),
      ...(action.kind === 'platform' ? {} : inputsProblem === undefined ? { inputs: inputs ?? {} } : { inputsProblem }),
      ...(action.kind === 'service'
        ? {
            routes: action.on_result ?? [{ note: true }],
            ...(action.human_log === undefined ? {} : { humanLog: action.human_log }),
          }
        : {}),
      ...(action.text === undefined ? {} : { text: action.text }),
    };
  });
}

/**
 * A request of actions with its canonical rendering and digests filled in (`rendering`, `digest`, and each action's
 * `digest`), from the actions as they will run for the item as `item` shows it now. Call it last, on the request as
 * it will be written: whatever is added to an action after it (a `text`) is not bound.
 */
export function bindApproval(
  request: ApprovalRequest,
  item?: { path: string; data: Record<string, unknown> },
): ApprovalRequest {
  if (request.tool_call !== undefined) return request;
  if (request.hook_firing !== undefined) {
    const rendering = renderHookFiring(request);
    return { ...request, rendering, digest: digestOf(rendering) };
  }
  const rendered = renderActions({
    instance: request.instance,
    platform: request.platform,
    item: request.item,
    title: request.title,
    actions: shownActions(request.actions, item),
  });
  return {
    ...request,
    actions: request.actions.map((action, index) => ({ ...action, digest: rendered.actionDigests[index] ?? '' })),
    rendering: rendered.rendering,
    digest: rendered.digest,
  };
}

/**
 * What a request will do, as every surface shows it: the rendering it was bound to, or for a request made before
 * approvals were bound (`bound: false`) one made from what its note holds (a rule's inputs as written), which cannot
 * be approved.
 */
export function approvalRendering(request: ApprovalRequest): { rendering: string; bound: boolean } {
  if (request.rendering !== undefined && request.digest !== undefined) {
    return { rendering: request.rendering, bound: true };
  }
  if (request.hook_firing !== undefined) return { rendering: renderHookFiring(request), bound: false };
  if (request.tool_call !== undefined) {
    let input: unknown = request.tool_call.arguments;
    try {
      input = JSON.parse(request.tool_call.arguments);
    } catch {
      // Shown as the text it is.
    }
    const { rendering } = renderToolCall({ ...request.tool_call, input });
    return { rendering, bound: false };
  }
  return { rendering: bindApproval(request).rendering ?? '', bound: false };
}

/**
 * The rendering as a section of the request note's body, in a fence longer than any run of backticks in it, so no
 * text it quotes can close the fence early.
 */
export function renderingSection(request: ApprovalRequest): string[] {
  const { rendering } = approvalRendering(request);
  const longest = Math.max(0, ...Array.from(rendering.matchAll(/`+/g), (run) => run[0].length));
  const fence = '`'.repeat(Math.max(3, longest + 1));
  return [
    `What will happen, in full (the approval binds to it${request.digest ? `: ${request.digest}` : ''}):`,
    '',
    `${fence}text`,
    rendering,
    fence,
    '',
  ];
}

/**
 * A request as the REST API, MCP and `--json` give it: with its `rendering` (the bound one, or one made from its note
 * for a request made before approvals were bound) and whether it is `bound`, so no reader has to rebuild it.
 */
export function withRendering(request: ApprovalRequest): ApprovalRequest & { rendering: string; bound: boolean } {
  const { rendering, bound } = approvalRendering(request);
  return { ...request, rendering, bound };
}

/** Why a request made before approvals were bound to what they show cannot be approved. */
export function unboundProblem(request: ApprovalRequest): string | undefined {
  if (request.digest !== undefined && request.rendering !== undefined) return undefined;
  return `approval ${request.id} was made before approvals were bound to what they show (its note has no digest), so it cannot be approved: reject it and let it be asked again`;
}

/**
 * Records on the request that a task was refused because what it would run is not what was approved. A failure to
 * write only loses the record; the task is refused all the same.
 */
export async function recordRefusal(
  notes: NoteStore,
  refusal: { id: string; task?: string; reason: string; nowMs?: number },
): Promise<void> {
  try {
    await notes.update(`${approvalsFolder}/${refusal.id}.md`, {
      change: (current) => {
        const list = Array.isArray(current.data.refusals) ? current.data.refusals : [];
        const entry = {
          at: new Date(refusal.nowMs ?? Date.now()).toISOString(),
          ...(refusal.task === undefined ? {} : { task: refusal.task }),
          reason: refusal.reason,
        };
        // A retried check of the same task says the same thing once.
        if (list.some((old) => isSameRefusal(old, entry))) return {};
        return { set: { refusals: [...list, entry] as never } };
      },
    });
  } catch {
    // The refusal stands; only its note on the request is missing.
  }
}

function isSameRefusal(old: unknown, entry: { task?: string; reason: string }): boolean {
  if (old === null || typeof old !== 'object') return false;
  const record = old as { task?: unknown; reason?: unknown };
  return record.task === entry.task && record.reason === entry.reason;
}

/**
 * The request's status with what became of what it allowed, in a few words: `approved, failed`, `approved, done`,
 * `pending`. An approval only says a person said yes; the outcome says whether it happened.
 */
export function statusWithOutcome(request: Pick<ApprovalRequest, 'status' | 'outcome'>): string {
  return request.outcome === undefined ? request.status : `${request.status}, ${request.outcome}`;
}

/** Whether `id` has the form of an approval id (`ap-` and 12 hex digits). */
export function isApprovalId(id: string): boolean {
  return idPattern.test(id);
}

export interface CreateApprovalRequestOptions {
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  instance: string;
  domain: string;
  platform: string;
  notePath: string;
  /**
   * The item note's frontmatter, for what each action is done to (`enqueueActions` passes the note it read). Absent,
   * the actions show no target.
   */
  item?: Record<string, unknown>;
  title: string;
  match: AutomationMatch;
  expiresMs: number;
  /**
   * Completes the actions before the request is made, and only when it is made (not for one that exists): writes the
   * texts of actions that send words (`enqueueActions`' `writeText`), so the request shows them and carries them.
   */
  prepare?: (actions: AutomationMatch['actions']) => Promise<AutomationMatch['actions']>;
  /** A shadow-mode proposal: what the rule would have done (every action, reversible or not). @default false */
  shadow?: boolean;
  nowMs: number;
}

/**
 * Parks a rule's actions for one item as a note a person reads and decides on. The id is derived from the
 * instance, platform, item, rule and actions, so later cycles that see the same item find the request (whatever
 * its status) and do not ask again.
 */
export async function createApprovalRequest(
  options: CreateApprovalRequestOptions,
): Promise<{ id: string; path: string; created: boolean }> {
  const { match } = options;
  const id = approvalId({
    instance: options.instance,
    platform: options.platform,
    notePath: options.notePath,
    ruleIndex: match.ruleIndex,
    keys: match.actions.map((action) => action.key),
  });
  const notePath = `${approvalsFolder}/${id}.md`;
  if (await options.notes.read(notePath).catch(() => 'broken')) return { id, path: notePath, created: false };
  // The texts are written before the request is bound: the digest covers the words the owner will read.
  const prepared = options.prepare ? await options.prepare(match.actions) : match.actions;
  const actions = prepared.map((action) => plannedForApproval(action, options.item ?? {}));
  const unbound: ApprovalRequest = {
    id,
    status: 'pending',
    created_at: new Date(options.nowMs).toISOString(),
    expires_at: new Date(options.nowMs + options.expiresMs).toISOString(),
    instance: options.instance,
    domain: options.domain,
    platform: options.platform,
    rule: match.rule,
    ...(match.ruleIndex === undefined ? {} : { rule_index: match.ruleIndex }),
    provenance: match.provenance,
    reason: match.reason,
    item: options.notePath,
    title: options.title,
    actions,
    ...(options.shadow === true ? { shadow: true as const } : {}),
  };
  const request = bindApproval(unbound, { path: options.notePath, data: options.item ?? {} });
  const list = actions.map((action) => `- ${describe(action)} (${action.tier.replace('_', ' ')})`).join('\n');
  const targets = actions.flatMap((action) => (action.target ? [`\`${action.target.field}\``] : []));
  const shadow = options.shadow === true;
  const body = [
    shadow
      ? `# Would have: ${actions.map((action) => describe(action)).join(', ')} for ${options.title}`
      : `# Approve ${actions.map((action) => describe(action)).join(', ')} for ${options.title}?`,
    '',
    `Rule "${match.rule}" of ${options.instance}/${options.platform} matched because ${match.reason}`,
    shadow
      ? `(${match.provenance} provenance). ${options.instance} is in shadow mode, so nothing was done; it would have taken:`
      : `(${match.provenance} provenance), and it needs a person's approval before it acts:`,
    '',
    list,
    '',
    ...(targets.length > 0
      ? [`What follows \`→\` is what the action is done to: the item's ${targets.join(', ')} when this was asked.`, '']
      : []),
    `The item: [${options.notePath}](../${options.notePath})`,
    '',
    ...renderingSection(request),
    ...(shadow
      ? [
          `See every proposal with \`assistant shadow report ${options.instance}\`. After \`assistant shadow off ${options.instance}\``,
          `you may approve it with \`assistant approve ${id}\` (it then runs); reject it with \`assistant reject ${id}\`.`,
          `Unless decided, it expires at ${request.expires_at} and nothing happens.`,
        ]
      : [
          `Approve with \`assistant approve ${id}\` or reject with \`assistant reject ${id}\`. Unless decided, it expires at`,
          `${request.expires_at} and nothing happens.`,
        ]),
    '',
  ].join('\n');
  try {
    await options.notes.create(notePath, { data: request as never, body });
  } catch (error) {
    // Another worker made the same request a moment ago: the same id, the same content.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { id, path: notePath, created: false };
    throw error;
  }
  await options.humanLog?.write({
    source: `${options.instance}/${options.platform}`,
    message: shadow
      ? `would have: ${actions.map((action) => describe(action)).join(', ')} for ${options.title} (shadow mode, nothing done)`
      : `asked for approval to ${actions.map((action) => describe(action)).join(', ')} for ${options.title}`,
    reason: shadow
      ? `rule "${match.rule}" (${match.provenance}) matched: ${match.reason}`
      : `rule "${match.rule}" (${match.provenance}) needs approval: ${match.reason}`,
    link: notePath,
  });
  return { id, path: notePath, created: true };
}

/** Reads an approval request; undefined when there is none, an error when its note is broken. */
export async function readApproval(notes: NoteStore, id: string): Promise<ApprovalRequest | undefined> {
  if (!isApprovalId(id))
    throw new AssistantError('BAD_REQUEST', `\`${id}\` is not an approval id (ap- and 12 hex digits)`);
  const note = await notes.read(`${approvalsFolder}/${id}.md`);
  if (!note) return undefined;
  return parseApproval(id, note.data);
}

export function parseApproval(id: string, data: unknown): ApprovalRequest {
  const checked = approvalSchema.safeParse(data);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new AssistantError(
      'BAD_REQUEST',
      `approval ${id} cannot be read: ${issue?.path.join('.')}: ${issue?.message}`,
      {
        hint: `fix ${approvalsFolder}/${id}.md by hand`,
      },
    );
  }
  return checked.data;
}

/** Every approval request, newest first; broken notes are passed to `onBroken` and left alone. */
export async function listApprovals(
  notes: NoteStore,
  options: { status?: ApprovalRequest['status']; onBroken?: (message: string) => void } = {},
): Promise<ApprovalRequest[]> {
  const found: ApprovalRequest[] = [];
  for (const note of await notes.query({
    folder: approvalsFolder,
    onBroken: (error: BrokenNoteError) => options.onBroken?.(error.message),
  })) {
    const parsed = approvalOfNote(note);
    if (!parsed.ok) {
      options.onBroken?.(parsed.broken);
      continue;
    }
    if (options.status === undefined || parsed.request.status === options.status) found.push(parsed.request);
  }
  return sortApprovals(found);
}

/** A note of the approvals folder as a request, or why it is not one (for lists that skip it and say so). */
export function approvalOfNote(note: {
  path: string;
  data: unknown;
}): { ok: true; request: ApprovalRequest } | { ok: false; broken: string } {
  const checked = approvalSchema.safeParse(note.data);
  return checked.success
    ? { ok: true, request: checked.data }
    : { ok: false, broken: `${note.path}: not an approval request` };
}

/** Newest first, as every list of requests shows them. */
export function sortApprovals(requests: ApprovalRequest[]): ApprovalRequest[] {
  return requests.sort((left, right) => right.created_at.localeCompare(left.created_at));
}

/** Writes the human-log line of a request that expired undecided. */
export async function logExpiry(options: { humanLog?: Pick<HumanLog, 'write'> }, request: ApprovalRequest) {
  await options.humanLog?.write({
    source: 'approvals',
    message: `dropped ${describeApproval(request)} for ${request.title}: nobody approved it in time`,
    reason: `approval for ${request.kind === 'tool_call' ? 'the tool call' : request.kind === 'hook' ? `hook "${request.rule}"` : `rule "${request.rule}"`} expired at ${request.expires_at}`,
    link: `${approvalsFolder}/${request.id}.md`,
  });
}

/**
 * Marks one request expired, with its human-log line, if it is still pending under the note's lock (one approved a
 * moment ago stays approved). Returns whether it did.
 */
export async function expireApproval(
  options: { notes: NoteStore; humanLog?: Pick<HumanLog, 'write'> },
  request: ApprovalRequest,
  nowMs: number,
): Promise<boolean> {
  const stillPending = await markExpiredIfPending(options.notes, request.id, nowMs, 'expiry');
  if (stillPending) await logExpiry(options, request);
  return stillPending;
}

/** Sets a request `expired` by `by` if it is still pending under the note's lock; whether it was. */
async function markExpiredIfPending(notes: NoteStore, id: string, nowMs: number, by: string): Promise<boolean> {
  let stillPending = false;
  await notes.update(`${approvalsFolder}/${id}.md`, {
    change: (current) => {
      stillPending = current.data.status === 'pending';
      return stillPending
        ? { set: { status: 'expired', decided_at: new Date(nowMs).toISOString(), decided_by: by } }
        : {};
    },
  });
  return stillPending;
}

/**
 * Who marks a tool call's request `expired` when no loop waits for it any more: its `decided_by`. The same call asked
 * again (a loop replayed with the same call id) reopens such a request instead of being refused.
 */
export const withdrawnBy = 'withdrawn';

/** Whether a request was withdrawn (see {@link withdrawApproval}) rather than decided or expired. */
export function isWithdrawn(request: Pick<ApprovalRequest, 'status' | 'decided_by'>): boolean {
  return request.status === 'expired' && request.decided_by === withdrawnBy;
}

/**
 * Withdraws a tool call's request that no loop waits for any more (the loop stopped, the task timed out or its worker
 * died): still pending under the note's lock, it is marked expired by {@link withdrawnBy}, with a human-log line
 * saying why, so the owner is not left deciding a call nobody will run. Returns whether it did.
 */
export async function withdrawApproval(
  options: { notes: NoteStore; humanLog?: Pick<HumanLog, 'write'> },
  request: ApprovalRequest,
  nowMs: number,
  why: string,
): Promise<boolean> {
  const stillPending = await markExpiredIfPending(options.notes, request.id, nowMs, withdrawnBy);
  if (stillPending) {
    await options.humanLog?.write({
      source: 'approvals',
      message: `withdrew ${describeApproval(request)} for ${request.title}: no loop waits for it any more`,
      reason: why,
      link: `${approvalsFolder}/${request.id}.md`,
    });
  }
  return stillPending;
}

/**
 * Withdraws every pending tool-call request of a task: its previous attempt's worker died while they waited, so no
 * loop will run them. The task's next attempt asks again for what it still needs. Returns their ids.
 */
export async function withdrawTaskToolCalls(options: {
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  taskId: string;
  why: string;
  nowMs?: number;
}): Promise<string[]> {
  const nowMs = options.nowMs ?? Date.now();
  const withdrawn: string[] = [];
  for (const request of await listApprovals(options.notes, { status: 'pending' })) {
    if (request.kind !== 'tool_call' || request.tool_call?.task !== options.taskId) continue;
    if (await withdrawApproval(options, request, nowMs, options.why)) withdrawn.push(request.id);
  }
  return withdrawn;
}

/** Marks every pending request past its expiry as expired, with a human-log line each. Returns their ids. */
export async function expireApprovals(options: {
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  nowMs?: number;
}): Promise<string[]> {
  const nowMs = options.nowMs ?? Date.now();
  const expired: string[] = [];
  for (const request of await listApprovals(options.notes, { status: 'pending' })) {
    if (Date.parse(request.expires_at) > nowMs) continue;
    if (await expireApproval(options, request, nowMs)) expired.push(request.id);
  }
  return expired;
}

/**
 * What a hook's request will do, in full: the firing, then each task with its type, instance, due time and payload
 * as canonical JSON. The approval binds to its digest; the tasks enqueued are exactly these.
 */
export function renderHookFiring(request: ApprovalRequest): string {
  const firing = request.hook_firing;
  if (firing === undefined) return '';
  const lines = [
    `Hook: ${firing.hook} (version ${firing.version}, ${request.provenance} provenance)`,
    `Event: ${firing.event} (${firing.event_type})`,
    `Firing: ${firing.firing}`,
    `Why: ${request.reason}`,
    '',
    'It will:',
  ];
  firing.tasks.forEach((task, index) => {
    lines.push(`${index + 1}. ${task.summary} (${task.tier.replace('_', ' ')}${task.yolo ? ', !yolo' : ''})`);
    lines.push(`   task: ${task.type}${task.integration ? ` on ${task.integration}` : ''}`);
    if (task.ready_at) lines.push(`   not before: ${task.ready_at}`);
    lines.push(`   payload: ${canonical(task.payload ?? {})}`);
    if (task.on_result !== undefined) lines.push(`   result: ${canonical(task.on_result)}`);
  });
  return lines.join('\n');
}

function canonical(value: unknown): string {
  const sort = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sort);
    if (item !== null && typeof item === 'object')
      return Object.fromEntries(
        Object.keys(item)
          .sort()
          .map((key) => [key, sort((item as Record<string, unknown>)[key])]),
      );
    return item;
  };
  return JSON.stringify(sort(value));
}

export interface CreateHookApprovalRequestOptions {
  notes: NoteStore;
  humanLog?: Pick<HumanLog, 'write'>;
  firing: z.input<typeof hookFiringSchema>;
  provenance: ApprovalRequest['provenance'];
  /** Why the hook fired, for people: its fast path and the model's reason. */
  reason: string;
  expiresMs: number;
  nowMs: number;
}

/**
 * Parks a hook firing's tasks as a request a person decides on (`assistant approve`, the dashboard, chat). The id
 * comes from the hook and the firing, so a runner that performs the same firing again finds the request instead of
 * asking twice. Approved, the tasks are enqueued exactly as rendered.
 */
export async function createHookApprovalRequest(
  options: CreateHookApprovalRequestOptions,
): Promise<{ id: string; path: string; created: boolean }> {
  const firing = hookFiringSchema.parse(options.firing);
  const id = approvalId({
    instance: 'hooks',
    platform: firing.hook,
    notePath: firing.event,
    keys: [firing.firing],
  });
  const notePath = `${approvalsFolder}/${id}.md`;
  if (await options.notes.read(notePath).catch(() => 'broken')) return { id, path: notePath, created: false };
  const title = `hook ${firing.hook} on ${firing.event_type} ${firing.event}`;
  const request = bindApproval({
    id,
    kind: 'hook',
    status: 'pending',
    created_at: new Date(options.nowMs).toISOString(),
    expires_at: new Date(options.nowMs + options.expiresMs).toISOString(),
    instance: 'hooks',
    domain: 'hooks',
    platform: firing.hook,
    rule: firing.hook,
    provenance: options.provenance,
    reason: options.reason,
    item: firing.event,
    title,
    actions: [],
    hook_firing: firing,
  });
  const body = [
    `# Approve ${describeApproval(request)}?`,
    '',
    `Hook "${firing.hook}" fired on ${firing.event_type} event ${firing.event} (${options.provenance} provenance): ${options.reason}`,
    '',
    ...renderingSection(request),
    `Approve with \`assistant approve ${id}\` or reject with \`assistant reject ${id}\`. Unless decided, it expires at`,
    `${request.expires_at} and nothing happens.`,
    '',
  ].join('\n');
  try {
    await options.notes.create(notePath, { data: request as never, body });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return { id, path: notePath, created: false };
    throw error;
  }
  await options.humanLog?.write({
    source: `hooks/${firing.hook}`,
    message: `asked for approval to ${describeApproval(request)}`,
    reason: `hook "${firing.hook}" (${options.provenance}) fired on ${firing.event}: ${options.reason}`,
    link: notePath,
  });
  return { id, path: notePath, created: true };
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

import { type AutomationMatch, type Provenance, provenances, type ResolvedAction } from '@assistant/automations';
import type { HumanLog, NoteStore } from '@assistant/notes';
import type { EnqueueOutcome, JsonValue, TaskQueue } from '@assistant/queue';
import * as z from 'zod';
import { createApprovalRequest } from './approvals.ts';
import { describe, planned, plannedActionSchema } from './planned-action.ts';

import { renderInputs } from './render-template.ts';

/** The payload of a platform's `act` task: the item, the actions, and the rule that decided them. */
export const actPayloadSchema = z.looseObject({
  item: z.string(),
  rule: z.string(),
  /** The rule's place in its platform's `automations:`; absent for an action a person asked for by hand. */
  rule_index: z.int().min(0).optional(),
  provenance: z.enum(provenances),
  actions: z.array(plannedActionSchema).min(1),
  /** The approval request a person approved, for actions that needed one. */
  approval: z.string().optional(),
});
export type ActPayload = z.infer<typeof actPayloadSchema>;

/** One entry of an item note's `actions_taken`. */
export interface ActionTaken {
  action: string;
  rule: string;
  provenance: Provenance;
  at: string;
  task?: string;
  approval?: string;
}

export interface EnqueueActionsOptions {
  notes: NoteStore;
  queue: TaskQueue;
  humanLog?: Pick<HumanLog, 'write'>;
  /** The instance, its integration's domain and the platform the item belongs to. */
  instance: string;
  domain: string;
  platform: string;
  /** The item's note, relative to the notes root; its frontmatter is the data templates see. */
  notePath: string;
  /** How people recognise the item in logs: a subject, a title. @default the note path */
  title?: string;
  matches: readonly AutomationMatch[];
  /** How long approval requests wait. */
  approvalExpiresMs: number;
  /** Set when a person approved these matches: they run instead of asking again. */
  approvedBy?: { approval: string };
  /**
   * A person asked for these actions by hand, now: the ones that can be undone run every time they ask (flag, unflag,
   * flag again), recorded each time; irreversible ones are still taken once per item. @default false
   */
  repeatReversible?: boolean;
  /**
   * Writes the full text of a platform action that sends or posts words (an email reply, a GitHub comment), or
   * returns undefined for an action that sends none. It is called before an approval request is made (only when the
   * request does not exist yet) and before an action that needs no approval (`!yolo`) is recorded and enqueued, so
   * the request shows the text and the act task carries it; the act sends exactly it. Not called for approved
   * actions: they carry the text the person saw. A throw (a model outage: `ModelUnavailableError`) leaves that
   * rule's actions unmade and unrecorded; the other rules' are taken, then the error is thrown, so the calling task
   * waits (or fails) and, run again, takes what is left.
   */
  writeText?: (action: ResolvedAction) => Promise<string | undefined>;
  /**
   * The instance is in shadow mode: every matched rule becomes a proposal (an approval request marked `shadow`), its
   * actions reversible or not, and nothing is recorded as taken or enqueued (decision 0031). @default false
   */
  shadow?: boolean;
  nowMs?: number;
}

export interface EnqueueActionsResult {
  enqueued: { key: string; type: string; task: string }[];
  /** Actions already on the item's `actions_taken`: never taken twice. */
  skipped: { key: string; reason: string }[];
  approvals: { id: string; path: string; created: boolean }[];
}

/**
 * Takes the actions of matched rules for one item: scripts become one `script.run` task each, services one
 * `service.{domain}.{service}` task each, platform actions go together into the platform's `act` task. A rule that
 * needs approval becomes an approval request instead. Every action taken is recorded in the item note's
 * `actions_taken` before its task is enqueued: after a crash in between the action is recorded but not done (at most
 * once, which is the safe side for actions that cannot be undone), and no later cycle takes it again.
 */
export async function enqueueActions(options: EnqueueActionsOptions): Promise<EnqueueActionsResult> {
  const nowMs = options.nowMs ?? Date.now();
  const result: EnqueueActionsResult = { enqueued: [], skipped: [], approvals: [] };
  const note = await options.notes.read(options.notePath);
  if (!note) throw new Error(`enqueueActions: no note ${options.notePath}`);
  const data = note.data as Record<string, unknown>;
  const title = options.title ?? options.notePath;
  // A text that cannot be written (a model outage, a template that does not render) holds back only its own rule's
  // actions: the other rules are taken, and the first such error is thrown at the end, so the task waits or fails
  // and, run again, takes what is left (what was taken is on the note, requests made are found).
  let notWritten: { error: unknown } | undefined;
  const given = options.writeText;
  const writeText =
    given &&
    (async (action: ResolvedAction) => {
      try {
        return await given(action);
      } catch (error) {
        throw new TextNotWritten(error);
      }
    });

  for (const match of options.matches) {
    try {
      await takeMatch(match);
    } catch (error) {
      if (!(error instanceof TextNotWritten)) throw error;
      notWritten ??= { error: error.cause };
    }
  }
  if (notWritten) throw notWritten.error;
  return result;

  async function takeMatch(match: AutomationMatch): Promise<void> {
    if ((match.approval || options.shadow === true) && !options.approvedBy) {
      const approval = await createApprovalRequest({
        notes: options.notes,
        ...(options.humanLog ? { humanLog: options.humanLog } : {}),
        instance: options.instance,
        domain: options.domain,
        platform: options.platform,
        notePath: options.notePath,
        item: data,
        title,
        match,
        expiresMs: match.approvalExpiresMs ?? options.approvalExpiresMs,
        ...(options.shadow === true ? { shadow: true } : {}),
        ...(writeText ? { prepare: (actions) => withTexts(actions, writeText) } : {}),
        nowMs,
      });
      result.approvals.push(approval);
      return;
    }
    const approval = options.approvedBy?.approval;
    // Record first (see above), atomically under the note's lock: of two cycles (or approvals) racing on one item,
    // only one finds an action untaken and takes it. An action listed twice counts once.
    const repeatable = (action: ResolvedAction) => options.repeatReversible === true && action.tier !== 'irreversible';
    // The texts are written before anything is recorded: a model outage here leaves the actions untaken, to be taken
    // (with their texts) when the task runs again. Approved actions carry theirs from the request; actions on the
    // note already are not written again (a race with another cycle only costs a text that is not used).
    const alreadyTaken = new Set(takenKeys(data.actions_taken));
    const actions =
      approval === undefined && writeText
        ? await withTexts(
            uniqueByKey(match.actions),
            writeText,
            (action) => repeatable(action) || !alreadyTaken.has(action.key),
          )
        : uniqueByKey(match.actions);
    const fresh = await recordActionsTaken(options.notes, options.notePath, actions, repeatable, (action) => ({
      action: action.key,
      rule: match.rule,
      provenance: match.provenance,
      at: new Date(nowMs).toISOString(),
      ...(approval ? { approval } : {}),
    }));
    for (const action of actions) {
      if (!fresh.includes(action)) result.skipped.push({ key: action.key, reason: 'already taken' });
    }
    if (fresh.length === 0) return;

    const templateData = { ...data, item: options.notePath };
    const platformActions = fresh.filter((action) => action.kind === 'platform');
    const taskIds = new Map<string, string>();
    if (platformActions.length > 0) {
      const type = `${options.domain}.${options.platform}.act`;
      const payload: ActPayload = {
        item: options.notePath,
        rule: match.rule,
        ...(match.ruleIndex === undefined ? {} : { rule_index: match.ruleIndex }),
        provenance: match.provenance,
        actions: platformActions.map(planned),
        ...(approval ? { approval } : {}),
      };
      const task = await enqueued(options.queue, {
        type,
        payload: payload as unknown as JsonValue,
        integration: options.instance,
        priority: 7,
      });
      for (const action of platformActions) taskIds.set(action.key, task);
      result.enqueued.push(...platformActions.map((action) => ({ key: action.key, type, task })));
    }
    for (const action of fresh) {
      if (action.kind === 'platform') continue;
      const inputs = renderInputs(action.inputs, templateData);
      // The gate finds the rule by its index (names need not be unique) and checks it still asks for this action.
      const requestedBy = {
        instance: options.instance,
        platform: options.platform,
        item: options.notePath,
        rule: match.rule,
        ...(match.ruleIndex === undefined ? {} : { rule_index: match.ruleIndex }),
      };
      let type: string;
      let task: string;
      if (action.kind === 'script') {
        type = 'script.run';
        task = await enqueued(options.queue, {
          type,
          payload: {
            script: action.name,
            inputs,
            requested_by: requestedBy,
            provenance: match.provenance,
            ...(approval ? { approval } : {}),
          },
          priority: 7,
        });
      } else {
        const [domain = '', instance = '', service = ''] = action.name.split('.');
        type = `service.${domain}.${service}`;
        task = await enqueued(options.queue, {
          type,
          payload: { inputs },
          integration: instance,
          priority: 6,
          onResult: {
            routes: (action.onResult ?? [{ note: true }]) as JsonValue,
            ...(action.humanLog ? { human_log: action.humanLog } : {}),
            requested_by: { ...requestedBy, ...(approval ? { approval } : {}) },
          },
        });
      }
      taskIds.set(action.key, task);
      result.enqueued.push({ key: action.key, type, task });
    }
    await setActionTasks(options.notes, options.notePath, taskIds);
    await options.humanLog?.write({
      source: `${options.instance}/${options.platform}`,
      // `decided:` says the rule chose the actions; the act writes `done:` when they happened, the worker `FAILED:`.
      message: `decided: ${fresh.map((action) => describe(action)).join(', ')} for ${title}`,
      reason: `${approval ? `approved (${approval}); ` : ''}rule "${match.rule}" (${match.provenance}): ${match.reason}`,
      link: options.notePath,
    });
  }
}

/** `writeText` failed: the rule's actions are held back, the other rules' taken (see `enqueueActions`). */
class TextNotWritten extends Error {
  constructor(cause: unknown) {
    super('the text of an action could not be written', { cause });
  }
}

/**
 * The platform actions with the texts `writeText` writes for them (the others as they are), one at a time: each may
 * be an LLM call. `wanted` leaves out actions whose text would not be used.
 */
async function withTexts(
  actions: readonly ResolvedAction[],
  writeText: ((action: ResolvedAction) => Promise<string | undefined>) | undefined,
  wanted: (action: ResolvedAction) => boolean = () => true,
): Promise<ResolvedAction[]> {
  const written: ResolvedAction[] = [];
  for (const action of actions) {
    const text =
      writeText && action.kind === 'platform' && action.text === undefined && wanted(action)
        ? await writeText(action)
        : undefined;
    written.push(text === undefined ? action : { ...action, text });
  }
  return written;
}

function takenKeys(value: unknown): string[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry) =>
    entry !== null && typeof entry === 'object' && typeof (entry as { action?: unknown }).action === 'string'
      ? [(entry as { action: string }).action]
      : [],
  );
}

/** A rule's actions without repeats: `then: [unsubscribe, unsubscribe]` is one unsubscribe. The first one wins. */
function uniqueByKey<Action extends { key: string }>(actions: readonly Action[]): Action[] {
  const seen = new Set<string>();
  return actions.filter((action) => !seen.has(action.key) && seen.add(action.key) !== undefined);
}

/**
 * Appends an entry to the item note's `actions_taken` for each action not on it yet, in one read-check-write under
 * the note's lock, and returns those actions: the ones this caller now owns.
 */
async function recordActionsTaken<Action extends { key: string }>(
  notes: NoteStore,
  notePath: string,
  actions: readonly Action[],
  /** Taken again even when already on the note (a person's reversible action by hand); recorded all the same. */
  repeatable: (action: Action) => boolean,
  entry: (action: Action) => ActionTaken,
): Promise<Action[]> {
  let fresh: Action[] = [];
  await notes.update(notePath, {
    change: (current) => {
      const list = Array.isArray(current.data.actions_taken) ? current.data.actions_taken : [];
      const taken = new Set(takenKeys(list));
      fresh = actions.filter((action) => repeatable(action) || !taken.has(action.key));
      return fresh.length === 0 ? {} : { set: { actions_taken: [...list, ...fresh.map(entry)] as never } };
    },
  });
  return fresh;
}

async function setActionTasks(notes: NoteStore, notePath: string, taskIds: Map<string, string>): Promise<void> {
  if (taskIds.size === 0) return;
  await notes.update(notePath, {
    change: (current) => {
      const list = Array.isArray(current.data.actions_taken)
        ? (current.data.actions_taken as Record<string, unknown>[])
        : [];
      const updated = list.map((entry) => {
        const task =
          typeof entry.action === 'string' && entry.task === undefined ? taskIds.get(entry.action) : undefined;
        return task ? { ...entry, task } : entry;
      });
      return { set: { actions_taken: updated as never } };
    },
  });
}

async function enqueued(
  queue: TaskQueue,
  options: { type: string; payload: JsonValue; integration?: string; priority: number; onResult?: JsonValue },
): Promise<string> {
  // Automation tasks go through the policies; a duplicate still pending is the same action already on its way.
  const outcome: EnqueueOutcome = await queue.enqueue({ ...options, source: 'automation' });
  if (outcome.status === 'enqueued') return outcome.task.id;
  if (outcome.status === 'duplicate') return outcome.existing;
  throw new Error(`could not enqueue ${options.type}: ${outcome.reason}`);
}

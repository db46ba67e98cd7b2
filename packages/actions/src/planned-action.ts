// An action as act tasks and approval requests carry it, and the id of a request: at the bottom of the action
// layer, so the requests (approvals.ts) and the enqueueing (enqueue-actions.ts) both build on it and neither imports
// the other for it (issue 38: no import circles).
import { createHash } from 'node:crypto';
import type { ResolvedAction } from '@assistant/automations';
import { reversibilityTiers } from '@assistant/manifests';
import * as z from 'zod';

/** One action as an act task or an approval request carries it. */
export const plannedActionSchema = z.strictObject({
  kind: z.enum(['platform', 'script', 'service']),
  name: z.string(),
  key: z.string(),
  tier: z.enum(reversibilityTiers),
  yolo: z.boolean(),
  argument: z.unknown().optional(),
  inputs: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  human_log: z.string().optional(),
  on_result: z.array(z.record(z.string(), z.unknown())).optional(),
  /**
   * The full text the action sends or posts (a reply, a comment), written before the owner is asked, so the approval
   * shows it and the act sends exactly it instead of writing new words at act time.
   */
  text: z.string().optional(),
  /**
   * What the action is done to, as the item showed it when the request was made (approval requests only): the
   * manifest's `target` field of the item and its value, absent when the item has none.
   */
  target: z.strictObject({ field: z.string(), value: z.string().optional() }).optional(),
  /**
   * The digest of this action's part of the approval's rendering (approval requests only): the task that runs the
   * action must render to the same, or it is refused (see `check-act.ts`).
   */
  digest: z.string().optional(),
});
export type PlannedAction = z.infer<typeof plannedActionSchema>;

/**
 * An action as task payloads and approval requests carry it: snake_case, absent fields left out. An approved action
 * brings the text its approval showed (`text`), which the act sends as it is.
 */
export function planned(action: ResolvedAction & { text?: string }): PlannedAction {
  return {
    kind: action.kind,
    name: action.name,
    key: action.key,
    tier: action.tier,
    yolo: action.yolo,
    ...(action.argument === undefined ? {} : { argument: action.argument }),
    ...(action.inputs === undefined ? {} : { inputs: action.inputs }),
    ...(action.humanLog === undefined ? {} : { human_log: action.humanLog }),
    ...(action.onResult === undefined ? {} : { on_result: action.onResult }),
    ...(action.text === undefined ? {} : { text: action.text }),
  };
}

/**
 * An action as an approval request carries it: planned, with what it will be done to (the item's value of the
 * manifest's `target` field) as the item shows it now.
 */
export function plannedForApproval(action: ResolvedAction, item: Record<string, unknown>): PlannedAction {
  if (action.targetField === undefined) return planned(action);
  const value = item[action.targetField];
  const shown =
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? String(value) : '';
  return {
    ...planned(action),
    target: { field: action.targetField, ...(shown.trim() === '' ? {} : { value: shown }) },
  };
}

/**
 * `archive`, `move "Bills"`, `script notify`, `service research.web.search`, and what it is done to where the action
 * names it: `unsubscribe → leave@lists.example`.
 */
export function describe(action: {
  kind: ResolvedAction['kind'];
  name: string;
  argument?: unknown;
  target?: PlannedAction['target'];
}): string {
  if (action.kind === 'script') return `script ${action.name}`;
  if (action.kind === 'service') return `service ${action.name}`;
  const named = action.argument === undefined ? action.name : `${action.name} ${JSON.stringify(action.argument)}`;
  if (!action.target) return named;
  return `${named} → ${action.target.value ?? `(the item has no ${action.target.field})`}`;
}

/** A stable id for "this rule on this item", so a request is made once however many cycles see the item. */
export function approvalId(parts: {
  instance: string;
  platform: string;
  notePath: string;
  /** Absent for a person's own request (`assistant act`), which is made unique by `nonce`. */
  ruleIndex?: number | undefined;
  keys: string[];
  nonce?: string;
}): string {
  const digest = createHash('sha256')
    .update(
      JSON.stringify([
        parts.instance,
        parts.platform,
        parts.notePath,
        parts.ruleIndex ?? null,
        parts.keys,
        ...(parts.nonce === undefined ? [] : [parts.nonce]),
      ]),
    )
    .digest('hex');
  return `ap-${digest.slice(0, 12)}`;
}

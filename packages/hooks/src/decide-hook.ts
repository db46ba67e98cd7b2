import { conditionGroups, conditionTruth, type Provenance } from '@assistant/automations';
import type { EventRecord } from '@assistant/events';
import { hookProvenance } from './compile-hook.ts';
import type { CompiledHook, HookAction, HookCheck, HookDecision } from './hook-types.ts';
import { renderHookAction, summarizeAction } from './render-hook-action.ts';

/** The slow path's answer about one event. */
export interface HookVerdict {
  fire: boolean;
  reason: string;
  /** The answer came from the cache (`data/hooks/ask-cache/`), not a model call. */
  cached: boolean;
}

/** Asks the hook's `ask:` question about an event: `askHook` bound to a model and a cache, or a test's stand-in. */
export type AskHook = (options: { hook: CompiledHook; event: EventRecord }) => Promise<HookVerdict>;

export interface DecideHookOptions {
  hook: CompiledHook;
  event: EventRecord;
  /** For `date` conditions (`< now() - 7d`). @default Date.now() */
  nowMs?: number;
  /**
   * The slow path. Called only when the hook has `ask:` and its fast path passed. Absent, a hook with `ask:` does not
   * fire and says so (a dry run without `--ask`).
   */
  ask?: AskHook;
}

/** The fast path alone: the event type, the event's `problem`, each condition with the value it saw. Pure. */
export function checkFastPath(options: { hook: CompiledHook; event: EventRecord; nowMs?: number }): {
  matched: boolean;
  passed: boolean;
  checks: HookCheck[];
} {
  const { hook, event } = options;
  const nowMs = options.nowMs ?? Date.now();
  const checks: HookCheck[] = [{ text: `event type is ${hook.on}`, value: event.type, passed: event.type === hook.on }];
  if (event.problem !== undefined) {
    // Stored and shown, never acted on: its data broke its schema, so no field of it means what the hook expects.
    checks.push({ text: 'the event has no problem', value: event.problem, passed: false });
  }
  const matched = checks.every((check) => check.passed);
  if (!matched) return { matched, passed: false, checks };
  const groups = groupsOf(hook);
  const outcomes = hook.conditions.map((condition, position) => {
    const name = condition.subject.name;
    const value = Object.hasOwn(event.data, name) ? event.data[name] : undefined;
    const holds = condition.test(value, nowMs);
    const group = groups.get(position);
    checks.push({ text: group ? `${condition.text} (${group})` : condition.text, value, passed: holds });
    return { holds };
  });
  const passed = conditionTruth(hook.when, (position) => outcomes[position]) === 'true';
  return { matched, passed, checks };
}

/** Where each test sits in `any:`/`not:`, computed once per compiled hook (the runner evaluates hooks per event). */
const groupsByHook = new WeakMap<CompiledHook, Map<number, string>>();
function groupsOf(hook: CompiledHook): Map<number, string> {
  let groups = groupsByHook.get(hook);
  if (!groups) {
    groups = conditionGroups(hook.when);
    groupsByHook.set(hook, groups);
  }
  return groups;
}

/**
 * Where a hook's decision comes from, checked again from its conditions and `ask:`: never less strict than the
 * provenance it was compiled with, so a hook built or edited by hand cannot claim `rule` for what is not.
 */
export function effectiveProvenance(hook: CompiledHook): Provenance {
  const trusted = new Set(hook.trustedFields ?? []);
  const untrusted = hook.conditions
    .filter((condition) => !trusted.has(condition.subject.name))
    .map((condition) => condition.subject.name);
  const derived = hookProvenance({
    ask: hook.ask !== undefined,
    conditions: hook.conditions.length,
    untrusted,
    irreversible: hook.actions.some((action) => action.tier === 'irreversible'),
  });
  return hook.provenance === 'rule' ? derived : hook.provenance;
}

/**
 * Whether an action waits for the owner's approval: always with `approval: required`, and for an irreversible
 * action unless the decision is the owner's deterministic rule or the action is tagged `!yolo`. The gate every layer
 * applies again (the loader refuses such a hook; this holds even for one that was not loaded).
 */
export function actionNeedsApproval(
  action: Pick<HookAction, 'tier' | 'yolo'>,
  provenance: Provenance,
  approval: boolean,
): boolean {
  if (approval) return true;
  return action.tier === 'irreversible' && provenance !== 'rule' && !action.yolo;
}

/**
 * Evaluates one hook against one event: the fast path (pure), then, when it passes and the hook has `ask:`, the slow
 * path through `ask`. An event of another type, or with `problem`, never fires. Returns every check and the actions
 * as they would run, each with whether it waits for approval. `once`, `count`, `debounce` and `for` are the runner's:
 * this says whether this event, alone, fires the hook.
 */
export async function decideHook(options: DecideHookOptions): Promise<HookDecision> {
  const { hook, event } = options;
  const fastPath = checkFastPath(options);
  const provenance = effectiveProvenance(hook);
  const base = { hook: hook.name, event: event.id, matched: fastPath.matched, provenance };
  // Templates are rendered only for an event that passes the fast path: most hooks see most events and do nothing,
  // and the runner evaluates every hook of the event's type per event.
  const unrendered = () =>
    hook.actions.map((action) => ({
      action,
      needsApproval: actionNeedsApproval(action, provenance, hook.approval),
      summary: summarizeAction(action),
    }));
  if (!fastPath.matched) {
    const failed = fastPath.checks.filter((check) => !check.passed).map((check) => check.text);
    return {
      ...base,
      fastPath: { passed: false, checks: fastPath.checks },
      fire: false,
      reason: event.problem !== undefined ? `the event has a problem: ${event.problem}` : `not ${failed.join(', ')}`,
      actions: unrendered(),
    };
  }
  if (!fastPath.passed) {
    const failed = fastPath.checks.filter((check) => !check.passed).map((check) => check.text);
    return {
      ...base,
      fastPath: { passed: false, checks: fastPath.checks },
      fire: false,
      reason: `the fast path failed at ${failed.join(', ') || 'its conditions'}`,
      actions: unrendered(),
    };
  }
  const planned = planActions(hook, event, provenance);
  let slowPath: HookDecision['slowPath'];
  if (hook.ask) {
    if (!options.ask) {
      return {
        ...base,
        fastPath: { passed: true, checks: fastPath.checks },
        fire: false,
        reason: 'the fast path passed; the slow path (`ask:`) was not asked',
        actions: planned.actions,
      };
    }
    const verdict = await options.ask({ hook, event });
    slowPath = { fire: verdict.fire, reason: verdict.reason, cached: verdict.cached };
  }
  const fires = slowPath === undefined || slowPath.fire;
  const reason = !fires
    ? `the model said no: ${slowPath?.reason ?? ''}`
    : planned.problem !== undefined
      ? planned.problem
      : !hook.enabled
        ? 'it would fire, but the hook is disabled'
        : slowPath
          ? `the fast path passed and the model said yes: ${slowPath.reason}`
          : 'the fast path passed';
  return {
    ...base,
    fastPath: { passed: true, checks: fastPath.checks },
    ...(slowPath ? { slowPath } : {}),
    fire: fires && hook.enabled && planned.problem === undefined,
    reason,
    actions: planned.actions,
  };
}

/** The actions rendered for the event; a template that does not render stops the firing and says why. */
function planActions(
  hook: CompiledHook,
  event: EventRecord,
  provenance: Provenance,
): { actions: HookDecision['actions']; problem?: string } {
  let problem: string | undefined;
  const actions = hook.actions.map((action) => {
    let rendered = action;
    let summary: string;
    try {
      rendered = renderHookAction({ hook, event, action });
      summary = summarizeAction(rendered);
    } catch (error) {
      const message = error instanceof Error ? error.message.split('\n')[0] : String(error);
      problem ??= `a template of ${action.kind} does not render: ${message}`;
      summary = `${summarizeAction(action)} (the template does not render: ${message})`;
    }
    return { action: rendered, needsApproval: actionNeedsApproval(action, provenance, hook.approval), summary };
  });
  return { actions, ...(problem === undefined ? {} : { problem }) };
}

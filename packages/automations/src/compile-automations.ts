import type { Action, Automation, Classification, JsonValue } from '@assistant/config';
import type { ReversibilityTier } from '@assistant/manifests';
import {
  type ConditionNode,
  compileConditionTree,
  conditionGroups,
  conditionTruth,
  describeConditionTree,
} from './condition-tree.ts';
import type { Condition, FieldType } from './conditions.ts';

export type { ConditionNode } from './condition-tree.ts';

/**
 * Where a rule's decision comes from: `rule` tests only fields (and, when it holds an irreversible action, only
 * fields the manifest marks `trusted`); `llm` only the model's classifications; `hybrid` both, or untrusted fields
 * (ones the item's sender sets) with an irreversible action. An irreversible action needs a person (or `!yolo`)
 * unless it is `rule`.
 */
export type Provenance = 'rule' | 'llm' | 'hybrid' | 'manual';

/**
 * Every provenance. `manual` is never a compiled rule's: it marks actions a person asked for by hand (`assistant
 * act`, `POST /api/actions`), which always go through an approval the person gave in the same step.
 */
export const provenances = ['rule', 'llm', 'hybrid', 'manual'] as const;

/** An action a rule takes, resolved against the platform's allowlist, the scripts and the services. */
export interface ResolvedAction {
  kind: 'platform' | 'script' | 'service';
  /** The platform action (`archive`), the script name, or the service call (`research.web.search`). */
  name: string;
  argument?: JsonValue;
  /** Script and service inputs, as written (templates are rendered when the action is enqueued). */
  inputs?: Record<string, string | number | boolean>;
  humanLog?: string;
  onResult?: Record<string, JsonValue>[];
  tier: ReversibilityTier;
  /** Tagged `!yolo` in config: the owner accepted that it runs without a person. */
  yolo: boolean;
  /** Stable within an item: the same key is never taken twice (`move:"Archive"`, `script:notify`). */
  key: string;
  /** For platform actions whose manifest names one: the item's field that says what it is done to. */
  targetField?: string;
  /**
   * The full text the action sends or posts (a reply, a comment), written by its integration before the owner is
   * asked (or before a `!yolo` action is enqueued); the act sends exactly this. Never set by a rule.
   */
  text?: string;
}

export interface CompiledRule {
  index: number;
  /** The rule's `name`, or `automation N` (1-based) for people. */
  name: string;
  /** Every test of `when:`, at any depth, in the order written: provenance and the trusted-field check read these. */
  conditions: Condition[];
  /** How the tests combine: a top-level `when:` without `any:`/`not:` is an `all` of tests. */
  when: ConditionNode;
  /** `stop: true`: when the conditions hold, later rules are not evaluated for the item. */
  stop: boolean;
  provenance: Provenance;
  actions: ResolvedAction[];
  approval: boolean;
  approvalExpiresMs?: number;
}

/** What a rule may name in `then:`. */
export interface ActionCatalog {
  /** The platform's actions from its manifest: the allowlist. */
  platformActions: Record<
    string,
    {
      tier: ReversibilityTier;
      argument?: 'string' | 'number' | 'boolean' | undefined;
      /** The argument may be left out. @default false */
      argumentOptional?: boolean | undefined;
      target?: string | undefined;
    }
  >;
  /** `scripts:` from config: each is irreversible unless `reversible: true`. */
  scripts: Record<string, { reversible: boolean }>;
  /**
   * Resolves `domain.instance.service`, or `domain.service` for the domain's default instance: its reversibility and
   * the call in full (`domain.instance.service`), or why the call names nothing.
   */
  service(call: string): { reversible: boolean; call: string } | { problem: string };
}

/** A problem in one automation, at a key path relative to it (`['when', 'humn']`, `['then', 1]`). */
export interface RuleProblem {
  index: number;
  path: (string | number)[];
  message: string;
  hint?: string;
  /** The problem is the key's name, not its value. */
  at?: 'key';
  /** Set for a script that `scripts:` does not define, which config loading reports on its own. */
  unknownScript?: true;
}

export interface CompileAutomationsOptions {
  automations: readonly Automation[];
  classifications: Record<string, Classification>;
  fields: Record<string, FieldType>;
  /**
   * Fields computed from our own state or a configured authentication server, which the item's sender cannot set.
   * A rule over any other field counts as `hybrid` when it holds an irreversible action. @default none
   */
  trustedFields?: readonly string[];
  catalog: ActionCatalog;
}

/**
 * Checks and compiles a platform's automations. Every `when:` key must name a classification or a field and its
 * value must suit it; every action must be on the platform's allowlist, a defined script or a known service; and an
 * irreversible action of an `llm` or `hybrid` rule needs `!yolo` or `approval: required`. Rules with problems are
 * left out of `rules`, so even a config loaded without this check can never run them.
 */
export function compileAutomations(options: CompileAutomationsOptions): {
  rules: CompiledRule[];
  problems: RuleProblem[];
} {
  const rules: CompiledRule[] = [];
  const problems: RuleProblem[] = [];
  const trusted = new Set(options.trustedFields ?? []);
  options.automations.forEach((automation, index) => {
    const found: RuleProblem[] = [];
    const conditions: Condition[] = [];
    const compiled = compileConditionTree({
      when: automation.when,
      path: ['when'],
      classifications: options.classifications,
      fields: options.fields,
      conditions,
    });
    const when = compiled.when;
    for (const problem of compiled.problems) found.push({ index, ...problem });
    if (Object.keys(automation.when).length === 0) {
      found.push({ index, path: ['when'], message: 'a rule needs at least one condition' });
    }
    const usesClassifications = conditions.some((condition) => condition.subject.kind === 'classification');
    const usesFields = conditions.some((condition) => condition.subject.kind === 'field');
    // Fields the sender wrote (a List-Unsubscribe header, a From domain) are facts an attacker chooses: a rule over
    // them is no more the owner's decision than the LLM's, for what cannot be undone.
    const untrusted = conditions
      .filter((condition) => condition.subject.kind === 'field' && !trusted.has(condition.subject.name))
      .map((condition) => condition.subject.name);
    const resolvedActions = automation.actions.map((action) => ({
      action,
      resolved: resolveAction(action, options.catalog),
    }));
    const irreversible = resolvedActions.some(({ resolved }) => 'tier' in resolved && resolved.tier === 'irreversible');
    const provenance: Provenance = usesClassifications
      ? usesFields
        ? 'hybrid'
        : 'llm'
      : untrusted.length > 0 && irreversible
        ? 'hybrid'
        : 'rule';
    const actions: ResolvedAction[] = [];
    resolvedActions.forEach(({ action, resolved }, actionIndex) => {
      const path = automation.actions.length === 1 ? ['then'] : ['then', actionIndex];
      if ('problem' in resolved) {
        found.push({
          index,
          path,
          message: resolved.problem,
          ...(resolved.hint ? { hint: resolved.hint } : {}),
          ...(action.kind === 'script' && !(action.script in options.catalog.scripts)
            ? { unknownScript: true as const }
            : {}),
        });
        return;
      }
      if (resolved.tier === 'irreversible' && provenance !== 'rule' && !resolved.yolo && !automation.approval) {
        found.push({
          index,
          path,
          message: usesClassifications
            ? `\`${resolved.name}\` cannot be undone, and this rule decides from the LLM's classifications (${provenance})`
            : `\`${resolved.name}\` cannot be undone, and this rule tests facts the sender controls (${untrusted.map((name) => `\`${name}\``).join(', ')}), so it is not deterministic (${provenance})`,
          hint: 'add `approval: required` to the rule so a person approves each time, or tag the action `!yolo` to accept the risk',
        });
        return;
      }
      // `then: [unsubscribe, unsubscribe]` is one unsubscribe: an action is taken once per item, so once per rule.
      if (!actions.some((earlier) => earlier.key === resolved.key)) actions.push(resolved);
    });
    problems.push(...found);
    if (found.length === 0) {
      rules.push({
        index,
        name: automation.name ?? `automation ${index + 1}`,
        conditions,
        when,
        stop: automation.stop === true,
        provenance,
        actions,
        approval: automation.approval,
        ...(automation.approvalExpiresMs === undefined ? {} : { approvalExpiresMs: automation.approvalExpiresMs }),
      });
    }
  });
  return { rules, problems };
}

function resolveAction(action: Action, catalog: ActionCatalog): ResolvedAction | { problem: string; hint?: string } {
  if (action.kind === 'script') {
    const script = Object.hasOwn(catalog.scripts, action.script) ? catalog.scripts[action.script] : undefined;
    if (!script) return { problem: `script \`${action.script}\` is not defined under \`scripts:\`` };
    return {
      kind: 'script',
      name: action.script,
      inputs: action.inputs,
      tier: script.reversible ? 'soft' : 'irreversible',
      yolo: action.yolo,
      key: `script:${action.script}`,
    };
  }
  if (action.kind === 'service') {
    const service = catalog.service(action.call);
    if ('problem' in service) return { problem: service.problem };
    return {
      kind: 'service',
      name: service.call,
      inputs: action.inputs,
      ...(action.humanLog === undefined ? {} : { humanLog: action.humanLog }),
      ...(action.onResult === undefined ? {} : { onResult: action.onResult }),
      tier: service.reversible ? 'soft' : 'irreversible',
      yolo: action.yolo,
      key: `service:${service.call}`,
    };
  }
  // Own keys only: `then: toString` names no action, whatever Object.prototype holds.
  const spec = Object.hasOwn(catalog.platformActions, action.action)
    ? catalog.platformActions[action.action]
    : undefined;
  if (!spec) {
    const known = Object.keys(catalog.platformActions);
    return {
      problem: `\`${action.action}\` is not an action of this platform`,
      hint: known.length > 0 ? `its actions: ${known.join(', ')}` : 'this platform declares no actions',
    };
  }
  const hasArgument = action.argument !== undefined && action.argument !== null;
  if (spec.argument !== undefined && !hasArgument && spec.argumentOptional !== true) {
    return { problem: `\`${action.action}\` takes a ${spec.argument}: write \`{${action.action}: …}\`` };
  }
  if (spec.argument === undefined && hasArgument) return { problem: `\`${action.action}\` takes no argument` };
  if (spec.argument !== undefined && hasArgument && typeof action.argument !== spec.argument) {
    return { problem: `\`${action.action}\` takes a ${spec.argument}, not ${JSON.stringify(action.argument)}` };
  }
  return {
    kind: 'platform',
    name: action.action,
    ...(hasArgument ? { argument: action.argument as JsonValue } : {}),
    tier: spec.tier,
    yolo: action.yolo,
    key: actionKey(action.action, hasArgument ? action.argument : undefined),
    ...(spec.target === undefined ? {} : { targetField: spec.target }),
  };
}

/**
 * The key a platform action is recorded under on its item: its name, with its argument when it takes one
 * (`archive`, `move:"Bills"`). The same action with another argument is another action.
 */
export function actionKey(name: string, argument: unknown): string {
  return argument === undefined || argument === null ? name : `${name}:${JSON.stringify(argument)}`;
}

/** The facts about one item that rules test. */
export interface ItemFacts {
  /** The LLM's answers; a classification that is missing never matches. */
  classifications: Record<string, unknown>;
  /** Deterministic fields, computed without an LLM. */
  fields: Record<string, unknown>;
}

/** A rule that matched an item, with the actions it takes. */
export interface AutomationMatch {
  rule: string;
  /** The rule's index in its platform's `automations:`; absent for a person's own request. */
  ruleIndex?: number;
  provenance: Provenance;
  actions: ResolvedAction[];
  approval: boolean;
  approvalExpiresMs?: number;
  /** Why it matched, for the human log: `human < 0.2, is_noreply = true`. */
  reason: string;
}

/** What evaluation needs beyond the rules and the item. */
export interface EvaluateRulesOptions {
  /**
   * Why a rule is paused (`paused by owner at …: reason`), or undefined when it runs. A paused rule is explained but
   * never matches, and its `stop:` does not apply. @default nothing is paused
   */
  paused?: (rule: Pick<CompiledRule, 'index' | 'name'>) => string | undefined;
}

/**
 * The pure half of automations: which rules match an item, in rule order. A rule matches when its `when:` holds; a
 * condition on a classification the item lacks is unknown, never true, and so is `not:` of it; a rule with
 * `stop: true` whose conditions hold ends the evaluation for that item. Defence in depth: an action that is
 * irreversible and not authorised (rule provenance, `!yolo` or approval) is never returned, even if a rule somehow
 * holds one. Built on `explainRules`, so the explanation people read (`assistant automations explain`) is this very
 * evaluation.
 */
export function evaluateRules(
  rules: readonly CompiledRule[],
  facts: ItemFacts,
  nowMs: number = Date.now(),
  options: EvaluateRulesOptions = {},
): AutomationMatch[] {
  return explainRules(rules, facts, nowMs, options).flatMap((explained) => (explained.match ? [explained.match] : []));
}

/** One test of `when:` as it was tested against one item. */
export interface ConditionExplanation {
  key: string;
  /** `human < 0.2`, `is_noreply = true`. */
  text: string;
  subject: 'classification' | 'field';
  /** The classification or field the condition reads. */
  name: string;
  /** The value it saw; undefined when the item has none. */
  value: unknown;
  holds: boolean;
  /** Set when the item has no such classification: the condition is unknown, which never makes a rule match. */
  missing?: true;
  /** Where the test sits when it is inside `any:` or `not:`: `any 2 of 3`, `not`, `any 1 of 2 › not`. */
  group?: string;
}

/** One action of a rule, with the gate's answer. */
export interface ActionExplanation {
  action: ResolvedAction;
  /** Whether the gate lets the rule take it (it may still wait for a person when the rule needs approval). */
  allowed: boolean;
  /** Why the gate answers so: `can be undone`, `rule provenance`, `!yolo`, `approval required`, or why not. */
  gate: string;
}

/** One compiled rule against one item: each condition, each action, and the match it yields (if any). */
export interface RuleExplanation {
  index: number;
  name: string;
  provenance: Provenance;
  approval: boolean;
  /** The rule has `stop: true`. */
  stop: boolean;
  conditions: ConditionExplanation[];
  /** `when:` holds: every entry, one of each `any:`, none of each `not:`; unknown (a missing classification) is not. */
  conditionsHold: boolean;
  actions: ActionExplanation[];
  /** Set when an earlier rule with `stop: true` held: this rule was not evaluated for the item. Its name. */
  stoppedBy?: string;
  /** Set when the rule is paused: why, and since when. It does not match. */
  paused?: string;
  /** What `evaluateRules` returns for this rule: set when it runs, its conditions hold and some action is allowed. */
  match?: AutomationMatch;
}

/**
 * Every rule against one item, in rule order, with each condition's value and outcome and each action's gate. A
 * condition on a classification the item lacks (or holds as null) fails and is unknown; every condition is tested,
 * so a rule that fails shows all the reasons, not just the first. Rules after one with `stop: true` that held, and
 * paused rules, are still explained (with `stoppedBy` or `paused`) but never match.
 */
export function explainRules(
  rules: readonly CompiledRule[],
  facts: ItemFacts,
  nowMs: number = Date.now(),
  options: EvaluateRulesOptions = {},
): RuleExplanation[] {
  let stoppedBy: string | undefined;
  return rules.map((rule) => {
    const conditions = rule.conditions.map((condition): ConditionExplanation => {
      const isClassification = condition.subject.kind === 'classification';
      const source = isClassification ? facts.classifications : facts.fields;
      const value = Object.hasOwn(source, condition.subject.name) ? source[condition.subject.name] : undefined;
      const missing = isClassification && (value === undefined || value === null);
      return {
        key: condition.key,
        text: condition.text,
        subject: condition.subject.kind,
        name: condition.subject.name,
        value,
        holds: missing ? false : condition.test(value, nowMs),
        ...(missing ? { missing: true as const } : {}),
      };
    });
    for (const [position, group] of conditionGroups(rule.when)) {
      const condition = conditions[position];
      if (condition) condition.group = group;
    }
    const conditionsHold = conditionTruth(rule.when, (position) => conditions[position]) === 'true';
    const actions = rule.actions.map(
      (action): ActionExplanation => ({
        action,
        allowed: actionAllowed(action, rule.provenance, rule.approval),
        gate: gateReason(action, rule.provenance, rule.approval),
      }),
    );
    const paused = options.paused?.(rule);
    const skippedBy = stoppedBy;
    const runs = paused === undefined && skippedBy === undefined;
    if (runs && rule.stop && conditionsHold) stoppedBy = rule.name;
    const allowed = actions.filter((explained) => explained.allowed).map((explained) => explained.action);
    const match: AutomationMatch | undefined =
      runs && conditionsHold && allowed.length > 0
        ? {
            rule: rule.name,
            ruleIndex: rule.index,
            provenance: rule.provenance,
            actions: allowed,
            approval: rule.approval,
            ...(rule.approvalExpiresMs === undefined ? {} : { approvalExpiresMs: rule.approvalExpiresMs }),
            reason: describeConditionTree(rule.when, rule.conditions),
          }
        : undefined;
    return {
      index: rule.index,
      name: rule.name,
      provenance: rule.provenance,
      approval: rule.approval,
      stop: rule.stop,
      conditions,
      conditionsHold,
      actions,
      ...(skippedBy === undefined ? {} : { stoppedBy: skippedBy }),
      ...(paused === undefined ? {} : { paused }),
      ...(match ? { match } : {}),
    };
  });
}

/** Why `actionAllowed` answers as it does, in words. */
function gateReason(action: Pick<ResolvedAction, 'tier' | 'yolo'>, provenance: Provenance, approval: boolean): string {
  const asks = approval ? "; waits for a person's approval" : '';
  if (action.tier !== 'irreversible') return `can be undone (${action.tier.replace('_', ' ')})${asks}`;
  if (provenance === 'rule') return `cannot be undone; allowed: the rule is deterministic (rule provenance)${asks}`;
  if (action.yolo) return `cannot be undone; allowed: tagged !yolo in config${asks}`;
  if (approval) return "cannot be undone; allowed only with a person's approval (approval: required)";
  return `cannot be undone, and the rule is ${provenance} without !yolo or approval: never taken`;
}

/** Whether an action may run for a rule of this provenance: the gate every layer applies again. */
export function actionAllowed(
  action: Pick<ResolvedAction, 'tier' | 'yolo'>,
  provenance: Provenance,
  approved: boolean,
): boolean {
  return action.tier !== 'irreversible' || provenance === 'rule' || action.yolo || approved;
}

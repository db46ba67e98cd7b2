import type { ConditionExplanation } from '@assistant/automations';
import {
  type ActionExplanation,
  type CompiledRule,
  compilePlatformAutomations,
  explainRules,
  type ItemFacts,
  itemFacts,
  type RuleExplanation,
  type RuleProblem,
} from '@assistant/automations';
import type { Automation, Config } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { NotePathError, type NoteStore, PauseStore, pausedRules } from '@assistant/notes';
import type { ActionRegistry } from './action-registry.ts';
import { type ApprovalRequest, readApproval } from './approvals.ts';
import { approvalId } from './planned-action.ts';

/** The item a note is: its instance (and the instance's integration domain) and the platform whose rules apply. */
export interface ItemRef {
  domain: string;
  instance: string;
  platform: string;
  /** The note, relative to the notes root. */
  item: string;
}

/** What happened, or would happen, to one action of a rule for this item. */
export type ActionState =
  | { state: 'taken'; at?: string; task?: string; approval?: string; rule?: string }
  | { state: 'started'; at?: string }
  | { state: 'waiting'; approval: string; expiresAt: string }
  | { state: 'refused'; approval: string; status: 'rejected' | 'expired' }
  | { state: 'approved'; approval: string }
  /** The rule matches and the action is allowed, but it is not recorded on the item (the next evaluate takes it). */
  /** `disabled`: why no evaluation comes (the instance or the platform has `enabled: false`). */
  | { state: 'due'; disabled?: string }
  /** The rule matches, needs approval, and no request exists yet (the next evaluate asks). */
  | { state: 'will-ask'; approval: string; disabled?: string }
  /** A dry run's rule matches: the action would be taken (or, with `approval: required`, asked for). */
  | { state: 'would'; asks: boolean }
  | { state: 'none' };

export interface ExplainedAction extends ActionExplanation {
  outcome: ActionState;
}

export interface ExplainedRule extends Omit<RuleExplanation, 'actions'> {
  actions: ExplainedAction[];
}

/** One entry of the item's `actions_taken` or `actions_started`, as the note records it. */
export interface RecordedAction {
  action: string;
  at?: string;
  rule?: string;
  provenance?: string;
  task?: string;
  approval?: string;
}

export interface ItemExplanation extends ItemRef {
  /** How people recognise the item: its subject, title or name, else the note path. */
  title: string;
  /** `config` for the rules config.yaml holds (as the worker compiled them), or the dry-run file. */
  rulesFrom: 'config' | { file: string };
  /** The time the rules were evaluated at (now). */
  evaluatedAt: string;
  facts: ItemFacts;
  rules: ExplainedRule[];
  /** The item note's `actions_taken`: what was decided and enqueued, once each. */
  taken: RecordedAction[];
  /** The item note's `actions_started`: irreversible actions that began. */
  started: RecordedAction[];
  /** The approval requests for this item that the rules (or its recorded actions) name, with their state. */
  approvals: Pick<ApprovalRequest, 'id' | 'status' | 'rule' | 'created_at' | 'expires_at' | 'decided_by'>[];
  /** Dry-run rules that do not compile: nothing of theirs is evaluated. */
  problems: RuleProblem[];
}

export interface ExplainItemOptions {
  registry: ActionRegistry;
  /** `integrations:` (which platforms have rules) and `scripts:` (which a dry run's rules may name) of config.yaml. */
  config: Pick<Config, 'scripts' | 'integrations'>;
  notes: NoteStore;
  /** The note, relative to the notes root. */
  notePath: string;
  /** The platform, when the instance configures several and the note does not say (`platform:` frontmatter). */
  platform?: string | undefined;
  /**
   * A dry run: these rules (from a file being written) are explained instead of the configured ones, compiled against
   * the same platform exactly as config.yaml's would be.
   */
  dryRun?: { automations: readonly Automation[]; file: string };
  nowMs?: number;
}

/**
 * Which item of which platform a note is. Items live under `{domain}/{instance}/`, the layout every integration
 * keeps (the act gate requires it too). The platform is the one asked for, else the one the note names in
 * `platform:`, else the only one of the instance's platforms that config.yaml gives automations (or configures at all,
 * or the manifest declares). Returns why not otherwise.
 */
export function itemOf(
  options: { registry: ActionRegistry; config: Pick<Config, 'integrations'> },
  notePath: string,
  data: Record<string, unknown>,
  platform?: string,
): ItemRef | { notItem: string } {
  const { registry } = options;
  const [domain = '', instanceName = ''] = notePath.split('/');
  const instance = registry.instance(instanceName);
  if (!instance || instance.domain !== domain || notePath.split('/').length < 3) {
    const prefixes = options.config.integrations.map((candidate) => `${candidate.type}/${candidate.name}/`);
    return {
      notItem: `${notePath} is not an item of any platform: items live under ${prefixes.length > 0 ? prefixes.join(', ') : '{domain}/{instance}/ of an instance in config.yaml (there is none)'}`,
    };
  }
  const declared = Object.keys(instance.platforms).filter(
    (name) => registry.manifestPlatform(domain, name) !== undefined,
  );
  const named = platform ?? (typeof data.platform === 'string' ? data.platform : undefined);
  if (named !== undefined) {
    if (declared.includes(named)) return { domain, instance: instance.name, platform: named, item: notePath };
    return {
      notItem: `${instance.name} has no platform \`${named}\`${declared.length > 0 ? ` (it has: ${declared.join(', ')})` : ''}`,
    };
  }
  const configured = options.config.integrations.find((candidate) => candidate.name === instance.name)?.platforms ?? {};
  const withRules = declared.filter((name) => (configured[name]?.automations.length ?? 0) > 0);
  const inConfig = declared.filter((name) => configured[name] !== undefined);
  for (const candidates of [withRules, inConfig, declared]) {
    if (candidates.length === 1 && candidates[0] !== undefined) {
      return { domain, instance: instance.name, platform: candidates[0], item: notePath };
    }
    if (candidates.length > 1) {
      return {
        notItem: `${notePath} may be an item of any of ${instance.name}'s platforms ${candidates.join(', ')}: say which (--platform)`,
      };
    }
  }
  return { notItem: `${notePath} is under ${instance.name}, whose integration declares no platform` };
}

/**
 * Why the rules of the item's platform did what they did to it: each rule in order with each condition, the value
 * it saw and whether it held, each action with its tier, provenance and the gate's answer, and what became of it
 * (taken, waiting for approval, due). The evaluation is the worker's own: the rules the registry compiled for the
 * evaluate stage (or, for a dry run, the given ones compiled the same way), the facts read from the note as the act
 * gate reads them, and `explainRules`, on which `evaluateRules` is built.
 */
export async function explainItem(options: ExplainItemOptions): Promise<ItemExplanation> {
  const nowMs = options.nowMs ?? Date.now();
  let note: Awaited<ReturnType<NoteStore['read']>>;
  try {
    note = await options.notes.read(options.notePath);
  } catch (error) {
    if (error instanceof NotePathError) throw new AssistantError('BAD_REQUEST', error.message);
    throw error;
  }
  if (!note) throw new AssistantError('NOT_FOUND', `there is no note ${options.notePath}`);
  const data = note.data as Record<string, unknown>;
  const ref = itemOf(options, options.notePath, data, options.platform);
  if ('notItem' in ref) throw new AssistantError('BAD_REQUEST', ref.notItem);
  const manifestPlatform = options.registry.manifestPlatform(ref.domain, ref.platform);
  if (!manifestPlatform) throw new AssistantError('BAD_REQUEST', `${ref.domain} has no platform ${ref.platform}`);

  let rules: CompiledRule[];
  let problems: RuleProblem[] = [];
  if (options.dryRun) {
    const instance = options.config.integrations.find((candidate) => candidate.name === ref.instance);
    const configured = instance?.platforms[ref.platform];
    const compiled = compilePlatformAutomations({
      config: options.config,
      integrations: options.registry.integrations,
      platform: manifestPlatform,
      platformConfig: {
        classifications: { ...manifestPlatform.classifications, ...configured?.classifications },
        automations: [...options.dryRun.automations],
      },
    });
    rules = compiled.rules;
    problems = compiled.problems;
  } else {
    rules = options.registry.automations(ref.instance, ref.platform);
  }

  // A disabled instance or platform is never checked or evaluated: an action it would take is not merely "due".
  const instanceConfig = options.config.integrations.find((candidate) => candidate.name === ref.instance);
  const disabled =
    instanceConfig?.enabled === false
      ? `instance ${ref.instance} is disabled (enabled: false)`
      : instanceConfig?.platforms[ref.platform]?.enabled === false
        ? `platform ${ref.instance}/${ref.platform} is disabled (enabled: false)`
        : undefined;
  const facts = itemFacts(manifestPlatform, data);
  // The rules the owner paused are shown as paused, as the worker's evaluate stage skips them; a pause note that
  // cannot be read pauses nothing there either.
  const pauses = await new PauseStore({ notes: options.notes }).read().catch(() => ({ entries: [], problems: [] }));
  const explained = explainRules(rules, facts, nowMs, {
    paused: pausedRules(pauses, { instance: ref.instance, platform: ref.platform }),
  });
  const taken = recorded(data.actions_taken);
  const started = recorded(data.actions_started);

  // The requests the rules would make (their id is derived from the rule and the item) and the ones the recorded
  // actions cite: read one by one, never the whole approvals folder.
  const approvalIds = new Set<string>(taken.flatMap((entry) => (entry.approval ? [entry.approval] : [])));
  const requestIdOf = (rule: RuleExplanation): string | undefined =>
    rule.match?.approval && !options.dryRun
      ? approvalId({
          instance: ref.instance,
          platform: ref.platform,
          notePath: ref.item,
          ruleIndex: rule.index,
          keys: rule.match.actions.map((action) => action.key),
        })
      : undefined;
  for (const rule of explained) {
    const id = requestIdOf(rule);
    if (id) approvalIds.add(id);
  }
  const approvals = new Map<string, ApprovalRequest>();
  for (const id of approvalIds) {
    const request = await readApproval(options.notes, id).catch(() => undefined);
    if (request && request.item === ref.item) approvals.set(id, request);
  }

  const outcomeOf = (rule: RuleExplanation, action: ActionExplanation): ActionState => {
    const key = action.action.key;
    const record = taken.find((entry) => entry.action === key);
    if (record) {
      return {
        state: 'taken',
        ...(record.at ? { at: record.at } : {}),
        ...(record.task ? { task: record.task } : {}),
        ...(record.approval ? { approval: record.approval } : {}),
        ...(record.rule ? { rule: record.rule } : {}),
      };
    }
    const begun = started.find((entry) => entry.action === key);
    if (begun) return { state: 'started', ...(begun.at ? { at: begun.at } : {}) };
    if (!rule.match?.actions.some((candidate) => candidate.key === key)) return { state: 'none' };
    if (options.dryRun) return { state: 'would', asks: rule.approval };
    const id = requestIdOf(rule);
    if (id === undefined) return disabled ? { state: 'due', disabled } : { state: 'due' };
    const request = approvals.get(id);
    if (!request) return disabled ? { state: 'will-ask', approval: id, disabled } : { state: 'will-ask', approval: id };
    if (request.status === 'pending') return { state: 'waiting', approval: id, expiresAt: request.expires_at };
    if (request.status === 'approved') return { state: 'approved', approval: id };
    return { state: 'refused', approval: id, status: request.status };
  };

  return {
    ...ref,
    title: titleOf(data, ref.item),
    rulesFrom: options.dryRun ? { file: options.dryRun.file } : 'config',
    evaluatedAt: new Date(nowMs).toISOString(),
    facts,
    rules: explained.map((rule) => ({
      ...rule,
      actions: rule.actions.map((action) => ({ ...action, outcome: outcomeOf(rule, action) })),
    })),
    taken,
    started,
    approvals: [...approvals.values()].map((request) => ({
      id: request.id,
      status: request.status,
      rule: request.rule,
      created_at: request.created_at,
      expires_at: request.expires_at,
      ...(request.decided_by === undefined ? {} : { decided_by: request.decided_by }),
    })),
    problems,
  };
}

function titleOf(data: Record<string, unknown>, notePath: string): string {
  for (const key of ['subject', 'title', 'name']) {
    const value = data[key];
    if (typeof value === 'string' && value.trim() !== '') return value;
  }
  return notePath;
}

function recorded(value: unknown): RecordedAction[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry: unknown) => {
    if (entry === null || typeof entry !== 'object') return [];
    const record = entry as Record<string, unknown>;
    if (typeof record.action !== 'string') return [];
    const text = (key: string) => (typeof record[key] === 'string' ? { [key]: record[key] as string } : {});
    return [
      {
        action: record.action,
        ...text('at'),
        ...text('rule'),
        ...text('provenance'),
        ...text('task'),
        ...text('approval'),
      },
    ];
  });
}

/** A value as explanations show it: JSON for text, numbers and lists (cut at 120 characters), `nothing` for none. */
export function shownValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** What a condition saw, in words: `saw 0.9`, or why a missing classification fails it. */
export function describeSeen(condition: ConditionExplanation): string {
  return condition.missing
    ? `the item has no classification \`${condition.name}\`, so it fails`
    : `saw ${shownValue(condition.value)}`;
}

/** What became of an action, in words: `taken at … (task …)`, `waiting for approval ap-… (expires …)`. */
export function describeOutcome(outcome: ActionState, ruleName: string): string {
  switch (outcome.state) {
    case 'taken':
      return `taken${outcome.at ? ` at ${outcome.at}` : ''}${outcome.task ? ` (task ${outcome.task})` : ''}${outcome.rule && outcome.rule !== ruleName ? ` by rule "${outcome.rule}"` : ''}${outcome.approval ? `, approved in ${outcome.approval}` : ''}`;
    case 'started':
      return `started${outcome.at ? ` at ${outcome.at}` : ''}`;
    case 'waiting':
      return `waiting for approval ${outcome.approval} (expires ${outcome.expiresAt})`;
    case 'approved':
      return `approved in ${outcome.approval}`;
    case 'refused':
      return `${outcome.status} (${outcome.approval}): not taken`;
    case 'due':
      return outcome.disabled
        ? `not taken: ${outcome.disabled}, so nothing is evaluated until it is enabled`
        : 'not taken yet: the next evaluation takes it';
    case 'will-ask':
      return outcome.disabled
        ? `not asked: ${outcome.disabled}, so nothing is evaluated until it is enabled`
        : 'not asked yet: the next evaluation asks for approval';
    case 'would':
      return outcome.asks ? 'would ask for approval' : 'would be taken';
    default:
      return 'not taken';
  }
}

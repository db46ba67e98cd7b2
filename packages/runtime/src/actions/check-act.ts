import { isDeepStrictEqual } from 'node:util';
import type { NoteStore } from '@assistant/notes';
import type { Task } from '@assistant/queue';
import * as z from 'zod';
import { actionKey, type CompiledRule, evaluateRules } from '../automations/compile-automations.ts';
import type { IntegrationRegistry, TaskTypeInfo } from '../integration-registry.ts';
import { type ApprovalRequest, readApproval } from './approvals.ts';
import { actPayloadSchema } from './enqueue-actions.ts';
import { renderInputs } from './render-template.ts';

/**
 * The worker's gate, run before every task that could do something that cannot be undone: a platform's `act` task,
 * `script.run` and `service.*`. Each irreversible action is checked again, not against what the task file says
 * about itself (anyone who can write to the queue can write a task file, and `source:` is just a line in it) but
 * against the manifest's tiers, `scripts:` in config.yaml, the rule in config.yaml the task names by index, and the
 * approval note it cites. An irreversible action runs only when that rule is `rule` provenance and holds the action,
 * the rule's action is tagged `!yolo`, or a person approved exactly this action for exactly this item. A person
 * acting by hand goes through an approval too (`assistant act`, `POST /api/actions` create it approved).
 *
 * A rule authorises an action only for the items it matches, so its `when:` is evaluated again over the item's note
 * as it is now (which must exist, under `{domain}/{instance}/`), and the action must be the rule's in every part: its
 * name, argument and, for scripts and services, its inputs as the rule renders them from the note. An approval binds
 * the item itself; the action must still be the approved one, with the approved inputs.
 * Returns why the task must not run, or undefined.
 */
export async function checkActTask(options: {
  registry: IntegrationRegistry;
  notes: NoteStore;
  task: Task;
  /** `scripts:` from config.yaml, for `script.run` tasks. Scripts it does not list count as irreversible. */
  scripts?: Record<string, { reversible: boolean }>;
}): Promise<string | undefined> {
  const { registry, task } = options;
  if (task.type === 'script.run') return checkScriptTask(options);
  const info = registry.taskType(task.type);
  if (info?.kind === 'service') return checkServiceTask(options, info);
  if (info?.kind !== 'stage' || info.platform === undefined || info.stage !== 'act') return undefined;
  const parsed = actPayloadSchema.safeParse(task.payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `not an act payload: ${issue?.path.join('.') || 'payload'}: ${issue?.message}`;
  }
  const payload = parsed.data;
  const instance = task.integration ?? '';
  const platform = registry.manifestPlatform(info.domain, info.platform);
  const rule = ruleAt(registry, instance, info.platform, payload.rule_index, payload.rule);
  const item = { domain: info.domain, instance, platform: info.platform, item: payload.item };
  for (const action of payload.actions) {
    if (action.kind !== 'platform')
      return `an act task carries only platform actions, not ${action.kind} \`${action.name}\``;
    const declared = platform?.actions[action.name];
    if (!declared) return `\`${action.name}\` is not an action of ${info.domain}.${info.platform}`;
    // The act handler does what `name` and `argument` say and records it under `key`: they must agree, or an action
    // could borrow another's authority (and its once-per-item record).
    if (action.key !== actionKey(action.name, action.argument)) {
      return `\`${action.name}\`: its key \`${action.key}\` is not its name and argument (${action.argument === undefined ? 'none' : JSON.stringify(action.argument)})`;
    }
    if (declared.tier !== 'irreversible') continue;
    const same = (authorised: { kind: string; name: string; argument?: unknown }) =>
      authorised.kind === action.kind &&
      authorised.name === action.name &&
      isDeepStrictEqual(authorised.argument, action.argument);
    let refused: string | undefined;
    if (rule && ruleAuthorises(rule, action.key)) {
      const ruleAction = rule.actions.find((candidate) => candidate.key === action.key);
      refused =
        ruleAction && same(ruleAction)
          ? await ruleMatchProblem(options, rule, item, action.key)
          : `rule ${rule.index} ("${rule.name}") holds another \`${action.key}\``;
      if (refused === undefined) continue;
    }
    if (payload.approval !== undefined) {
      const approved = await approvedAction(options.notes, payload.approval, { ...item, key: action.key });
      if (approved && same(approved.action)) {
        const moved = await targetMoved(options.notes, payload.item, approved.action.target);
        if (moved === undefined) continue;
        return `\`${action.name}\` cannot be undone, and approval ${payload.approval} ${moved}`;
      }
      return `\`${action.name}\` cannot be undone and approval ${payload.approval} does not approve it for ${payload.item}`;
    }
    if (refused !== undefined) return `\`${action.name}\` cannot be undone, and ${refused}`;
    return `\`${action.name}\` cannot be undone, and nothing authorises it: ${describeRule(payload.rule_index, payload.rule, rule)}, the action is not !yolo, and no approval is cited`;
  }
  return undefined;
}

/** Who asked for a script or a service: the item, and the rule by its index (names need not be unique). */
const requestedBySchema = z.looseObject({
  instance: z.string(),
  platform: z.string(),
  item: z.string(),
  rule: z.string(),
  rule_index: z.int().min(0).optional(),
  /** For services: the approval a person gave (scripts carry it in their payload). */
  approval: z.string().optional(),
});
type RequestedBy = z.infer<typeof requestedBySchema>;

const scriptPayloadSchema = z.looseObject({
  script: z.string(),
  inputs: z.unknown().optional(),
  approval: z.string().optional(),
  requested_by: requestedBySchema.optional(),
});

/** The same gate for `script.run`: an irreversible script needs its rule's say-so or a person's approval. */
async function checkScriptTask(options: {
  registry: IntegrationRegistry;
  notes: NoteStore;
  task: Task;
  scripts?: Record<string, { reversible: boolean }>;
}): Promise<string | undefined> {
  const parsed = scriptPayloadSchema.safeParse(options.task.payload);
  if (!parsed.success) {
    // A payload without a script name is the handler's to report; one with a bad `requested_by` is refused here.
    const named = z.looseObject({ script: z.string() }).safeParse(options.task.payload);
    if (!named.success || options.scripts?.[named.data.script]?.reversible) return undefined;
    const issue = parsed.error.issues[0];
    return `script \`${named.data.script}\` cannot be undone, and its payload does not say who asked: ${issue?.path.join('.')}: ${issue?.message}`;
  }
  const payload = parsed.data;
  if (options.scripts?.[payload.script]?.reversible) return undefined;
  const problem = await checkRequested(options, {
    what: `script \`${payload.script}\``,
    key: `script:${payload.script}`,
    requested: payload.requested_by,
    approval: payload.approval,
    task: { inputs: payload.inputs ?? {} },
  });
  return problem;
}

/**
 * The gate for `service.{domain}.{service}` tasks: a service the manifest does not mark `reversible: true` runs only
 * when `on_result.requested_by` names a rule (by index) that calls it and may act alone, or cites an approval of
 * `service:{domain}.{instance}.{service}` for that item.
 */
async function checkServiceTask(
  options: { registry: IntegrationRegistry; notes: NoteStore; task: Task },
  info: TaskTypeInfo,
): Promise<string | undefined> {
  const service = info.integration.manifest.services[info.service ?? ''];
  if (service?.reversible) return undefined;
  const instance = options.registry.instanceForTask(options.task);
  const instanceName = instance.ok ? instance.instance.name : (options.task.integration ?? info.domain);
  const call = `${info.domain}.${instanceName}.${info.service}`;
  const onResult = z
    .looseObject({
      requested_by: requestedBySchema.optional(),
      routes: z.unknown().optional(),
      human_log: z.unknown().optional(),
    })
    .safeParse(options.task.onResult ?? {});
  if (!onResult.success) {
    const issue = onResult.error.issues[0];
    return `service \`${call}\` cannot be undone, and its on_result does not say who asked: ${issue?.path.join('.')}: ${issue?.message}`;
  }
  const requested = onResult.data.requested_by;
  return checkRequested(options, {
    what: `service \`${call}\``,
    key: `service:${call}`,
    requested,
    approval: requested?.approval,
    task: {
      inputs: z.looseObject({ inputs: z.unknown().optional() }).safeParse(options.task.payload).data?.inputs ?? {},
      routes: onResult.data.routes,
      humanLog: onResult.data.human_log,
    },
  });
}

/** What a script or service task carries that its rule or approval decides: inputs, and a service's routes. */
interface CarriedByTask {
  inputs: unknown;
  /** For services: `on_result.routes` and `on_result.human_log`. */
  routes?: unknown;
  humanLog?: unknown;
}

async function checkRequested(
  options: { registry: IntegrationRegistry; notes: NoteStore },
  check: {
    what: string;
    key: string;
    requested: RequestedBy | undefined;
    approval: string | undefined;
    task: CarriedByTask;
  },
): Promise<string | undefined> {
  const { requested } = check;
  if (!requested) {
    return `${check.what} cannot be undone, and nothing authorises it: the task names no rule and no item (a person runs it through a rule with \`approval: required\`)`;
  }
  const rule = ruleAt(options.registry, requested.instance, requested.platform, requested.rule_index, requested.rule);
  const item = {
    domain: options.registry.instance(requested.instance)?.domain ?? '',
    instance: requested.instance,
    platform: requested.platform,
    item: requested.item,
  };
  let refused: string | undefined;
  if (rule && ruleAuthorises(rule, check.key)) {
    refused = await ruleMatchProblem(options, rule, item, check.key);
    const ruleAction = rule.actions.find((candidate) => candidate.key === check.key);
    if (refused === undefined && ruleAction) {
      const different = await carriedProblem(options.notes, item.item, ruleAction, check.task);
      if (different === undefined) return undefined;
      return `${check.what}: ${different} rule ${rule.index} ("${rule.name}") gives ${item.item}`;
    }
  }
  if (check.approval !== undefined) {
    const approved = await approvedAction(options.notes, check.approval, { ...item, key: check.key });
    if (!approved) {
      return `${check.what} cannot be undone and approval ${check.approval} does not approve it for ${requested.item}`;
    }
    const { action } = approved;
    const different = await carriedProblem(
      options.notes,
      item.item,
      { inputs: action.inputs, onResult: action.on_result, humanLog: action.human_log, kind: action.kind },
      check.task,
    );
    if (different === undefined) return undefined;
    return `${check.what}: ${different} approval ${check.approval} gives ${item.item}`;
  }
  if (refused !== undefined) return `${check.what} cannot be undone, and ${refused}`;
  return `${check.what} cannot be undone, and nothing authorises it: ${describeRule(requested.rule_index, requested.rule, rule)}, the action is not !yolo, and no approval is cited`;
}

/** Where an item of an instance lives, and which platform's rules and fields apply to it. */
interface ItemRef {
  domain: string;
  instance: string;
  platform: string;
  item: string;
}

/**
 * Why the rule does not authorise `key` for this item, or undefined when it does: the item's note must be one of the
 * instance's (`{domain}/{instance}/…`, the layout every integration keeps) and exist, and the rule's `when:` must
 * match it as it is now, evaluated by the same function the evaluate stages use, over the same facts: the fields
 * the platform declares and the note's `classifications`.
 */
async function ruleMatchProblem(
  options: { registry: IntegrationRegistry; notes: NoteStore },
  rule: CompiledRule,
  ref: ItemRef,
  key: string,
): Promise<string | undefined> {
  const read = await readItem(options.notes, ref);
  if ('problem' in read) return read.problem;
  const declared = options.registry.manifestPlatform(ref.domain, ref.platform)?.fields ?? {};
  const fields = Object.fromEntries(Object.keys(declared).map((name) => [name, read.data[name]]));
  const classifications = read.data.classifications;
  const matches = evaluateRules([rule], {
    classifications:
      classifications !== null && typeof classifications === 'object' && !Array.isArray(classifications)
        ? (classifications as Record<string, unknown>)
        : {},
    fields,
  });
  if (matches.some((match) => match.actions.some((action) => action.key === key))) return undefined;
  return `rule ${rule.index} ("${rule.name}") does not match ${ref.item} as it is now`;
}

async function readItem(
  notes: NoteStore,
  ref: ItemRef,
): Promise<{ data: Record<string, unknown> } | { problem: string }> {
  const prefix = `${ref.domain}/${ref.instance}/`;
  if (ref.domain === '' || !ref.item.startsWith(prefix) || ref.item.split('/').includes('..')) {
    return { problem: `${ref.item} is not an item of ${ref.instance} (its items are under ${prefix})` };
  }
  const note = await notes.read(ref.item).catch((error: unknown) => (error instanceof Error ? error : undefined));
  if (note instanceof Error) return { problem: `the note ${ref.item} cannot be read: ${note.message}` };
  if (!note) return { problem: `there is no note ${ref.item}` };
  return { data: note.data as Record<string, unknown> };
}

/**
 * Whether the task carries what the rule's or the approval's action would: its inputs rendered from the item's note
 * as `enqueueActions` renders them, and for services the same result routes and log line. Returns `its inputs are
 * not the ones` (and the like) for the caller to finish, or undefined.
 */
async function carriedProblem(
  notes: NoteStore,
  item: string,
  action: {
    kind: string;
    inputs?: Record<string, string | number | boolean> | undefined;
    onResult?: unknown;
    humanLog?: unknown;
  },
  task: CarriedByTask,
): Promise<string | undefined> {
  const note = await notes.read(item).catch(() => undefined);
  if (!note) return `there is no note ${item}, so its inputs cannot be checked against the ones`;
  let expected: Record<string, string | number | boolean>;
  try {
    expected = renderInputs(action.inputs, { ...(note.data as Record<string, unknown>), item });
  } catch (error) {
    return `its inputs cannot be rendered (${(error as Error).message}) to compare with the ones`;
  }
  if (!isDeepStrictEqual(task.inputs, expected)) return 'its inputs are not the ones';
  if (action.kind === 'service') {
    if (!isDeepStrictEqual(task.routes, action.onResult ?? [{ note: true }])) {
      return 'its on_result routes are not the ones';
    }
    if (!isDeepStrictEqual(task.humanLog, action.humanLog)) return 'its human_log is not the one';
  }
  return undefined;
}

/** The rule at `index` of the platform, when it is there and still has the name the task gives it. */
function ruleAt(
  registry: IntegrationRegistry,
  instance: string,
  platform: string,
  index: number | undefined,
  name: string,
): CompiledRule | undefined {
  if (index === undefined) return undefined;
  const rule = registry.automations(instance, platform).find((candidate) => candidate.index === index);
  return rule?.name === name ? rule : undefined;
}

/** Whether the rule holds the action and may take it without a person: deterministic, or the action is !yolo. */
function ruleAuthorises(rule: CompiledRule | undefined, key: string): boolean {
  const action = rule?.actions.find((candidate) => candidate.key === key);
  return rule !== undefined && action !== undefined && (rule.provenance === 'rule' || action.yolo);
}

/**
 * Why an approved action's target is not the one the person saw, or undefined: the approval shows the item's target
 * field (an unsubscribe address) as it was, and it must still be that.
 */
async function targetMoved(
  notes: NoteStore,
  item: string,
  target: ApprovalRequest['actions'][number]['target'],
): Promise<string | undefined> {
  if (target?.value === undefined) return undefined;
  const note = await notes.read(item).catch(() => undefined);
  const now = note?.data[target.field];
  if (now !== undefined && now !== null && String(now) === target.value) return undefined;
  return `was given for ${target.field} ${target.value}, but ${item} now says ${now === undefined ? 'nothing' : JSON.stringify(now)}`;
}

/** The action an approval approved for exactly this instance, platform, item and key, or undefined. */
async function approvedAction(
  notes: NoteStore,
  id: string,
  wanted: { instance: string; platform: string; item: string; key: string },
): Promise<{ approval: ApprovalRequest; action: ApprovalRequest['actions'][number] } | undefined> {
  const approval = await readApproval(notes, id).catch(() => undefined);
  if (
    approval?.status !== 'approved' ||
    approval.instance !== wanted.instance ||
    approval.platform !== wanted.platform ||
    approval.item !== wanted.item
  ) {
    return undefined;
  }
  const action = approval.actions.find((approved) => approved.key === wanted.key);
  return action ? { approval, action } : undefined;
}

function describeRule(index: number | undefined, name: string, rule: CompiledRule | undefined): string {
  if (index === undefined) return `the task names rule "${name}" without its index`;
  if (!rule) return `rule ${index} is not "${name}" (or no longer exists)`;
  return `rule ${index} ("${name}") ${rule.actions.length > 0 ? 'does not take it, or is not deterministic' : 'takes no such action'}`;
}

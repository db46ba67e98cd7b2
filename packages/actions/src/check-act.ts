import { isDeepStrictEqual } from 'node:util';
import { actionKey, type CompiledRule, evaluateRules, itemFacts } from '@assistant/automations';
import { NotePathError, type NoteStore } from '@assistant/notes';
import { RetryableError, type Task } from '@assistant/queue';
import * as z from 'zod';
import type { ActionRegistry, ActionTaskType } from './action-registry.ts';
import { type ApprovalRequest, isApprovalId, readApproval, recordRefusal } from './approvals.ts';
import { actPayloadSchema } from './enqueue-actions.ts';
import type { PlannedAction } from './planned-action.ts';
import { digestOf, renderAction, type ShownAction } from './render-approval.ts';
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
 * as it is now (which must exist, under `{domain}/{instance}/`), at the time the task was created (a task retried
 * after an outage is judged as it was enqueued, not a day later), and the action must be the rule's in every part: its
 * name, argument and, for scripts and services, its inputs as the rule renders them from the note. An approval binds
 * the item itself (under `{domain}/{instance}/` too); the action must still be the approved one, with the approved
 * inputs and the approved text (what a reply or comment says). An irreversible act whose key is in the item's `actions_started` is not checked again: it began before, and
 * `actOnce` will not take it again.
 * Returns why the task must not run, or undefined. A note that cannot be read just now (EMFILE, EIO, a note a person
 * is half-way through saving) is not a reason to refuse: that throws a RetryableError, and the task is tried again.
 */
export async function checkActTask(options: {
  registry: ActionRegistry;
  notes: NoteStore;
  task: Task;
  /** `scripts:` from config.yaml, for `script.run` tasks. Scripts it does not list count as irreversible. */
  scripts?: Record<string, { reversible: boolean }>;
}): Promise<string | undefined> {
  const { registry, task } = options;
  const shadow = shadowProblem(registry, task);
  if (shadow !== undefined) return shadow;
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
  // Each note is read once, when an irreversible action first needs it.
  let itemRead: ItemRead | undefined;
  let approvalRead: { approval: ApprovalRequest | undefined } | undefined;
  for (const action of payload.actions) {
    if (action.kind !== 'platform')
      return `an act task carries only platform actions, not ${action.kind} \`${action.name}\``;
    // Own keys only: `toString` is no action of any platform.
    const declared =
      platform && Object.hasOwn(platform.actions, action.name) ? platform.actions[action.name] : undefined;
    if (!declared) return `\`${action.name}\` is not an action of ${info.domain}.${info.platform}`;
    // The act handler does what `name` and `argument` say and records it under `key`: they must agree, or an action
    // could borrow another's authority (and its once-per-item record).
    if (action.key !== actionKey(action.name, action.argument)) {
      return `\`${action.name}\`: its key \`${action.key}\` is not its name and argument (${action.argument === undefined ? 'none' : JSON.stringify(action.argument)})`;
    }
    if (payload.approval !== undefined) {
      approvalRead ??= { approval: await loadApproval(options.notes, payload.approval) };
      const unlike = await bindingProblem(options.notes, {
        what: `\`${action.name}\``,
        approval: approvalRead.approval,
        wanted: { ...item, key: action.key },
        task: task.id,
        carried: (approved) => ({
          kind: 'platform',
          name: action.name,
          tier: approved.tier,
          target: approved.target,
          argument: action.argument,
          text: action.text,
        }),
      });
      if (unlike !== undefined) return unlike;
    }
    if (declared.tier !== 'irreversible') continue;
    if (!ruleAuthorises(rule, action.key) && payload.approval === undefined) {
      return `\`${action.name}\` cannot be undone, and nothing authorises it: ${describeRule(payload.rule_index, payload.rule, rule)}, the action is not !yolo, and no approval is cited`;
    }
    itemRead ??= await readItem(options.notes, item);
    // It began before (this task's earlier attempt, or another task): it is not taken again, so there is nothing to
    // authorise, and a rule that no longer matches (the action changed the item, a day passed) must not fail the task.
    if ('data' in itemRead && startedKeys(itemRead.data).has(action.key)) continue;
    const same = (authorised: { kind: string; name: string; argument?: unknown }) =>
      authorised.kind === action.kind &&
      authorised.name === action.name &&
      isDeepStrictEqual(authorised.argument, action.argument);
    let refused: string | undefined;
    if (rule && ruleAuthorises(rule, action.key)) {
      const ruleAction = rule.actions.find((candidate) => candidate.key === action.key);
      refused =
        ruleAction && same(ruleAction)
          ? ruleMatchProblem(options.registry, rule, item, itemRead, action.key)
          : `rule ${rule.index} ("${rule.name}") holds another \`${action.key}\``;
      if (refused === undefined) continue;
    }
    if (payload.approval !== undefined) {
      if ('problem' in itemRead) return `\`${action.name}\` cannot be undone, and ${itemRead.problem}`;
      approvalRead ??= { approval: await loadApproval(options.notes, payload.approval) };
      const approved = approvedAction(approvalRead.approval, { ...item, key: action.key });
      if (approved && same(approved.action)) {
        // The words a reply or comment sends are part of what was approved: a task with other words (or none, for
        // an approval that showed some) is not the approved action.
        if (approved.action.text !== action.text) {
          return `\`${action.name}\` cannot be undone, and approval ${payload.approval} approved ${approved.action.text === undefined ? 'no text' : 'another text'} for it, not the one the task carries`;
        }
        const moved = targetMoved(itemRead.data, payload.item, approved.action.target);
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

/**
 * Why a task must not run because the instance it acts for is in shadow mode (decision 0031), or undefined: a
 * platform's act task of that instance, or a script or service a rule or approval of that instance asked for. In
 * shadow mode rules only propose, so such a task was written by hand or by an approval given before the owner left
 * shadow mode in the running processes; either way nothing reaches the mailbox or account.
 */
function shadowProblem(registry: ActionRegistry, task: Task): string | undefined {
  const info = registry.taskType(task.type);
  let instance: string | undefined;
  if (info?.kind === 'stage' && info.stage === 'act') {
    // A task that names no instance runs for its domain's only one.
    const found = registry.instanceForTask(task);
    instance = found.ok ? found.instance.name : task.integration;
  } else if (task.type === 'script.run' || info?.kind === 'service') {
    const from = task.type === 'script.run' ? task.payload : task.onResult;
    instance = z.looseObject({ requested_by: z.looseObject({ instance: z.string() }) }).safeParse(from).data
      ?.requested_by.instance;
  }
  if (instance === undefined || registry.instance(instance)?.shadow !== true) return undefined;
  return `${instance} is in shadow mode: its rules only propose, and nothing is done to its mailbox or account (\`assistant shadow off ${instance}\` ends it)`;
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

/** Who asked for a script or service, when a hook did (packages/hooks `planHookTasks`): the hook and its firing. */
const hookRequestSchema = z.looseObject({
  hook: z.string(),
  version: z.string(),
  event: z.string(),
  firing: z.string(),
  /** For services: the approval a person gave (scripts carry it in their payload). */
  approval: z.string().optional(),
});

/**
 * The gate for a script or service task a hook enqueued: reversible, it runs; irreversible, it runs when a person
 * approved exactly this task (an approval of kind `hook` for the same hook and firing, holding a task of the same
 * type with the same payload), or when the loaded hook of the same version holds the action and may take it alone
 * (`rule` provenance or `!yolo`, and no `approval: required`). The inputs of a task a hook enqueued alone are not
 * rendered again: the event they came from is the ledger's, which this gate does not read *(planned)*.
 */
async function checkHookTask(
  options: { registry: ActionRegistry; notes: NoteStore; task: Task },
  request: {
    what: string;
    kind: 'script' | 'service';
    name: string;
    reversible: boolean;
    requested: z.infer<typeof hookRequestSchema>;
    approval: string | undefined;
  },
): Promise<string | undefined> {
  const { requested, what } = request;
  if (request.approval !== undefined) {
    const approval = await loadApproval(options.notes, request.approval);
    const firing = approval?.hook_firing;
    if (approval?.kind !== 'hook' || firing === undefined) {
      return `${what}: approval ${request.approval} is not a hook's approval request`;
    }
    if (approval.status !== 'approved')
      return `${what}: approval ${request.approval} is ${approval.status}, not approved`;
    if (firing.hook !== requested.hook || firing.firing !== requested.firing) {
      return `${what}: approval ${request.approval} is for hook ${firing.hook} (firing ${firing.firing}), not this task's`;
    }
    const payload = withoutApproval(options.task.payload);
    const same = firing.tasks.some(
      (approved) =>
        approved.type === options.task.type &&
        canonicalJson(withoutApproval(approved.payload)) === canonicalJson(payload),
    );
    return same ? undefined : `${what}: approval ${request.approval} did not approve this task as it is`;
  }
  if (request.reversible) return undefined;
  const hook = options.registry.hook?.(requested.hook);
  if (!hook) return `${what} cannot be undone, and no hook \`${requested.hook}\` is loaded to authorise it`;
  if (hook.version !== requested.version) {
    return `${what} cannot be undone, and hook \`${requested.hook}\` changed since it fired (version ${requested.version}, now ${hook.version})`;
  }
  const action = hook.actions.find((candidate) => candidate.kind === request.kind && candidate.name === request.name);
  if (!action) return `${what} cannot be undone, and hook \`${requested.hook}\` does not hold it`;
  if (hook.approval)
    return `${what} cannot be undone, and hook \`${requested.hook}\` needs approval, which the task does not cite`;
  if (hook.provenance !== 'rule' && !action.yolo) {
    return `${what} cannot be undone, and hook \`${requested.hook}\` decides with ${hook.provenance} provenance, without !yolo or an approval`;
  }
  return undefined;
}

function withoutApproval(payload: unknown): unknown {
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) return payload ?? {};
  const { approval: _approval, ...rest } = payload as Record<string, unknown>;
  return rest;
}

function canonicalJson(value: unknown): string {
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

/** The same gate for `script.run`: an irreversible script needs its rule's say-so or a person's approval. */
async function checkScriptTask(options: {
  registry: ActionRegistry;
  notes: NoteStore;
  task: Task;
  scripts?: Record<string, { reversible: boolean }>;
}): Promise<string | undefined> {
  const byHook = z
    .looseObject({ script: z.string(), approval: z.string().optional(), requested_by: hookRequestSchema })
    .safeParse(options.task.payload);
  if (byHook.success) {
    return checkHookTask(options, {
      what: `script \`${byHook.data.script}\``,
      kind: 'script',
      name: byHook.data.script,
      reversible: options.scripts?.[byHook.data.script]?.reversible === true,
      requested: byHook.data.requested_by,
      approval: byHook.data.approval,
    });
  }
  const parsed = scriptPayloadSchema.safeParse(options.task.payload);
  if (!parsed.success) {
    // A payload without a script name is the handler's to report; one with a bad `requested_by` is refused here.
    const named = z.looseObject({ script: z.string() }).safeParse(options.task.payload);
    if (!named.success || options.scripts?.[named.data.script]?.reversible) return undefined;
    const issue = parsed.error.issues[0];
    return `script \`${named.data.script}\` cannot be undone, and its payload does not say who asked: ${issue?.path.join('.')}: ${issue?.message}`;
  }
  const payload = parsed.data;
  const requested = payload.requested_by;
  if (payload.approval !== undefined && requested) {
    const unlike = await bindingProblem(options.notes, {
      what: `script \`${payload.script}\``,
      approval: await loadApproval(options.notes, payload.approval),
      wanted: { ...requestedItem(options.registry, requested), key: `script:${payload.script}` },
      task: options.task.id,
      carried: (approved) => ({
        kind: 'script',
        name: payload.script,
        tier: approved.tier,
        ...carriedInputs(payload.inputs),
      }),
    });
    if (unlike !== undefined) return unlike;
  }
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
  options: { registry: ActionRegistry; notes: NoteStore; task: Task },
  info: ActionTaskType,
): Promise<string | undefined> {
  const service = info.integration.manifest.services[info.service ?? ''];
  const byHook = z.looseObject({ requested_by: hookRequestSchema }).safeParse(options.task.onResult ?? {});
  if (byHook.success) {
    const instance = options.registry.instanceForTask(options.task);
    const call = `${info.domain}.${instance.ok ? instance.instance.name : (options.task.integration ?? info.domain)}.${info.service}`;
    return checkHookTask(options, {
      what: `service \`${call}\``,
      kind: 'service',
      name: call,
      reversible: service?.reversible === true,
      requested: byHook.data.requested_by,
      approval: byHook.data.requested_by.approval,
    });
  }
  const bound = await serviceBinding(options, info);
  if (bound !== undefined) return bound;
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

/**
 * The binding check of a service task that cites an approval (reversible or not: the owner approved what they read):
 * its inputs, result routes and log line must render as the approval showed them.
 */
async function serviceBinding(
  options: { registry: ActionRegistry; notes: NoteStore; task: Task },
  info: ActionTaskType,
): Promise<string | undefined> {
  const onResult = z
    .looseObject({ requested_by: requestedBySchema, routes: z.unknown().optional(), human_log: z.unknown().optional() })
    .safeParse(options.task.onResult ?? {});
  // Without a readable `requested_by` there is no approval to bind to; the gate below says what is missing.
  if (!onResult.success || onResult.data.requested_by.approval === undefined) return undefined;
  const requested = onResult.data.requested_by;
  const instance = options.registry.instanceForTask(options.task);
  const instanceName = instance.ok ? instance.instance.name : (options.task.integration ?? info.domain);
  const call = `${info.domain}.${instanceName}.${info.service}`;
  const inputs = z.looseObject({ inputs: z.unknown().optional() }).safeParse(options.task.payload).data?.inputs;
  const humanLog = onResult.data.human_log;
  return bindingProblem(options.notes, {
    what: `service \`${call}\``,
    approval: await loadApproval(options.notes, requested.approval ?? ''),
    wanted: { ...requestedItem(options.registry, requested), key: `service:${call}` },
    task: options.task.id,
    carried: (approved) => ({
      kind: 'service',
      name: approved.name,
      tier: approved.tier,
      ...carriedInputs(inputs),
      routes: onResult.data.routes,
      ...(humanLog === undefined
        ? {}
        : { humanLog: typeof humanLog === 'string' ? humanLog : JSON.stringify(humanLog) }),
    }),
  });
}

/** The item a script or service task names, for finding its action on an approval. */
function requestedItem(registry: ActionRegistry, requested: RequestedBy): ItemRef {
  return {
    domain: registry.instance(requested.instance)?.domain ?? '',
    instance: requested.instance,
    platform: requested.platform,
    item: requested.item,
  };
}

/** A task's inputs as a rendering shows them: plain values, or why they are not. */
function carriedInputs(inputs: unknown): Pick<ShownAction, 'inputs' | 'inputsProblem'> {
  const plain = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).safeParse(inputs ?? {});
  // The checked values, with the task's own keys: zod's record output assigns its keys, so an input named
  // `__proto__` would set the copy's prototype and vanish from the rendering; Object.fromEntries keeps it as a key.
  return plain.success
    ? { inputs: Object.fromEntries(Object.entries(inputs ?? {})) as typeof plain.data }
    : { inputsProblem: 'the task carries inputs that are not plain values' };
}

/**
 * Why an action a task carries is not the one its approval showed the owner, or undefined. The approval binds to the
 * digest of its rendering, and each action to the digest of its part: the task's action is rendered again from what
 * the task carries (name, argument, inputs, text, routes) and must hash to the same. An approval of the action made
 * before approvals were bound (no digest) binds to nothing and is refused: the owner asks again. An approval that does
 * not name this action for this item is left to the checks after this one. A refusal is recorded on the approval.
 */
async function bindingProblem(
  notes: NoteStore,
  check: {
    what: string;
    approval: ApprovalRequest | undefined;
    wanted: ItemRef & { key: string };
    task: string;
    carried: (approved: PlannedAction) => ShownAction;
  },
): Promise<string | undefined> {
  const found = approvedAction(check.approval, check.wanted);
  if (!found) return undefined;
  const { approval, action } = found;
  let problem: string | undefined;
  if (action.digest === undefined || approval.digest === undefined) {
    problem = `approval ${approval.id} was given before approvals were bound to what they show (it has no digest), so it authorises nothing; ask again`;
  } else {
    const rendered = renderAction(check.carried(action));
    const digest = digestOf(rendered);
    if (digest !== action.digest) {
      problem = `what the task would run is not what approval ${approval.id} showed the owner (approved ${action.digest}, the task ${digest}); ${firstUnseen(rendered, approval.rendering ?? '')}`;
    }
  }
  if (problem === undefined) return undefined;
  await recordRefusal(notes, { id: approval.id, task: check.task, reason: problem });
  return `${check.what}: ${problem}`;
}

/** The first line of what would run that the owner was not shown, cut short for a log line. */
function firstUnseen(rendered: string, shown: string): string {
  const seen = new Set(shown.split('\n'));
  const line = rendered.split('\n').find((candidate) => !seen.has(candidate));
  if (line === undefined) return 'the same lines in another order or number';
  return `it would run \`${line.length > 160 ? `${line.slice(0, 160)}…` : line}\`, which the owner was not shown`;
}

/** What a script or service task carries that its rule or approval decides: inputs, and a service's routes. */
interface CarriedByTask {
  inputs: unknown;
  /** For services: `on_result.routes` and `on_result.human_log`. */
  routes?: unknown;
  humanLog?: unknown;
}

async function checkRequested(
  options: { registry: ActionRegistry; notes: NoteStore },
  check: {
    what: string;
    /** When the task was created: the rule's `when:` is evaluated at that time. */
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
  const authorises = rule !== undefined && ruleAuthorises(rule, check.key);
  // Read once, and only when a rule or an approval may authorise the call.
  const read = authorises || check.approval !== undefined ? await readItem(options.notes, item) : undefined;
  let refused: string | undefined;
  if (rule && read && authorises) {
    refused = ruleMatchProblem(options.registry, rule, item, read, check.key);
    const ruleAction = rule.actions.find((candidate) => candidate.key === check.key);
    if (refused === undefined && ruleAction) {
      const different = carriedProblem(read, item.item, ruleAction, check.task);
      if (different === undefined) return undefined;
      return `${check.what}: ${different} rule ${rule.index} ("${rule.name}") gives ${item.item}`;
    }
  }
  if (check.approval !== undefined) {
    const outside = outsideInstance(item);
    if (outside !== undefined) return `${check.what} cannot be undone, and ${outside}`;
    const approved = approvedAction(await loadApproval(options.notes, check.approval), { ...item, key: check.key });
    if (!approved) {
      return `${check.what} cannot be undone and approval ${check.approval} does not approve it for ${requested.item}`;
    }
    const { action } = approved;
    const different = carriedProblem(
      read ?? { problem: `there is no note ${item.item}` },
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

/** The item's note as read once for the gate: its frontmatter, or why it cannot be used (not the instance's, none). */
type ItemRead = { data: Record<string, unknown> } | { problem: string };

/**
 * Why the rule does not authorise `key` for this item, or undefined when it does: the item's note must be one of the
 * instance's (`{domain}/{instance}/…`, the layout every integration keeps) and exist, and the rule's `when:` must
 * match it as it is now, evaluated at the time the rule decided it (see `decidedAt`) by the same function the evaluate stages use,
 * over the same facts: the fields the platform declares and the note's `classifications`.
 */
function ruleMatchProblem(
  registry: ActionRegistry,
  rule: CompiledRule,
  ref: ItemRef,
  read: ItemRead,
  key: string,
): string | undefined {
  if ('problem' in read) return read.problem;
  const platform = registry.manifestPlatform(ref.domain, ref.platform) ?? { fields: {} };
  const matches = evaluateRules(
    [rule],
    itemFacts(platform, read.data),
    decidedAt(read.data, key, rule.name) ?? Date.now(),
  );
  if (matches.some((match) => match.actions.some((action) => action.key === key))) return undefined;
  return `rule ${rule.index} ("${rule.name}") does not match ${ref.item} as it is now`;
}

/** Why the item is not one of the instance's (`{domain}/{instance}/…`), or undefined when it is. */
function outsideInstance(ref: Pick<ItemRef, 'domain' | 'instance' | 'item'>): string | undefined {
  const prefix = `${ref.domain}/${ref.instance}/`;
  if (ref.domain === '' || ref.instance === '' || !ref.item.startsWith(prefix) || ref.item.split('/').includes('..')) {
    return `${ref.item} is not an item of ${ref.instance} (its items are under ${prefix})`;
  }
  return undefined;
}

/**
 * The item's note, or why there is none to act on: not one of the instance's, a path the notes refuse, or no such
 * note. Any other failure to read it (EMFILE, EIO, frontmatter that does not parse while a person is saving it) may
 * pass, so it throws a RetryableError: the task is tried again later rather than refused for good.
 */
async function readItem(notes: NoteStore, ref: ItemRef): Promise<ItemRead> {
  const outside = outsideInstance(ref);
  if (outside !== undefined) return { problem: outside };
  let note: Awaited<ReturnType<NoteStore['read']>>;
  try {
    note = await notes.read(ref.item);
  } catch (error) {
    if (error instanceof NotePathError) return { problem: `${ref.item} is not a note path: ${error.message}` };
    if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') return { problem: `there is no note ${ref.item}` };
    throw new RetryableError(`the note ${ref.item} cannot be read just now: ${messageOf(error)}`, { cause: error });
  }
  if (!note) return { problem: `there is no note ${ref.item}` };
  return { data: note.data as Record<string, unknown> };
}

/**
 * The approval note `id`, or undefined when there is none or `id` is not an approval id. A note that cannot be read
 * or is not an approval request (a person editing it) throws a RetryableError, like an item note.
 */
async function loadApproval(notes: NoteStore, id: string): Promise<ApprovalRequest | undefined> {
  if (!isApprovalId(id)) return undefined;
  try {
    return await readApproval(notes, id);
  } catch (error) {
    throw new RetryableError(`approval ${id} cannot be read just now: ${messageOf(error)}`, { cause: error });
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The keys in the item note's `actions_started`: irreversible actions that began, which `actOnce` never runs again. */
function startedKeys(data: Record<string, unknown>): Set<string> {
  const started = data.actions_started;
  if (!Array.isArray(started)) return new Set();
  return new Set(
    started.flatMap((entry: unknown) =>
      entry !== null && typeof entry === 'object' && typeof (entry as { action?: unknown }).action === 'string'
        ? [(entry as { action: string }).action]
        : [],
    ),
  );
}

/**
 * Whether the task carries what the rule's or the approval's action would: its inputs rendered from the item's note
 * as `enqueueActions` renders them, and for services the same result routes and log line. Returns `its inputs are
 * not the ones` (and the like) for the caller to finish, or undefined.
 */
function carriedProblem(
  read: ItemRead,
  item: string,
  action: {
    kind: string;
    inputs?: Record<string, string | number | boolean> | undefined;
    onResult?: unknown;
    humanLog?: unknown;
  },
  task: CarriedByTask,
): string | undefined {
  if ('problem' in read) return `there is no note ${item}, so its inputs cannot be checked against the ones`;
  let expected: Record<string, string | number | boolean>;
  try {
    expected = renderInputs(action.inputs, { ...read.data, item });
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

/**
 * When the rule decided this action for this item: the `at` of its entry in the item note's `actions_taken`, written
 * under the note's lock when the rule's actions were enqueued. The rule's `when:` is evaluated at that time, so a
 * task that waited out an outage is judged as it was decided (`date > now() - 1d` still holds a day later). The time
 * comes from the note, not from the task file, which anyone who can write to the queue can backdate. A time in the
 * future is not believed.
 */
function decidedAt(data: Record<string, unknown>, key: string, ruleName: string): number | undefined {
  const taken = Array.isArray(data.actions_taken) ? data.actions_taken : [];
  const entry = taken.find(
    (candidate): candidate is { at: string } =>
      candidate !== null &&
      typeof candidate === 'object' &&
      (candidate as { action?: unknown }).action === key &&
      (candidate as { rule?: unknown }).rule === ruleName &&
      typeof (candidate as { at?: unknown }).at === 'string',
  );
  const atMs = entry ? Date.parse(entry.at) : Number.NaN;
  return Number.isNaN(atMs) || atMs > Date.now() ? undefined : atMs;
}

/** The rule at `index` of the platform, when it is there and still has the name the task gives it. */
function ruleAt(
  registry: ActionRegistry,
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
 * field (an unsubscribe address) as it was, and it must still be that; an approval given when the item showed none
 * holds only while it still shows none.
 */
function targetMoved(
  data: Record<string, unknown>,
  item: string,
  target: ApprovalRequest['actions'][number]['target'],
): string | undefined {
  if (target === undefined) return undefined;
  const now = data[target.field];
  // As `plannedForApproval` shows it: a plain value as text, anything else as nothing.
  const shown = typeof now === 'string' || typeof now === 'number' || typeof now === 'boolean' ? String(now) : '';
  const says = now === undefined ? 'nothing' : JSON.stringify(now);
  if (target.value === undefined) {
    if (shown.trim() === '') return undefined;
    return `was given when ${item} had no ${target.field}, but it now says ${says}`;
  }
  if (shown === target.value) return undefined;
  return `was given for ${target.field} ${target.value}, but ${item} now says ${says}`;
}

/**
 * The action the approval approved for exactly this instance, platform, item and key, or undefined. The item must be
 * one of the instance's (`{domain}/{instance}/…`), like an item a rule acts on.
 */
function approvedAction(
  approval: ApprovalRequest | undefined,
  wanted: ItemRef & { key: string },
): { approval: ApprovalRequest; action: ApprovalRequest['actions'][number] } | undefined {
  if (
    approval?.status !== 'approved' ||
    approval.instance !== wanted.instance ||
    approval.platform !== wanted.platform ||
    approval.item !== wanted.item ||
    outsideInstance(wanted) !== undefined
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

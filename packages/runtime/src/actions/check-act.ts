import type { NoteStore } from '@assistant/notes';
import type { Task } from '@assistant/queue';
import * as z from 'zod';
import type { CompiledRule } from '../automations/compile-automations.ts';
import type { IntegrationRegistry, TaskTypeInfo } from '../integration-registry.ts';
import { readApproval } from './approvals.ts';
import { actPayloadSchema } from './enqueue-actions.ts';

/**
 * The worker's gate, run before every task that could do something that cannot be undone: a platform's `act` task,
 * `script.run` and `service.*`. Each irreversible action is checked again, not against what the task file says
 * about itself (anyone who can write to the queue can write a task file, and `source:` is just a line in it) but
 * against the manifest's tiers, `scripts:` in config.yaml, the rule in config.yaml the task names by index, and the
 * approval note it cites. An irreversible action runs only when that rule is `rule` provenance and holds the action,
 * the rule's action is tagged `!yolo`, or a person approved exactly this action for exactly this item. A person
 * acting by hand goes through an approval too (`assistant act`, `POST /api/actions` create it approved).
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
  for (const action of payload.actions) {
    if (action.kind !== 'platform')
      return `an act task carries only platform actions, not ${action.kind} \`${action.name}\``;
    const declared = platform?.actions[action.name];
    if (!declared) return `\`${action.name}\` is not an action of ${info.domain}.${info.platform}`;
    if (declared.tier !== 'irreversible') continue;
    if (ruleAuthorises(rule, action.key)) continue;
    if (payload.approval !== undefined) {
      const covers = await approvalCovers(options.notes, payload.approval, {
        instance,
        platform: info.platform,
        item: payload.item,
        key: action.key,
      });
      if (covers) continue;
      return `\`${action.name}\` cannot be undone and approval ${payload.approval} does not approve it for ${payload.item}`;
    }
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
  const onResult = z.looseObject({ requested_by: requestedBySchema.optional() }).safeParse(options.task.onResult ?? {});
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
  });
}

async function checkRequested(
  options: { registry: IntegrationRegistry; notes: NoteStore },
  check: { what: string; key: string; requested: RequestedBy | undefined; approval: string | undefined },
): Promise<string | undefined> {
  const { requested } = check;
  if (!requested) {
    return `${check.what} cannot be undone, and nothing authorises it: the task names no rule and no item (a person runs it through a rule with \`approval: required\`)`;
  }
  const rule = ruleAt(options.registry, requested.instance, requested.platform, requested.rule_index, requested.rule);
  if (ruleAuthorises(rule, check.key)) return undefined;
  if (check.approval !== undefined) {
    const covers = await approvalCovers(options.notes, check.approval, {
      instance: requested.instance,
      platform: requested.platform,
      item: requested.item,
      key: check.key,
    });
    if (covers) return undefined;
    return `${check.what} cannot be undone and approval ${check.approval} does not approve it for ${requested.item}`;
  }
  return `${check.what} cannot be undone, and nothing authorises it: ${describeRule(requested.rule_index, requested.rule, rule)}, the action is not !yolo, and no approval is cited`;
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

async function approvalCovers(
  notes: NoteStore,
  id: string,
  wanted: { instance: string; platform: string; item: string; key: string },
): Promise<boolean> {
  const approval = await readApproval(notes, id).catch(() => undefined);
  return (
    approval?.status === 'approved' &&
    approval.instance === wanted.instance &&
    approval.platform === wanted.platform &&
    approval.item === wanted.item &&
    approval.actions.some((approved) => approved.key === wanted.key)
  );
}

function describeRule(index: number | undefined, name: string, rule: CompiledRule | undefined): string {
  if (index === undefined) return `the task names rule "${name}" without its index`;
  if (!rule) return `rule ${index} is not "${name}" (or no longer exists)`;
  return `rule ${index} ("${name}") ${rule.actions.length > 0 ? 'does not take it, or is not deterministic' : 'takes no such action'}`;
}

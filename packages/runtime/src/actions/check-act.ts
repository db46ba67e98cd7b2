import type { NoteStore } from '@assistant/notes';
import type { Task } from '@assistant/queue';
import * as z from 'zod';
import type { IntegrationRegistry } from '../integration-registry.ts';
import { readApproval } from './approvals.ts';
import { actPayloadSchema } from './enqueue-actions.ts';

/**
 * Defence in depth for the act stage: before a platform's `act` task runs, each action in it is checked again, not
 * against what the task file says about itself (a file can be edited) but against the manifest's tiers, the rule
 * in config.yaml it names, and the approval note it cites. An irreversible action runs only when its rule is `rule`
 * provenance, the rule's action is tagged `!yolo`, or a person approved exactly this action for exactly this item.
 * Tasks a person added by hand (`api`, `cli`) are that person's decision and are not second-guessed.
 * Returns why the task must not run, or undefined.
 */
export async function checkActTask(options: {
  registry: IntegrationRegistry;
  notes: NoteStore;
  task: Task;
  /** `scripts:` from config.yaml, for `script.run` tasks. */
  scripts?: Record<string, { reversible: boolean }>;
}): Promise<string | undefined> {
  const { registry, task } = options;
  if (task.type === 'script.run') return checkScriptTask(options);
  const info = registry.taskType(task.type);
  if (info?.kind !== 'stage' || info.platform === undefined || info.stage !== 'act') return undefined;
  if (task.source === 'api' || task.source === 'cli') return undefined;
  const parsed = actPayloadSchema.safeParse(task.payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `not an act payload: ${issue?.path.join('.') || 'payload'}: ${issue?.message}`;
  }
  const payload = parsed.data;
  const instance = task.integration ?? '';
  const platform = registry.manifestPlatform(info.domain, info.platform);
  const rule = registry
    .automations(instance, info.platform)
    .find((candidate) => candidate.index === payload.rule_index);
  for (const action of payload.actions) {
    if (action.kind !== 'platform')
      return `an act task carries only platform actions, not ${action.kind} \`${action.name}\``;
    const declared = platform?.actions[action.name];
    if (!declared) return `\`${action.name}\` is not an action of ${info.domain}.${info.platform}`;
    if (declared.tier !== 'irreversible') continue;
    const ruleAction = rule?.actions.find((candidate) => candidate.key === action.key);
    if (rule && ruleAction && (rule.provenance === 'rule' || ruleAction.yolo)) continue;
    if (payload.approval !== undefined) {
      const approval = await readApproval(options.notes, payload.approval).catch(() => undefined);
      const covers =
        approval?.status === 'approved' &&
        approval.instance === instance &&
        approval.platform === info.platform &&
        approval.item === payload.item &&
        approval.actions.some((approved) => approved.key === action.key);
      if (covers) continue;
      return `\`${action.name}\` cannot be undone and approval ${payload.approval} does not approve it for ${payload.item}`;
    }
    return `\`${action.name}\` cannot be undone, and nothing authorises it: rule ${payload.rule_index} ("${payload.rule}") is not deterministic${rule ? '' : ' (or no longer exists)'}, the action is not !yolo, and no approval is cited`;
  }
  return undefined;
}

const scriptPayloadSchema = z.looseObject({
  script: z.string(),
  provenance: z.enum(['rule', 'llm', 'hybrid']).optional(),
  approval: z.string().optional(),
  requested_by: z
    .looseObject({ instance: z.string(), platform: z.string(), item: z.string(), rule: z.string() })
    .optional(),
});

/** The same gate for `script.run`: an irreversible script an automation asked for needs its rule's say-so or a person's. */
async function checkScriptTask(options: {
  registry: IntegrationRegistry;
  notes: NoteStore;
  task: Task;
  scripts?: Record<string, { reversible: boolean }>;
}): Promise<string | undefined> {
  const { task } = options;
  if (task.source === 'api' || task.source === 'cli') return undefined;
  const parsed = scriptPayloadSchema.safeParse(task.payload);
  if (!parsed.success) return undefined; // the handler reports a malformed payload itself
  const payload = parsed.data;
  if (options.scripts?.[payload.script]?.reversible) return undefined;
  const key = `script:${payload.script}`;
  const requested = payload.requested_by;
  if (requested) {
    const rule = options.registry
      .automations(requested.instance, requested.platform)
      .find((candidate) => candidate.name === requested.rule);
    const action = rule?.actions.find((candidate) => candidate.key === key);
    if (rule && action && (rule.provenance === 'rule' || action.yolo)) return undefined;
  }
  if (payload.approval !== undefined) {
    const approval = await readApproval(options.notes, payload.approval).catch(() => undefined);
    if (
      approval?.status === 'approved' &&
      approval.actions.some((approved) => approved.key === key) &&
      (!requested || approval.item === requested.item)
    ) {
      return undefined;
    }
    return `script \`${payload.script}\` cannot be undone and approval ${payload.approval} does not approve it`;
  }
  return `script \`${payload.script}\` cannot be undone, and nothing authorises it: no deterministic rule or !yolo asked for it, and no approval is cited`;
}

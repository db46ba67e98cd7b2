import { type ActionCatalog, serviceResolver } from '@assistant/automations';
import type { Config } from '@assistant/config';
import type { DiscoveredIntegration, ReversibilityTier } from '@assistant/manifests';

/** A task type a hook may enqueue, with the tier its manifest declares for it (if any). */
export interface HookTaskType {
  /** Declared in the manifest (`tier:` of a task or stage), or derived (a service's `reversible`); else irreversible. */
  tier?: ReversibilityTier;
}

/**
 * What a hook may name in `then:` and `ask:`: the same services and scripts as automations, the task types the
 * integrations handle, the integration instances (for `pause:`) and the LLM profiles. Built by {@link hookCatalog};
 * tests build their own.
 */
export interface HookCatalog {
  /** Resolves `domain.instance.service` or `domain.service`, as automations do. */
  service: ActionCatalog['service'];
  /** `scripts:` of config.yaml: each is irreversible unless `reversible: true`. */
  scripts: Record<string, { reversible: boolean }>;
  /** Task types some handler runs: `{domain}.{task}`, `{domain}.{platform}.{stage}`, `service.{domain}.{service}`. */
  taskTypes: Record<string, HookTaskType>;
  /** Integration instances, configured or default (`pause:` names one). */
  instances: readonly string[];
  /** LLM profiles under `llms:` (`ask.llm`, `agent.llm`); `default` is used when none is named. */
  llms: readonly string[];
}

/** The catalog of a loaded config and its discovered integrations. */
export function hookCatalog(options: {
  config: Pick<Config, 'scripts' | 'integrations' | 'llms'>;
  integrations: readonly DiscoveredIntegration[];
}): HookCatalog {
  const { config, integrations } = options;
  const taskTypes: Record<string, HookTaskType> = {};
  for (const { manifest } of integrations) {
    for (const [name, task] of Object.entries(manifest.tasks)) {
      taskTypes[`${manifest.domain}.${name}`] = task.tier === undefined ? {} : { tier: task.tier };
    }
    for (const [platformName, platform] of Object.entries(manifest.platforms)) {
      for (const [stageName, stage] of Object.entries(platform.stages)) {
        taskTypes[`${manifest.domain}.${platformName}.${stageName}`] =
          stage.tier === undefined ? {} : { tier: stage.tier };
      }
    }
    for (const [name, service] of Object.entries(manifest.services)) {
      taskTypes[`service.${manifest.domain}.${name}`] = { tier: service.reversible ? 'soft' : 'irreversible' };
    }
  }
  const instances = new Set(config.integrations.map((instance) => instance.name));
  for (const { manifest } of integrations) {
    const fallback = manifest.default_instance?.name;
    if (fallback !== undefined && !config.integrations.some((instance) => instance.type === manifest.domain))
      instances.add(fallback);
  }
  return {
    service: serviceResolver(config, integrations),
    scripts: Object.fromEntries(
      Object.entries(config.scripts).map(([name, script]) => [name, { reversible: script.reversible }]),
    ),
    taskTypes,
    instances: [...instances],
    llms: Object.keys(config.llms),
  };
}

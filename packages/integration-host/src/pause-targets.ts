import { type PauseKind, rulePauseName } from '@assistant/notes';
import type { IntegrationRegistry } from './integration-registry.ts';

/**
 * What `kind` `name` names in this config, as the pause note records it, or why it names nothing with what would be
 * valid. A rule is `instance/platform/rule`, where `rule` is its `name` or its number in the platform's
 * `automations:` (1-based); it is recorded under its name (`automation N` for one without).
 */
export function resolvePauseTarget(options: {
  registry: Pick<IntegrationRegistry, 'instances' | 'automations' | 'scheduledInstances'>;
  kind: PauseKind;
  name: string;
}): { ok: true; name: string } | { ok: false; problem: string; hint: string } {
  const { registry, kind, name } = options;
  const instances = registry.instances();
  const list = (names: string[]) => (names.length > 0 ? names.join(', ') : 'none');
  if (kind === 'instance') {
    if (instances.some((instance) => instance.name === name)) return { ok: true, name };
    return {
      ok: false,
      problem: `there is no integration instance \`${name}\``,
      hint: `instances: ${list(instances.map((instance) => instance.name))}`,
    };
  }
  if (kind === 'schedule') {
    const scheduled = registry.scheduledInstances().map((job) => job.instance.name);
    if (scheduled.includes(name)) return { ok: true, name };
    return {
      ok: false,
      problem: `there is no schedule \`${name}\` (a schedule is named like the instance whose \`schedule:\` it is)`,
      hint: `schedules: ${list(scheduled)}`,
    };
  }
  const rules = instances.flatMap((instance) =>
    Object.keys(instance.platforms).flatMap((platform) =>
      registry
        .automations(instance.name, platform)
        .map((rule) => ({ instance: instance.name, platform, rule: rule.name, index: rule.index })),
    ),
  );
  const [instanceName, platform, ...rest] = name.split('/');
  const ruleName = rest.join('/');
  const found = rules.find(
    (rule) =>
      rule.instance === instanceName &&
      rule.platform === platform &&
      (rule.rule === ruleName || String(rule.index + 1) === ruleName),
  );
  if (found) return { ok: true, name: rulePauseName(found) };
  return {
    ok: false,
    problem: `there is no automation rule \`${name}\`; write instance/platform/rule, the rule by its name or number`,
    hint: `rules: ${list(rules.map(rulePauseName))}`,
  };
}

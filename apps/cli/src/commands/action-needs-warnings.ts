import type { ConfigProblem, LoadedConfig } from '@assistant/config';
import type { IntegrationRegistry } from '@assistant/integration-host';

/**
 * Warnings for rules whose actions cannot run on their instance: the manifest says the action `needs:` an instance
 * setting (`send_reply` and a mailto: `unsubscribe` need `smtp`) and the instance does not set it. Such a rule
 * loads and matches, and its action then fails at once, approved or not; the owner should learn that from
 * `config check`, not from a failed task. Warnings, not errors: an instance may get the setting later, and an
 * action needed only sometimes (a one-click unsubscribe needs no `smtp`) may never fail.
 */
export function actionNeedsWarnings(options: { config: LoadedConfig; registry: IntegrationRegistry }): ConfigProblem[] {
  const { config, registry } = options;
  const file = config.paths.configFile;
  const warnings: ConfigProblem[] = [];
  for (const instance of registry.instances()) {
    if (!instance.enabled) continue;
    const configIndex = config.integrations.findIndex((entry) => entry.name === instance.name);
    for (const platformName of Object.keys(instance.platforms)) {
      const declared = registry.manifestPlatform(instance.domain, platformName)?.actions ?? {};
      for (const rule of registry.automations(instance.name, platformName)) {
        for (const action of rule.actions) {
          if (action.kind !== 'platform') continue;
          for (const need of declared[action.name]?.needs ?? []) {
            const value = instance.settings[need.setting];
            if (value !== undefined && value !== null && value !== '') continue;
            warnings.push({
              severity: 'warning',
              file,
              path:
                configIndex === -1
                  ? []
                  : ['integrations', configIndex, 'platforms', platformName, 'automations', rule.index, 'then'],
              message: `rule "${rule.name}" takes \`${action.name}\`, which needs \`${need.setting}:\` on instance ${instance.name}${need.for ? ` (for ${need.for})` : ''}; ${instance.name} has none, so the action will fail`,
              hint: `add \`${need.setting}:\` to instance ${instance.name} (the ${instance.domain} integration's README lists its settings), or take \`${action.name}\` out of the rule`,
            });
          }
        }
      }
    }
  }
  return warnings;
}

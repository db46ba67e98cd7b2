import type { Config, ConfigCheckProblem, PlatformConfig } from '@assistant/config';
import type { DiscoveredIntegration, ManifestPlatform } from '@assistant/manifests';
import {
  type ActionCatalog,
  type CompiledRule,
  compileAutomations,
  type ItemFacts,
  type RuleProblem,
} from './compile-automations.ts';
import type { FieldType } from './conditions.ts';

/** The declared fields of a platform, by type. */
export function platformFields(platform: ManifestPlatform): Record<string, FieldType> {
  return Object.fromEntries(
    Object.entries(platform.fields).map(([name, field]) => [name, typeof field === 'string' ? field : field.type]),
  );
}

/**
 * The facts rules test for an item, from its note's frontmatter: each field the platform declares, and the note's
 * `classifications` (a missing or malformed map is none). The act gate and `assistant automations explain` read them
 * this way; the email and greeter evaluate stages pick the same fields.
 */
export function itemFacts(platform: Pick<ManifestPlatform, 'fields'>, data: Record<string, unknown>): ItemFacts {
  const classifications = data.classifications;
  return {
    classifications:
      classifications !== null && typeof classifications === 'object' && !Array.isArray(classifications)
        ? (classifications as Record<string, unknown>)
        : {},
    fields: Object.fromEntries(Object.keys(platform.fields).map((name) => [name, data[name]])),
  };
}

/** The platform's fields marked `trusted: true`: computed from our own state, not from the item's sender. */
export function platformTrustedFields(platform: ManifestPlatform): string[] {
  return Object.entries(platform.fields)
    .filter(([, field]) => typeof field !== 'string' && field.trusted)
    .map(([name]) => name);
}

/** What a platform's rules may name: its own actions, the config's scripts, and the services of configured instances. */
function actionCatalog(
  config: Pick<Config, 'scripts' | 'integrations'>,
  integrations: readonly DiscoveredIntegration[],
  platform: ManifestPlatform,
): ActionCatalog {
  return {
    platformActions: Object.fromEntries(
      Object.entries(platform.actions).map(([name, action]) => [
        name,
        {
          tier: action.tier,
          argument: action.argument,
          argumentOptional: action.argument_optional === true,
          target: action.target,
        },
      ]),
    ),
    scripts: Object.fromEntries(
      Object.entries(config.scripts).map(([name, script]) => [name, { reversible: script.reversible }]),
    ),
    service: serviceResolver(config, integrations),
  };
}

/**
 * Resolves a service call as rules and hooks write it: `domain.instance.service`, or `domain.service` for the domain's
 * default instance. Its reversibility and the call in full (`domain.instance.service`), or why it names nothing.
 */
export function serviceResolver(
  config: Pick<Config, 'integrations'>,
  integrations: readonly DiscoveredIntegration[],
): ActionCatalog['service'] {
  const byDomain = new Map(integrations.map((integration) => [integration.manifest.domain, integration.manifest]));
  return (call) => {
    const parts = call.split('.');
    const [domain = ''] = parts;
    const serviceName = parts.at(-1) ?? '';
    const manifest = byDomain.get(domain);
    if (!manifest) return { problem: `\`${call}\`: no integration \`${domain}\` is installed` };
    const service = manifest.services[serviceName];
    if (!service) {
      const names = Object.keys(manifest.services);
      return {
        problem: `\`${call}\`: the ${domain} integration has no service \`${serviceName}\`${names.length > 0 ? ` (it has: ${names.join(', ')})` : ''}`,
      };
    }
    // The instances that run the domain's tasks: config.yaml's, else the manifest's default instance (which runs
    // them when config.yaml has none).
    const configured = config.integrations.filter((candidate) => candidate.type === domain).map(({ name }) => name);
    const fallback = manifest.default_instance?.name;
    const instances = configured.length > 0 ? configured : fallback === undefined ? [] : [fallback];
    if (parts.length === 2) {
      // `domain.service`: the domain's default instance, the one named like the domain, else its only one.
      const name =
        instances.find((candidate) => candidate === domain) ?? (instances.length === 1 ? instances[0] : undefined);
      if (name === undefined) {
        return {
          problem:
            instances.length === 0
              ? `\`${call}\`: there is no ${domain} instance under \`integrations:\``
              : `\`${call}\`: there are several ${domain} instances and none is named \`${domain}\`; name one: ${instances.map((candidate) => `\`${domain}.${candidate}.${serviceName}\``).join(', ')}`,
        };
      }
      return { reversible: service.reversible, call: `${domain}.${name}.${serviceName}` };
    }
    const instanceName = parts[1] ?? '';
    if (!instances.includes(instanceName)) {
      return {
        problem: `\`${call}\`: there is no ${domain} instance named \`${instanceName}\` under \`integrations:\``,
      };
    }
    return { reversible: service.reversible, call };
  };
}

/** Compiles the automations of one platform of one instance. */
export function compilePlatformAutomations(options: {
  config: Pick<Config, 'scripts' | 'integrations'>;
  integrations: readonly DiscoveredIntegration[];
  platform: ManifestPlatform;
  platformConfig: Pick<PlatformConfig, 'classifications' | 'automations'>;
}): { rules: CompiledRule[]; problems: RuleProblem[] } {
  return compileAutomations({
    automations: options.platformConfig.automations,
    classifications: options.platformConfig.classifications,
    fields: platformFields(options.platform),
    trustedFields: platformTrustedFields(options.platform),
    catalog: actionCatalog(options.config, options.integrations, options.platform),
  });
}

/**
 * The config check the runtime adds to loading: every automation of every configured platform, against its
 * manifest. Problems point at the exact `when:` key or `then:` entry.
 */
export function automationChecks(
  integrations: readonly DiscoveredIntegration[],
): (config: Config) => ConfigCheckProblem[] {
  return (config) => {
    const problems: ConfigCheckProblem[] = [];
    const byDomain = new Map(integrations.map((integration) => [integration.manifest.domain, integration]));
    config.integrations.forEach((instance, instanceIndex) => {
      const integration = byDomain.get(instance.type);
      if (!integration) return;
      for (const [platformName, platformConfig] of Object.entries(instance.platforms)) {
        const platform = integration.manifest.platforms[platformName];
        if (!platform) continue;
        const { problems: found } = compilePlatformAutomations({
          config,
          integrations,
          platform,
          // The manifest's built-in classifications, extended by the instance's own.
          platformConfig: {
            ...platformConfig,
            classifications: { ...platform.classifications, ...platformConfig.classifications },
          },
        });
        for (const problem of found) {
          // Config loading checks script references itself, with or without manifests.
          if (problem.unknownScript) continue;
          problems.push({
            path: [
              'integrations',
              instanceIndex,
              'platforms',
              platformName,
              'automations',
              problem.index,
              ...problem.path,
            ],
            message: problem.message,
            ...(problem.hint ? { hint: problem.hint } : {}),
            ...(problem.at ? { at: problem.at } : {}),
          });
        }
      }
    });
    return problems;
  };
}

import { type ConfigPath, type ConfigProblem, formatPath } from './problems.ts';
import type { IntegrationConfigSchema } from './schema.ts';

/** Keys every platform of every integration has (schema.ts `platformBase`). */
const platformKeys = ['classifications', 'automations'];

/** Keys every integration instance has (schema.ts `integrationBase`), whatever its type. */
const instanceKeys = ['name', 'type', 'schedule', 'llm'];

/** At most this many places are named in one hint. */
const maxPlaces = 3;

interface InstanceData {
  index: number;
  type: string | undefined;
  name: string | undefined;
  platforms: string[];
}

function instancesOf(data: unknown): InstanceData[] {
  const list =
    data !== null && typeof data === 'object' ? (data as { integrations?: unknown }).integrations : undefined;
  if (!Array.isArray(list)) return [];
  return list.flatMap((item: unknown, index) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return [];
    const record = item as Record<string, unknown>;
    const platforms = record.platforms;
    return [
      {
        index,
        type: typeof record.type === 'string' ? record.type : undefined,
        name: typeof record.name === 'string' ? record.name : undefined,
        platforms:
          platforms !== null && typeof platforms === 'object' && !Array.isArray(platforms)
            ? Object.keys(platforms)
            : [],
      },
    ];
  });
}

/**
 * Where a key written at the top of config.yaml belongs when it is an integration's own key (`imap_server:`,
 * `smtp:`) or a platform's (`automations:`): the schema of `integrations:` is chosen per instance by its `type`, so
 * the generic hint cannot see into it. Names the instances of the types that have the key, as full key paths.
 */
function misplacedIntegrationKeyHint(
  key: string,
  data: unknown,
  types: readonly IntegrationConfigSchema[],
): string | undefined {
  const instances = instancesOf(data);
  const settingTypes = types
    .filter((type) => instanceKeys.includes(key) || (type.settings !== undefined && key in type.settings))
    .map((type) => type.type);
  if (settingTypes.length > 0) {
    const places = instances
      .filter((instance) => instance.type !== undefined && settingTypes.includes(instance.type))
      .map((instance) => formatPath(['integrations', instance.index, key]));
    const typesText = instanceKeys.includes(key)
      ? 'an integration instance'
      : `an integration instance of type ${settingTypes.map((type) => `\`${type}\``).join(' or ')}`;
    return places.length > 0
      ? `check its indentation: it is a key of ${typesText} (did you mean ${places
          .slice(0, maxPlaces)
          .map((place) => `\`${place}\``)
          .join(' or ')}?)`
      : `check its indentation: it is a key of a ${typesText} integration instance, indented under its \`- type: ${settingTypes[0]}\` item in \`integrations:\``;
  }
  const platformTypes = types.filter(
    (type) =>
      platformKeys.includes(key) ||
      Object.values(type.platforms).some((platform) => platform.settings !== undefined && key in platform.settings),
  );
  if (platformTypes.length === 0) return undefined;
  const places: ConfigPath[] = instances.flatMap((instance) => {
    const type = types.find((candidate) => candidate.type === instance.type);
    if (!type) return [];
    const names = instance.platforms.length > 0 ? instance.platforms : Object.keys(type.platforms);
    return names
      .filter((platform) => platformKeys.includes(key) || key in (type.platforms[platform]?.settings ?? {}))
      .map((platform) => ['integrations', instance.index, 'platforms', platform, key]);
  });
  return places.length > 0
    ? `check its indentation: it belongs under a platform of an integration instance (did you mean ${places
        .slice(0, maxPlaces)
        .map((place) => `\`${formatPath(place)}\``)
        .join(' or ')}?)`
    : 'check its indentation: it belongs under a platform of an integration instance (`integrations[N].platforms.NAME`)';
}

/**
 * Gives an unknown key at the top of the file that belongs to an integration instance a hint saying where, in
 * place of a guess at a typo of a top-level key (`imap_server:` is not `mcp_servers:`).
 */
export function placeMisplacedKeys(
  problems: readonly ConfigProblem[],
  data: unknown,
  types: readonly IntegrationConfigSchema[] | undefined,
): ConfigProblem[] {
  if (types === undefined) return [...problems];
  return problems.map((problem) => {
    const key = problem.path[0];
    if (problem.path.length !== 1 || typeof key !== 'string' || !problem.message.startsWith('unknown key')) {
      return problem;
    }
    // A home among the top-level sections (`port:` → `server.port`) is the likelier one: it is kept.
    if (problem.hint?.includes('belongs under `')) return problem;
    const hint = misplacedIntegrationKeyHint(key, data, types);
    return hint ? { ...problem, hint } : problem;
  });
}

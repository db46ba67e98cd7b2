import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { isLoopbackHost } from './loopback.ts';
import { placeMisplacedKeys } from './misplaced-key.ts';
import { type ConfigPath, type ConfigProblem, formatProblem, nearest, sortProblems } from './problems.ts';
import { buildConfigSchema, type Config, type ConfigSchemaOptions } from './schema.ts';
import { Secret } from './secret.ts';
import { isUnder, validPart } from './valid-part.ts';
import { configLimits, fileSizeProblem, readYaml, type YamlSource } from './yaml-source.ts';
import { issuesToProblems, recordSchemas } from './zod-problems.ts';

/** Absolute paths derived from the config file, `data_dir`, `directories` and `--data`. */
export interface ConfigPaths {
  configFile: string;
  secretsFile: string;
  dataDir: string;
  queue: string;
  notes: string;
  logs: string;
  control: string;
}

/** A validated, normalised config with its resolved paths. */
export interface LoadedConfig extends Config {
  paths: ConfigPaths;
}

/** The config is invalid. `problems` holds every error (and `warnings` the warnings) found in one pass. */
export class ConfigError extends AssistantError {
  readonly problems: readonly ConfigProblem[];
  readonly warnings: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[], warnings: readonly ConfigProblem[] = []) {
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super('CONFIG_INVALID', `invalid configuration (${count}):\n${problems.map(formatProblem).join('\n')}`, {
      hint: 'fix the lines above; `assistant config schema` prints a JSON Schema for editor completion',
    });
    this.problems = problems;
    this.warnings = warnings;
  }
}

/** A problem a caller's own check found in a valid config, located by its key path. */
export interface ConfigCheckProblem {
  path: ConfigPath;
  message: string;
  hint?: string;
  /** @default 'error' */
  severity?: 'error' | 'warning';
  /** Point at the key itself (an unknown name) rather than its value. @default 'value' */
  at?: 'key' | 'value';
}

export interface ParseConfigOptions extends ConfigSchemaOptions {
  /**
   * Checks that need more than the schema knows (the runtime checks automations against the manifests). Its
   * problems are reported with file, line and column like the schema's own.
   */
  check?: (config: Config) => ConfigCheckProblem[];
  /** config.yaml's text. */
  text: string;
  /** The name config.yaml is shown by in problems. @default 'config.yaml' */
  file?: string;
  /** secrets.yaml's text, or undefined when there is no such file. */
  secretsText?: string | undefined;
  /** The name secrets.yaml is shown by in problems. @default 'secrets.yaml' */
  secretsFile?: string;
}

export interface ParseConfigResult {
  /** The normalised config; undefined when there are errors. */
  config: Config | undefined;
  errors: ConfigProblem[];
  warnings: ConfigProblem[];
}

/** Validates config text (and secrets text) without touching the filesystem. Never throws for bad input. */
export function parseConfig(options: ParseConfigOptions): ParseConfigResult {
  const file = options.file ?? 'config.yaml';
  const secretsFile = options.secretsFile ?? 'secrets.yaml';
  const problems: ConfigProblem[] = [];

  const secrets = readSecrets(options.secretsText, secretsFile, problems);
  const source = readYaml({
    text: options.text,
    file,
    resolveSecret: (name) => {
      if (secrets === undefined) {
        return {
          message: `secret \`${name}\` is used but ${secretsFile} does not exist`,
          hint: `create ${secretsFile} next to ${file} with \`${name}: …\` and chmod 600 it`,
        };
      }
      const value = secrets.get(name);
      if (value === undefined) {
        const closest = nearest(name, secrets.keys());
        return {
          message: `secret \`${name}\` is not defined in ${secretsFile}`,
          hint: closest
            ? `did you mean \`${closest}\`? (defined in ${secretsFile}) Otherwise add \`${name}: …\` to it`
            : `add \`${name}: …\` to ${secretsFile}`,
        };
      }
      return { value };
    },
  });
  problems.push(...source.problems);
  if (source.data === undefined && source.problems.length > 0) {
    return { config: undefined, errors: sortProblems(problems), warnings: [] };
  }

  const data = source.data ?? {};
  const schema = buildConfigSchema(options);
  const result =
    data !== null && typeof data === 'object' && !Array.isArray(data)
      ? schema.safeParse(data, { error: recordSchemas })
      : undefined;
  if (result === undefined) {
    problems.push({
      severity: 'error',
      file,
      path: [],
      position: { line: 1, col: 1 },
      message: 'expected a mapping of settings (llms:, integrations:, …) at the top of the file',
    });
  } else if (!result.success) {
    problems.push(
      ...placeMisplacedKeys(
        issuesToProblems({ issues: result.error.issues, source, file, data }),
        data,
        options.integrationTypes,
      ),
    );
    // Every problem at once: the rules and the other parts the schema accepted are checked now, not on the next run.
    if (options.check) {
      const part = validPart({
        data,
        issues: result.error.issues,
        parse: (pruned) => {
          const parsed = schema.safeParse(pruned);
          return parsed.success
            ? { success: true, data: parsed.data }
            : { success: false, issues: parsed.error.issues };
        },
      });
      if (part) {
        for (const problem of options.check(part.config)) {
          const path = part.originalPath(problem.path);
          // A problem next to a part that was cut away may only be its consequence: the schema's problem says it.
          if (part.removed.some((cut) => isUnder(path, cut) || isUnder(cut, path))) continue;
          problems.push(checkProblem(source, file, { ...problem, path }));
        }
      }
    }
  }
  const warnings = result?.success ? collectWarnings(result.data, source, file, options) : [];
  if (result?.success) {
    problems.push(...crossCheck(result.data, source, file));
    for (const problem of options.check?.(result.data) ?? []) problems.push(checkProblem(source, file, problem));
  }
  const errors = sortProblems(problems.filter((problem) => problem.severity === 'error'));
  warnings.push(...problems.filter((problem) => problem.severity === 'warning'));
  return {
    config: errors.length === 0 && result?.success ? result.data : undefined,
    errors,
    warnings: sortProblems(warnings),
  };
}

/** A problem of the caller's own checks, located in the file. */
function checkProblem(source: YamlSource, file: string, problem: ConfigCheckProblem): ConfigProblem {
  const keyPosition = problem.at === 'key' ? source.keyAt(problem.path) : undefined;
  return located(source, file, problem.path, {
    ...(keyPosition ? { position: keyPosition } : {}),
    severity: problem.severity ?? 'error',
    message: problem.message,
    ...(problem.hint ? { hint: problem.hint } : {}),
  });
}

function readSecrets(
  text: string | undefined,
  file: string,
  problems: ConfigProblem[],
): Map<string, string> | undefined {
  if (text === undefined) return undefined;
  const source = readYaml({ text, file });
  problems.push(...source.problems);
  const secrets = new Map<string, string>();
  if (source.data === null || source.data === undefined) return secrets;
  if (typeof source.data !== 'object' || Array.isArray(source.data)) {
    problems.push({ severity: 'error', file, path: [], message: 'expected a mapping of `name: value` lines' });
    return secrets;
  }
  for (const [name, value] of Object.entries(source.data)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      secrets.set(name, String(value));
    } else {
      // Never echo the value: it is a secret even when it is malformed.
      const position = source.valueAt([name]);
      problems.push({
        severity: 'error',
        file,
        path: [name],
        ...(position ? { position } : {}),
        message: 'a secret must be a single value (a string), not a list or mapping',
      });
    }
  }
  return secrets;
}

function located(source: YamlSource, file: string, path: ConfigPath, problem: Omit<ConfigProblem, 'file' | 'path'>) {
  const position = problem.position ?? source.valueAt(path) ?? source.keyAt(path);
  return { ...problem, file, path, ...(position ? { position } : {}) } as ConfigProblem;
}

function collectWarnings(
  config: Config,
  source: YamlSource,
  file: string,
  options: ConfigSchemaOptions,
): ConfigProblem[] {
  const warnings: ConfigProblem[] = [];
  if (options.integrationTypes === undefined) {
    config.integrations.forEach((integration, index) => {
      const keys = Object.keys(integration.settings);
      if (keys.length === 0) return;
      warnings.push(
        located(source, file, ['integrations', index, 'type'], {
          severity: 'warning',
          message: `no manifest for integration type \`${integration.type}\` was loaded, so ${keys.map((key) => `\`${key}\``).join(', ')} went unchecked`,
        }),
      );
    });
  }
  for (const [name, profile] of Object.entries(config.llms)) {
    const host = new URL(profile.baseUrl).hostname;
    if (!isLoopbackHost(host)) {
      // A provider's default URL is not written: the warning points at `provider:` instead.
      const written = source.valueAt(['llms', name, 'base_url']) ? 'base_url' : 'provider';
      warnings.push(
        located(source, file, ['llms', name, written], {
          severity: 'warning',
          message: `LLM profile \`${name}\` sends prompts to ${host}: the mail, issues and notes in them leave this machine`,
          hint: 'use a local OpenAI-compatible server (Ollama at http://127.0.0.1:11434/v1) to keep data here',
        }),
      );
    }
  }
  if (config.worker.sandbox === 'none') {
    warnings.push(
      located(source, file, ['worker', 'sandbox'], {
        severity: 'warning',
        message:
          '`sandbox: none`: scripts run without a sandbox and can read and write whatever Assistant can (secrets.yaml, the data folder, your home folder)',
        hint: 'install bubblewrap (apt-get install bubblewrap) and remove `sandbox: none`',
      }),
    );
  }
  for (const yoloPath of source.yoloPaths) {
    warnings.push(
      located(source, file, yoloPath, {
        severity: 'warning',
        message: '`!yolo`: this action runs without human approval even if it is irreversible',
      }),
    );
  }
  const inline = (secret: Secret | undefined, path: ConfigPath) => {
    if (secret?.name === 'inline') {
      warnings.push(
        located(source, file, path, {
          severity: 'warning',
          message: 'a secret is written inline in the config file',
          hint: `move it to secrets.yaml and write \`${String(path.at(-1))}: !secret name\``,
        }),
      );
    }
  };
  for (const [name, profile] of Object.entries(config.llms))
    inline(profile.apiKey, ['llms', name, source.valueAt(['llms', name, 'token']) ? 'token' : 'api_key']);
  inline(config.server.token, ['server', 'token']);
  inline(config.embeddings?.apiKey, ['embeddings', 'api_key']);
  config.integrations.forEach((integration, index) => {
    for (const [key, value] of Object.entries(integration.settings)) {
      if (value instanceof Secret) inline(value, ['integrations', index, key]);
    }
  });
  if (!isLoopbackHost(config.server.host) && config.server.token) {
    warnings.push(
      located(source, file, ['server', 'host'], {
        severity: 'warning',
        message: `the server listens on ${config.server.host}, reachable from other machines; every request needs the token`,
      }),
    );
  }
  return warnings;
}

/** Checks that need the whole file: references between sections and names that must be unique. */
function crossCheck(config: Config, source: YamlSource, file: string): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const error = (path: ConfigPath, message: string, hint?: string) =>
    problems.push(located(source, file, path, { severity: 'error', message, ...(hint ? { hint } : {}) }));
  const profiles = Object.keys(config.llms);
  const seen = new Map<string, number>();
  config.integrations.forEach((integration, index) => {
    const first = seen.get(integration.name);
    if (first !== undefined) {
      error(
        ['integrations', index, 'name'],
        `integration name \`${integration.name}\` is already used by integrations[${first}]`,
        'names identify instances in task files and API routes; make each unique',
      );
    } else seen.set(integration.name, index);
    if (integration.llm !== undefined && !(integration.llm in config.llms)) {
      error(
        ['integrations', index, 'llm'],
        `LLM profile \`${integration.llm}\` is not defined under \`llms:\``,
        profiles.length > 0 ? `defined profiles: ${profiles.join(', ')}` : 'add it under `llms:`',
      );
    }
    for (const [platform, platformConfig] of Object.entries(integration.platforms)) {
      const classifies = Object.keys(platformConfig.classifications).length > 0;
      if (classifies && integration.llm === undefined && !('default' in config.llms)) {
        error(
          ['integrations', index, 'platforms', platform, 'classifications'],
          'classifications need an LLM, but this integration names no `llm:` and there is no `llms.default`',
          'add an `llms.default` profile or set `llm:` on the integration',
        );
      }
      platformConfig.automations.forEach((automation, automationIndex) => {
        automation.actions.forEach((action, actionIndex) => {
          if (action.kind === 'script' && !(action.script in config.scripts)) {
            const thenPath: ConfigPath = ['integrations', index, 'platforms', platform, 'automations', automationIndex];
            const actionPath = source.valueAt([...thenPath, 'then', actionIndex])
              ? [...thenPath, 'then', actionIndex]
              : [...thenPath, 'then'];
            error(actionPath, `script \`${action.script}\` is not defined under \`scripts:\``);
          }
        });
      });
    }
  });
  // A profile named by hand must exist. The implied `default` may be missing (a config with no LLM at all): then
  // nothing is consolidated, which the worker logs once, rather than refusing a config that worked before memory.
  if (
    config.memory.consolidate.length > 0 &&
    source.valueAt(['memory', 'llm']) &&
    !(config.memory.llm in config.llms)
  ) {
    error(
      ['memory', 'llm'],
      `LLM profile \`${config.memory.llm}\` is not defined under \`llms:\` (consolidation of ${config.memory.consolidate.join(', ')} needs it)`,
      profiles.length > 0
        ? `defined profiles: ${profiles.join(', ')}; or write \`consolidate: []\` to turn consolidation off`
        : 'add it under `llms:`, or write `consolidate: []` to turn consolidation off',
    );
  }
  if (!isLoopbackHost(config.server.host) && !config.server.token) {
    error(
      ['server', 'host'],
      `listening on ${config.server.host} exposes the API beyond this machine and needs \`server.token\``,
      'add `token: !secret server_token` under `server:`, or bind 127.0.0.1',
    );
  }
  return problems;
}

export interface LoadConfigOptions extends ConfigSchemaOptions, Pick<ParseConfigOptions, 'check'> {
  /** Path to config.yaml. Relative paths resolve against `cwd`. */
  configPath: string;
  /** Path to secrets.yaml. @default secrets.yaml beside the config file */
  secretsPath?: string;
  /** Overrides `data_dir` (the `--data` flag). Relative paths resolve against `cwd`. */
  dataDir?: string;
  /** @default process.cwd() */
  cwd?: string;
}

export interface LoadConfigResult {
  config: LoadedConfig;
  warnings: ConfigProblem[];
}

/**
 * Reads, validates and normalises config.yaml and secrets.yaml. Throws {@link ConfigError} listing every problem
 * found, each with file, line, column and key path.
 */
export async function loadConfig(options: LoadConfigOptions): Promise<LoadConfigResult> {
  const cwd = options.cwd ?? process.cwd();
  const configFile = path.resolve(cwd, options.configPath);
  const secretsFile = options.secretsPath
    ? path.resolve(cwd, options.secretsPath)
    : path.join(path.dirname(configFile), 'secrets.yaml');
  const shown = (file: string) => {
    const relative = path.relative(cwd, file);
    return relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
  };

  let text: string;
  try {
    text = await readConfigFile(configFile, shown(configFile));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new AssistantError('CONFIG_NOT_FOUND', `config file ${shown(configFile)} does not exist`, {
        hint: 'pass --config FILE, set ASSISTANT_CONFIG, or run from the directory that holds config.yaml',
        cause: error,
      });
    }
    throw error;
  }
  let secretsText: string | undefined;
  const warnings: ConfigProblem[] = [];
  try {
    const info = await stat(secretsFile);
    secretsText = await readConfigFile(secretsFile, shown(secretsFile));
    if (process.platform !== 'win32' && (info.mode & 0o077) !== 0) {
      warnings.push({
        severity: 'warning',
        file: shown(secretsFile),
        path: [],
        message: `is readable by other users (mode ${(info.mode & 0o777).toString(8)})`,
        hint: `run \`chmod 600 ${shown(secretsFile)}\``,
      });
    }
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EISDIR' || code === 'EACCES') {
      throw new AssistantError(
        'CONFIG_INVALID',
        `${shown(secretsFile)} cannot be read: ${code === 'EISDIR' ? 'it is a folder' : 'permission denied'}`,
        { hint: 'secrets.yaml is a file of `name: value` lines next to config.yaml, readable by you (chmod 600)' },
      );
    }
    if (code !== 'ENOENT') throw error;
  }

  const result = parseConfig({
    ...options,
    text,
    file: shown(configFile),
    secretsText,
    secretsFile: shown(secretsFile),
  });
  warnings.push(...result.warnings);
  if (!result.config) throw new ConfigError(result.errors, warnings);

  const config = result.config;
  const dataDir = options.dataDir
    ? path.resolve(cwd, options.dataDir)
    : path.resolve(path.dirname(configFile), config.dataDir);
  const under = (value: string | undefined, fallback: string) => path.resolve(dataDir, value ?? fallback);
  // A stdio MCP server's `cwd: ./tools` means the folder beside config.yaml, wherever Assistant was started from.
  const mcpServers = Object.fromEntries(
    Object.entries(config.mcpServers).map(([name, server]) => [
      name,
      server.transport === 'stdio' && server.cwd !== undefined
        ? { ...server, cwd: path.resolve(path.dirname(configFile), server.cwd) }
        : server,
    ]),
  );
  return {
    config: {
      ...config,
      mcpServers,
      paths: {
        configFile,
        secretsFile,
        dataDir,
        queue: under(config.directories.queue, 'queue'),
        notes: under(config.directories.notes, 'notes'),
        logs: under(config.directories.logs, 'logs'),
        control: under(config.directories.control, 'control'),
      },
    },
    warnings,
  };
}

/**
 * Reads a config file, refusing one larger than {@link configLimits}.maxBytes (with the same message as
 * yamlLimitProblem) without reading it all: reading stops one byte past the limit, so neither a 20 MB file nor one
 * that grows in between is read whole. `shownAs` names the file in the refusal.
 */
export async function readConfigFile(file: string, shownAs: string = file): Promise<string> {
  const handle = await open(file, 'r');
  try {
    // Sized by the file (a persona is read at every agent task: a zeroed 1 MB buffer each time was most of the read's
    // cost), one byte more to see that it ended, and grown while a file that grows in between keeps coming.
    const { size } = await handle.stat();
    let buffer = Buffer.allocUnsafe(Math.min(size, configLimits.maxBytes) + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length < buffer.length) continue;
      if (buffer.length > configLimits.maxBytes) break;
      const grown = Buffer.allocUnsafe(Math.min(buffer.length * 2, configLimits.maxBytes + 1));
      buffer.copy(grown, 0, 0, length);
      buffer = grown;
    }
    if (length > configLimits.maxBytes) {
      const { size } = await handle.stat();
      throw new ConfigError([
        { severity: 'error', file: shownAs, path: [], ...fileSizeProblem(Math.max(size, length)) },
      ]);
    }
    return buffer.subarray(0, length).toString('utf8');
  } finally {
    await handle.close();
  }
}

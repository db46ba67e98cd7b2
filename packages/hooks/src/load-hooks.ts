import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  type ConfigPath,
  type ConfigProblem,
  formatPath,
  issuesToProblems,
  readConfigFile,
  readYaml,
  sortProblems,
  type YamlSource,
} from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { compileHook, type HookCompileProblem, type HookEventRegistry } from './compile-hook.ts';
import type { HookCatalog } from './hook-catalog.ts';
import { hookNamePattern } from './hook-schema.ts';
import type { CompiledHook } from './hook-types.ts';

/** One thing wrong with a hook, where the owner finds it: file, line, and the key path inside the file. */
export interface HookProblem {
  /** `hooks/accountant.yaml` or `config.yaml`, relative to the folder of config.yaml. */
  file: string;
  /** Lines and columns count from 1; absent only for a problem with a whole file (it cannot be read). */
  line?: number;
  col?: number;
  /** The key path inside the file, as people read it: `then[1].notify`, `hooks[0].when.frm`, `(document)`. */
  key: string;
  path: ConfigPath;
  message: string;
  hint?: string;
  /** The hook it is about, when known. */
  hook?: string;
}

export interface LoadHooksOptions {
  /** The folder of config.yaml: hooks are its `hooks/*.yaml`. */
  configDir: string;
  /**
   * The loaded config: `hooks:` entries are compiled too. `paths.configFile` (a LoadedConfig's) is read again for the
   * lines of those entries. @default no `hooks:` entries
   */
  config?: { hooks?: readonly unknown[]; paths?: { configFile: string } };
  registry: HookEventRegistry;
  catalog: HookCatalog;
}

export interface LoadHooksResult {
  /** Every hook without a problem, by name. */
  hooks: CompiledHook[];
  /** Every problem, in reading order. A hook with a problem is not in `hooks`; the others are. */
  problems: HookProblem[];
  /**
   * Each `!yolo` of a hook file, as config.yaml's are warned about (those of config.yaml's `hooks:` are warned about
   * by config loading itself).
   */
  warnings: ConfigProblem[];
}

/** The folder beside config.yaml that holds one file per hook. */
export const hooksFolder = 'hooks';

/**
 * Reads and compiles every hook: `hooks/*.yaml` beside config.yaml (one hook per file, named by the file) and the
 * `hooks:` list of config.yaml (each with `name:`). Never throws for bad input: a malformed file is a problem with its
 * file, line and key, and the other hooks still load. A hook that names an unknown event type, field, action,
 * service, script, integration or LLM profile is a problem, never a hook that loads and never fires.
 */
export async function loadHooks(options: LoadHooksOptions): Promise<LoadHooksResult> {
  const problems: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const hooks: CompiledHook[] = [];
  const seen = new Map<string, string>();
  const add = (hook: CompiledHook, source: YamlSource, namePath: ConfigPath) => {
    const first = seen.get(hook.name);
    if (first !== undefined) {
      problems.push(
        located(source, hook.file, namePath, {
          message: `a hook named \`${hook.name}\` is already defined in ${first}`,
          hint: 'hook names identify firings and cache entries; make each unique',
        }),
      );
      return;
    }
    seen.set(hook.name, hook.file);
    hooks.push(hook);
  };

  const directory = path.join(options.configDir, hooksFolder);
  for (const entry of await listHookFiles(directory, problems)) {
    const file = `${hooksFolder}/${entry}`;
    const name = entry.slice(0, -'.yaml'.length);
    let text: string;
    try {
      text = await readConfigFile(path.join(directory, entry), file);
    } catch (error) {
      const message = error instanceof Error ? (error.message.split('\n').at(-1) ?? error.message) : String(error);
      problems.push({ severity: 'error', file, path: [], message: `cannot be read: ${message}` });
      continue;
    }
    const source = readYaml({
      text,
      file,
      resolveSecret: () => ({
        message: '`!secret` has no place in a hook',
        hint: 'a hook names events, conditions and actions; secrets belong to integration settings',
      }),
    });
    if (source.problems.length > 0) {
      problems.push(...source.problems);
      continue;
    }
    if (!hookNamePattern.test(name)) {
      problems.push({
        severity: 'error',
        file,
        path: [],
        position: { line: 1, col: 1 },
        message: `\`${name}\` is not a valid hook name (the file's name without .yaml): use a-z, 0-9, - and _`,
      });
      continue;
    }
    const data = source.data;
    if (data === null || data === undefined || typeof data !== 'object' || Array.isArray(data)) {
      problems.push({
        severity: 'error',
        file,
        path: [],
        position: { line: 1, col: 1 },
        message: 'expected one hook: a mapping with `on:` and `then:`',
      });
      continue;
    }
    const written = (data as { name?: unknown }).name;
    if (written !== undefined && written !== name) {
      problems.push(
        located(source, file, ['name'], {
          message: `\`name: ${String(written)}\` differs from the file's name \`${name}\``,
          hint: `a hook in hooks/ is named by its file: remove \`name:\` or rename the file to ${String(written)}.yaml`,
        }),
      );
      continue;
    }
    const hook = compileLocated({ options, source, file, name, data, prefix: [], problems });
    if (hook) add(hook, source, []);
    for (const yoloPath of source.yoloPaths) {
      const position = source.valueAt(yoloPath);
      warnings.push({
        severity: 'warning',
        file,
        path: yoloPath,
        ...(position ? { position } : {}),
        message: '`!yolo`: this action runs without human approval even if it is irreversible',
      });
    }
  }

  const entries = options.config?.hooks ?? [];
  if (entries.length > 0) {
    const configFile = options.config?.paths?.configFile ?? path.join(options.configDir, 'config.yaml');
    const file = path.relative(options.configDir, configFile) || 'config.yaml';
    const source = await configSource(configFile, file);
    // The entries as read here, when the file still says what was loaded: zod's hints find their schemas by object.
    const reread = (source.data as { hooks?: unknown } | undefined)?.hooks;
    const sameFile = Array.isArray(reread) && reread.length === entries.length;
    entries.forEach((loaded, index) => {
      const data = sameFile ? reread[index] : loaded;
      const prefix = ['hooks', index];
      const name = (data as { name?: unknown } | null)?.name;
      if (typeof name !== 'string' || !hookNamePattern.test(name)) {
        problems.push(
          located(source, file, typeof name === 'string' ? [...prefix, 'name'] : prefix, {
            message:
              typeof name === 'string'
                ? `\`${name}\` is not a valid hook name: use a-z, 0-9, - and _`
                : 'a hook in config.yaml needs a `name:`',
            ...(typeof name === 'string' ? {} : { at: 'key' as const }),
          }),
        );
        return;
      }
      const hook = compileLocated({ options, source, file, name, data, prefix, problems });
      if (hook) add(hook, source, [...prefix, 'name']);
    });
  }
  // A problem of config.yaml's `hooks:` names its hook by the entry's `name:`.
  const nameInConfig = (problem: ConfigProblem) => {
    const [section, index] = problem.path;
    const name =
      section === 'hooks' && typeof index === 'number' ? (entries[index] as { name?: unknown })?.name : undefined;
    return typeof name === 'string' ? name : undefined;
  };
  return {
    hooks: hooks.sort((left, right) => left.name.localeCompare(right.name)),
    problems: sortProblems(problems).map((problem) => hookProblem(problem, nameInConfig(problem))),
    warnings,
  };
}

/** The `.yaml` files of hooks/, sorted; a missing folder is none, a `.yml` file is a problem (it would be ignored). */
async function listHookFiles(directory: string, problems: ConfigProblem[]): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new AssistantError('CONFIG_INVALID', `the hooks folder ${directory} cannot be read`, { cause: error });
  }
  for (const entry of entries) {
    if (entry.endsWith('.yml')) {
      problems.push({
        severity: 'error',
        file: `${hooksFolder}/${entry}`,
        path: [],
        message: 'hook files end in `.yaml`; this one would be ignored',
        hint: `rename it to ${entry.slice(0, -'.yml'.length)}.yaml`,
      });
    }
  }
  // Dot files are editors' swap and backup files, not hooks.
  return entries.filter((entry) => entry.endsWith('.yaml') && !entry.startsWith('.')).sort();
}

/** config.yaml read again for the positions of `hooks:` entries; its secrets are not needed here. */
async function configSource(configFile: string, file: string): Promise<YamlSource> {
  let text = '';
  try {
    text = await readConfigFile(configFile, file);
  } catch {
    // The config was loaded a moment ago; a file gone since only costs the line numbers.
  }
  return readYaml({ text, file, resolveSecret: () => ({ value: '' }) });
}

function compileLocated(context: {
  options: LoadHooksOptions;
  source: YamlSource;
  file: string;
  name: string;
  data: unknown;
  prefix: (string | number)[];
  problems: ConfigProblem[];
}): CompiledHook | undefined {
  const { source, file, prefix } = context;
  const line = (prefix.length === 0 ? 1 : source.valueAt(prefix)?.line) ?? 1;
  const result = compileHook({
    source: context.data,
    name: context.name,
    file,
    line,
    registry: context.options.registry,
    catalog: context.options.catalog,
  });
  if (result.issues.length > 0) {
    context.problems.push(
      ...issuesToProblems({
        issues: result.issues.map((issue) => ({ ...issue, path: [...prefix, ...issue.path] })),
        source,
        file,
        data: source.data,
      }),
    );
  }
  for (const found of result.problems) context.problems.push(located(source, file, [...prefix, ...found.path], found));
  return result.hook;
}

/** A compile problem located in its file: at the key for `at: 'key'`, else at the value, else the nearest key above. */
function located(
  source: YamlSource,
  file: string,
  path: ConfigPath,
  problem: Pick<HookCompileProblem, 'message' | 'hint' | 'at'>,
): ConfigProblem {
  let position: ConfigProblem['position'];
  for (let length = path.length; length >= 0 && position === undefined; length--) {
    const prefix = path.slice(0, length);
    position =
      problem.at === 'key' || length < path.length
        ? (source.keyAt(prefix) ?? source.valueAt(prefix))
        : (source.valueAt(prefix) ?? source.keyAt(prefix));
  }
  return {
    severity: 'error',
    file,
    path,
    message: problem.message,
    ...(position ? { position } : {}),
    ...(problem.hint ? { hint: problem.hint } : {}),
  };
}

function hookProblem(problem: ConfigProblem, named: string | undefined): HookProblem {
  const hook = problem.file.startsWith(`${hooksFolder}/`)
    ? problem.file.slice(hooksFolder.length + 1).replace(/\.ya?ml$/, '')
    : named;
  return {
    file: problem.file,
    ...(problem.position ? { line: problem.position.line, col: problem.position.col } : {}),
    key: formatPath(problem.path),
    path: problem.path,
    message: problem.message,
    ...(problem.hint ? { hint: problem.hint } : {}),
    ...(hook ? { hook } : {}),
  };
}

/** Hook problems as the config's own (`assistant config check` and `ConfigError` print these). */
export function hookConfigProblems(problems: readonly HookProblem[]): ConfigProblem[] {
  return problems.map((problem) => ({
    severity: 'error',
    file: problem.file,
    path: problem.path,
    message: problem.message,
    ...(problem.line === undefined ? {} : { position: { line: problem.line, col: problem.col ?? 1 } }),
    ...(problem.hint ? { hint: problem.hint } : {}),
  }));
}

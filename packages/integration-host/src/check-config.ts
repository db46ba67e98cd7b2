import path from 'node:path';
import {
  loadPersonas,
  loadWorkflows,
  type PersonaProblem,
  personaConfigProblems,
  personaNamesOf,
  personaSourcesOf,
  workflowConfigProblems,
} from '@assistant/agents';
import { ConfigError, type ConfigProblem } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import { type LoadedRuntime, type LoadRuntimeOptions, loadRuntime } from './load-runtime.ts';

/** What `assistant config check` and the dashboard's Config page find in a config file. */
export interface ConfigCheck {
  /** The loaded runtime when the config is valid and every handler module loads. */
  runtime?: LoadedRuntime;
  /** The error that made it invalid, as thrown (`ConfigError`, `CONFIG_NOT_FOUND`, a handler that cannot load). */
  error?: unknown;
  /** Every error located in its file (for a `ConfigError`, each of its problems; otherwise one for the file). */
  problems: ConfigProblem[];
  warnings: ConfigProblem[];
  /**
   * The problems of the persona files (`personas/*.md` beside config.yaml and in the notes) and of the workflow
   * manifests (`agents/*.yaml`), when the config loaded. Apart from `problems`: a broken persona or workflow does not
   * stop `assistant start` (a loop or run naming it fails with PERSONA_INVALID / WORKFLOW_INVALID), but `assistant
   * config check` fails on it all the same.
   */
  personaProblems: ConfigProblem[];
}

/**
 * The checks of `assistant config check`: the config validated with the schemas of every integration found, then
 * every handler, listener and webhook module imported and its export checked (as `assistant start` does before it
 * starts anything; the worker and the server import them only on first use). Every manifest's listeners and
 * webhooks, not only enabled instances': the answer does not change when an instance is enabled. Never throws for a
 * bad config: the problems are in the result.
 */
export async function checkConfig(options: LoadRuntimeOptions): Promise<ConfigCheck> {
  let runtime: LoadedRuntime;
  try {
    runtime = await loadRuntime(options);
  } catch (error) {
    return {
      error,
      ...problemsOf(error, options),
      warnings: error instanceof ConfigError ? [...error.warnings] : [],
      personaProblems: [],
    };
  }
  try {
    await runtime.registry.loadHandlers({ inbound: 'all' });
  } catch (error) {
    return { error, ...problemsOf(error, options), warnings: runtime.warnings, personaProblems: [] };
  }
  // Personas are read when a loop uses one, so a broken persona does not stop `assistant start` (only the loops that
  // name it fail, with PERSONA_INVALID); the check reports them all the same, each with file, line and key.
  const personaProblems = await checkPersonas({ config: runtime.config, cwd: options.cwd ?? process.cwd() });
  // Workflows likewise: a run of one with problems is refused (WORKFLOW_INVALID); the check lists them all.
  const workflowProblems = await checkWorkflows(runtime, options);
  return {
    runtime,
    problems: [],
    warnings: runtime.warnings,
    personaProblems: [...personaProblems, ...workflowProblems],
  };
}

/** The problems of `personas/*.md` beside config.yaml and in the notes, with files shown as config.yaml's are. */
export async function checkPersonas(options: {
  config: LoadedRuntime['config'];
  cwd: string;
}): Promise<ConfigProblem[]> {
  const { config, cwd } = options;
  const configDir = path.dirname(config.paths.configFile);
  const { problems } = await loadPersonas(personaSourcesOf(config));
  const shown = (problem: PersonaProblem): PersonaProblem => {
    // `notes/personas/x.md` lives under the notes folder, wherever `directories.notes` puts it.
    const absolute = problem.file.startsWith('notes/')
      ? path.join(config.paths.notes, problem.file.slice('notes/'.length))
      : path.join(configDir, problem.file);
    const relative = path.relative(cwd, absolute);
    return { ...problem, file: relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative };
  };
  return personaConfigProblems(problems.map(shown));
}

/** The problems of `agents/*.yaml` beside config.yaml (each persona they name checked), shown as config.yaml's are. */
async function checkWorkflows(runtime: LoadedRuntime, options: LoadRuntimeOptions): Promise<ConfigProblem[]> {
  const { config } = runtime;
  const configDir = path.dirname(config.paths.configFile);
  const personas = personaNamesOf(await loadPersonas(personaSourcesOf(config)));
  const { problems } = await loadWorkflows({ configDir, personas });
  const cwd = options.cwd ?? process.cwd();
  return workflowConfigProblems(problems).map((problem) => {
    const absolute = path.join(configDir, problem.file);
    const relative = path.relative(cwd, absolute);
    return { ...problem, file: relative.startsWith('..') || path.isAbsolute(relative) ? absolute : relative };
  });
}

function problemsOf(error: unknown, options: LoadRuntimeOptions): { problems: ConfigProblem[] } {
  if (error instanceof ConfigError) return { problems: [...error.problems] };
  const cwd = options.cwd ?? process.cwd();
  const file = path.resolve(cwd, options.configPath);
  const relative = path.relative(cwd, file);
  const shown = relative.startsWith('..') || path.isAbsolute(relative) ? file : relative;
  const message = error instanceof Error ? error.message : String(error);
  const hint = isAssistantError(error) ? error.hint : undefined;
  return {
    problems: [{ severity: 'error', file: shown, path: [], message, ...(hint === undefined ? {} : { hint }) }],
  };
}

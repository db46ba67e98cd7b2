import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  type ConfigPath,
  type ConfigProblem,
  formatPath,
  nearest,
  readConfigFile,
  readYaml,
  sortProblems,
  type YamlSource,
} from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import {
  type MeshWorkflow,
  type PipelineStep,
  type PipelineWorkflow,
  type StarWorkflow,
  type Topology,
  topologies,
  type Workflow,
  type WorkflowProblem,
} from './workflow-types.ts';

/** The folder beside config.yaml that holds one file per workflow. */
export const workflowsFolder = 'agents';

/** A workflow's name: its file's name without `.yaml`. */
export const workflowNamePattern = /^[a-z0-9][a-z0-9_-]*$/;

/** The most rounds a mesh may run: each round is one model loop per agent. */
export const maxMeshRounds = 20;
const defaultMeshRounds = 3;

const commonKeys = ['topology', 'description'];
const keysOf: Record<Topology, string[]> = {
  pipeline: ['steps'],
  star: ['supervisor', 'workers', 'task'],
  mesh: ['agents', 'task', 'max_rounds', 'stop_when'],
};

export interface LoadWorkflowsOptions {
  /** The folder of config.yaml: workflows are its `agents/*.yaml`. */
  configDir: string;
  /**
   * The names of the personas there are: a workflow naming another is a problem. Absent: names are not checked here
   * (the runner asks for each persona before it spawns anything).
   */
  personas?: ReadonlySet<string> | undefined;
}

export interface LoadWorkflowsResult {
  /** Every workflow without a problem (and whose nested workflows have none), by name. */
  workflows: Map<string, Workflow>;
  /** Every problem, in reading order. */
  problems: WorkflowProblem[];
}

/**
 * Reads every `agents/*.yaml` beside config.yaml. Never throws for bad input: a malformed file, an unknown topology,
 * persona, key or placeholder, and a cycle through `workflow:` steps are problems with their file, line and key, and
 * the other workflows still load. A missing folder is no workflows.
 */
export async function loadWorkflows(options: LoadWorkflowsOptions): Promise<LoadWorkflowsResult> {
  const problems: WorkflowProblem[] = [];
  const read = new Map<string, { workflow: Workflow; source: YamlSource }>();
  // Every file's `workflow:` steps, problems or not: a cycle is named even through a workflow with another problem.
  const graph: Graph = new Map();
  const directory = path.join(options.configDir, workflowsFolder);
  for (const entry of await listWorkflowFiles(directory, problems)) {
    const file = `${workflowsFolder}/${entry}`;
    const name = entry.slice(0, -'.yaml'.length);
    const problem = (source: YamlSource | undefined, at: ConfigPath, message: string, extra: Located = {}) =>
      problems.push(located({ source, file, workflow: name, path: at, message, ...extra }));
    let text: string;
    try {
      text = await readConfigFile(path.join(directory, entry), file);
    } catch (error) {
      const message = error instanceof Error ? (error.message.split('\n').at(-1) ?? error.message) : String(error);
      problem(undefined, [], `cannot be read: ${message}`);
      continue;
    }
    const source = readYaml({
      text,
      file,
      resolveSecret: () => ({
        message: '`!secret` has no place in a workflow',
        hint: 'a workflow names personas and tasks; secrets belong to integration settings',
      }),
    });
    if (source.problems.length > 0) {
      problems.push(...source.problems.map((found) => fromConfigProblem(found, name)));
      continue;
    }
    if (!workflowNamePattern.test(name)) {
      problem(source, [], `\`${name}\` is not a valid workflow name (the file's name without .yaml)`, {
        hint: 'use a-z, 0-9, - and _, starting with a letter or digit',
        line: 1,
      });
      continue;
    }
    const before = problems.length;
    const workflow = checkWorkflow({
      name,
      file,
      data: source.data,
      personas: options.personas,
      problem: (...args) => problem(source, ...args),
    });
    if (workflow && problems.length === before) read.set(name, { workflow, source });
    graph.set(name, { references: referencesIn(source.data), source, file });
  }
  dropBadReferences({ read, graph, problems });
  const workflows = new Map(
    [...read].sort(([left], [right]) => left.localeCompare(right)).map(([name, { workflow }]) => [name, workflow]),
  );
  return { workflows, problems: sortWorkflowProblems(problems) };
}

type Located = { hint?: string; atKey?: boolean; line?: number };
type Report = (at: ConfigPath, message: string, extra?: Located) => void;

function checkWorkflow(context: {
  name: string;
  file: string;
  data: unknown;
  personas: ReadonlySet<string> | undefined;
  problem: Report;
}): Workflow | undefined {
  const { name, file, data, problem } = context;
  if (!isMapping(data)) {
    problem([], 'expected one workflow: a mapping with `topology:` (pipeline, star or mesh) and its keys', { line: 1 });
    return undefined;
  }
  const topology = data.topology;
  if (topology === undefined) {
    problem([], 'a workflow needs `topology:`: pipeline, star or mesh', { line: 1 });
    return undefined;
  }
  if (typeof topology !== 'string' || !(topologies as readonly string[]).includes(topology)) {
    const close = typeof topology === 'string' ? nearest(topology, topologies) : undefined;
    problem(['topology'], `unknown topology \`${String(topology)}\`: expected pipeline, star or mesh`, {
      ...(close ? { hint: `did you mean \`${close}\`?` } : {}),
    });
    return undefined;
  }
  const kind = topology as Topology;
  const allowed = [...commonKeys, ...keysOf[kind]];
  for (const key of Object.keys(data)) {
    if (allowed.includes(key)) continue;
    const owner = topologies.find((other) => keysOf[other].includes(key));
    const close = nearest(key, allowed);
    const hint = owner
      ? `\`${key}\` belongs to topology ${owner}; a ${kind} takes ${keysOf[kind].map((known) => `\`${known}\``).join(', ')}`
      : close
        ? `did you mean \`${close}\`?`
        : `a ${kind} takes ${allowed.map((known) => `\`${known}\``).join(', ')}`;
    problem([key], `unknown key \`${key}\``, { hint, atKey: true });
  }
  const description = optionalString(data, 'description', problem);
  const base = { name, file, ...(description === undefined ? {} : { description }) };
  const persona = (value: unknown, at: ConfigPath): string | undefined =>
    checkPersona(value, at, context.personas, problem);

  if (kind === 'pipeline') {
    const steps = data.steps;
    if (!Array.isArray(steps) || steps.length === 0) {
      problem(
        steps === undefined ? [] : ['steps'],
        'a pipeline needs `steps:`, a list of `{persona, task}` or `{workflow}`',
        {
          ...(steps === undefined ? { line: 1 } : {}),
        },
      );
      return undefined;
    }
    const checked: PipelineStep[] = [];
    steps.forEach((step, index) => {
      const at = ['steps', index];
      if (!isMapping(step)) {
        problem(at, 'a step is a mapping: `{persona: NAME, task: TEXT}` or `{workflow: NAME}`');
        return;
      }
      for (const key of Object.keys(step)) {
        if (['persona', 'task', 'workflow'].includes(key)) continue;
        const close = nearest(key, ['persona', 'task', 'workflow']);
        problem([...at, key], `unknown key \`${key}\` in a step`, {
          hint: close ? `did you mean \`${close}\`?` : 'a step takes `persona` and `task`, or `workflow`',
          atKey: true,
        });
      }
      if (step.workflow !== undefined) {
        if (step.persona !== undefined || step.task !== undefined) {
          problem(at, 'a step is either `{persona, task}` or `{workflow}`, not both', {
            hint: 'a nested workflow is given the previous answer as its input',
          });
          return;
        }
        if (typeof step.workflow !== 'string' || !workflowNamePattern.test(step.workflow)) {
          problem(
            [...at, 'workflow'],
            `\`workflow:\` names a workflow (a file agents/NAME.yaml), got ${describe(step.workflow)}`,
          );
          return;
        }
        checked.push({ kind: 'workflow', workflow: step.workflow });
        return;
      }
      if (step.persona === undefined) {
        problem(at, 'a step needs `persona:` (or `workflow:` for a nested workflow)');
        return;
      }
      const name = persona(step.persona, [...at, 'persona']);
      const task =
        template(step, 'task', at, ['input', 'previous'], problem) ?? (index === 0 ? '{{input}}' : '{{previous}}');
      if (name !== undefined) checked.push({ kind: 'agent', persona: name, task });
    });
    return { ...base, topology: 'pipeline', steps: checked } satisfies PipelineWorkflow;
  }

  const task = template(data, 'task', [], ['input'], problem) ?? '{{input}}';
  if (kind === 'star') {
    const supervisor = data.supervisor === undefined ? undefined : persona(data.supervisor, ['supervisor']);
    if (data.supervisor === undefined)
      problem([], 'a star needs `supervisor:`, the persona that dispatches to the workers', { line: 1 });
    const workers = personaList(data, 'workers', persona, problem);
    if (supervisor === undefined || workers === undefined) return undefined;
    return { ...base, topology: 'star', supervisor, workers, task } satisfies StarWorkflow;
  }

  const agents = personaList(data, 'agents', persona, problem);
  let maxRounds = defaultMeshRounds;
  if (data.max_rounds !== undefined) {
    const rounds = data.max_rounds;
    if (typeof rounds !== 'number' || !Number.isInteger(rounds) || rounds < 1 || rounds > maxMeshRounds) {
      problem(['max_rounds'], `\`max_rounds\` is a whole number from 1 to ${maxMeshRounds}, got ${describe(rounds)}`);
    } else maxRounds = rounds;
  }
  const stopWhen = optionalString(data, 'stop_when', problem);
  if (stopWhen === '')
    problem(['stop_when'], '`stop_when` is the text that ends the mesh; an empty one would end it at once');
  if (agents === undefined) return undefined;
  return {
    ...base,
    topology: 'mesh',
    agents,
    task,
    maxRounds,
    ...(stopWhen ? { stopWhen } : {}),
  } satisfies MeshWorkflow;
}

function checkPersona(
  value: unknown,
  at: ConfigPath,
  personas: ReadonlySet<string> | undefined,
  problem: Report,
): string | undefined {
  if (typeof value !== 'string' || value === '') {
    problem(at, `expected a persona's name, got ${describe(value)}`);
    return undefined;
  }
  if (personas !== undefined && !personas.has(value)) {
    const close = nearest(value, personas);
    const known = [...personas].sort();
    problem(at, `unknown persona \`${value}\``, {
      hint: close
        ? `did you mean \`${close}\`?`
        : known.length > 0
          ? `the personas are ${known.map((name) => `\`${name}\``).join(', ')} (personas/NAME.md)`
          : 'there are no personas: write personas/NAME.md beside config.yaml',
    });
    return undefined;
  }
  return value;
}

function personaList(
  data: Record<string, unknown>,
  key: string,
  persona: (value: unknown, at: ConfigPath) => string | undefined,
  problem: Report,
): string[] | undefined {
  const value = data[key];
  if (!Array.isArray(value) || value.length === 0) {
    problem(
      value === undefined ? [] : [key],
      `\`${key}:\` is a list of one or more persona names, got ${describe(value)}`,
      {
        ...(value === undefined ? { line: 1 } : {}),
      },
    );
    return undefined;
  }
  const names = value.map((item, index) => persona(item, [key, index]));
  // A persona named twice would share its spawn keys (`round-2-critic`) with itself: one name, one place.
  names.forEach((name, index) => {
    if (name !== undefined && names.indexOf(name) !== index) {
      problem([key, index], `persona \`${name}\` is listed twice in \`${key}\``, { hint: 'name each persona once' });
      names[index] = undefined;
    }
  });
  return names.every((name) => name !== undefined) ? (names as string[]) : undefined;
}

/** A template key: a string whose `{{placeholders}}` are all ones this place fills. */
function template(
  data: Record<string, unknown>,
  key: string,
  at: ConfigPath,
  placeholders: readonly string[],
  problem: Report,
): string | undefined {
  const value = data[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.trim() === '') {
    problem([...at, key], `\`${key}\` is the text the agent is given, got ${describe(value)}`);
    return undefined;
  }
  for (const match of value.matchAll(/\{\{\s*([^}]*?)\s*\}\}/g)) {
    const name = match[1] ?? '';
    if (!placeholders.includes(name)) {
      problem([...at, key], `unknown placeholder \`{{${name}}}\``, {
        hint: `here the placeholders are ${placeholders.map((known) => `\`{{${known}}}\``).join(' and ')}`,
      });
    }
  }
  return value;
}

function optionalString(data: Record<string, unknown>, key: string, problem: Report): string | undefined {
  const value = data[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'string') {
    problem([key], `\`${key}\` is text, got ${describe(value)}`);
    return undefined;
  }
  return value;
}

type Graph = Map<string, { references: { index: number; name: string }[]; source: YamlSource; file: string }>;

/** The `workflow:` steps of a manifest as written, with their places in `steps`. */
function referencesIn(data: unknown): { index: number; name: string }[] {
  if (!isMapping(data) || data.topology !== 'pipeline' || !Array.isArray(data.steps)) return [];
  return data.steps.flatMap((step, index) =>
    isMapping(step) && typeof step.workflow === 'string' ? [{ index, name: step.workflow }] : [],
  );
}

/**
 * Removes workflows whose `workflow:` steps name one that is missing, has problems, or leads back to itself (a cycle
 * would nest runs forever), each with a problem at the step. Repeated until nothing changes: dropping one can strand
 * another that names it.
 */
function dropBadReferences(context: {
  read: Map<string, { workflow: Workflow; source: YamlSource }>;
  graph: Graph;
  problems: WorkflowProblem[];
}): void {
  const { read, graph, problems } = context;
  // Cycles first, so each is named whole rather than as a reference to a workflow that does not load.
  const inCycle = new Map<string, string[]>();
  for (const start of graph.keys()) {
    const walk = (name: string, trail: string[]): void => {
      for (const reference of graph.get(name)?.references ?? []) {
        if (reference.name === start) {
          if (!inCycle.has(start)) inCycle.set(start, [...trail, start]);
          return;
        }
        if (!trail.includes(reference.name)) walk(reference.name, [...trail, reference.name]);
      }
    };
    walk(start, [start]);
  }
  for (const [name, cycle] of inCycle) {
    const entry = graph.get(name);
    if (!entry) continue;
    const step = entry.references.find((reference) => reference.name === cycle[1]);
    problems.push(
      located({
        source: entry.source,
        file: entry.file,
        workflow: name,
        path: ['steps', step?.index ?? 0, 'workflow'],
        message: `a cycle of nested workflows: ${cycle.join(' → ')}`,
        hint: 'a workflow cannot contain itself, directly or through others',
      }),
    );
    read.delete(name);
  }
  for (let changed = true; changed; ) {
    changed = false;
    for (const [name, entry] of read) {
      const references = graph.get(name)?.references ?? [];
      const missing = references.find((reference) => !read.has(reference.name));
      if (!missing) continue;
      problems.push(
        located({
          source: entry.source,
          file: entry.workflow.file,
          workflow: name,
          path: ['steps', missing.index, 'workflow'],
          message: inCycle.has(missing.name)
            ? `names workflow \`${missing.name}\`, which is in a cycle of nested workflows`
            : graph.has(missing.name)
              ? `names workflow \`${missing.name}\`, which does not load (see its problems)`
              : `names workflow \`${missing.name}\`, which does not exist`,
          hint: `write or fix ${workflowsFolder}/${missing.name}.yaml`,
        }),
      );
      read.delete(name);
      changed = true;
    }
  }
}

/** The `.yaml` files of agents/, sorted; a missing folder is none, a `.yml` file is a problem (it would be ignored). */
async function listWorkflowFiles(directory: string, problems: WorkflowProblem[]): Promise<string[]> {
  let entries: string[];
  try {
    entries = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new AssistantError('CONFIG_INVALID', `the workflows folder ${directory} cannot be read`, { cause: error });
  }
  for (const entry of entries) {
    if (!entry.endsWith('.yml')) continue;
    const name = entry.slice(0, -'.yml'.length);
    problems.push({
      file: `${workflowsFolder}/${entry}`,
      key: '(document)',
      path: [],
      message: 'workflow files end in `.yaml`; this one would be ignored',
      hint: `rename it to ${name}.yaml`,
      workflow: name,
    });
  }
  // Dot files are editors' swap and backup files, not workflows.
  return entries.filter((entry) => entry.endsWith('.yaml') && !entry.startsWith('.')).sort();
}

/** A problem located in its file: at the key when asked (or the value is missing), else at the value. */
function located(problem: {
  source: YamlSource | undefined;
  file: string;
  workflow: string;
  path: ConfigPath;
  message: string;
  hint?: string;
  atKey?: boolean;
  line?: number;
}): WorkflowProblem {
  let position: { line: number; col: number } | undefined;
  for (let length = problem.path.length; length >= 0 && position === undefined && problem.source; length--) {
    const prefix = problem.path.slice(0, length);
    position =
      problem.atKey || length < problem.path.length
        ? (problem.source.keyAt(prefix) ?? problem.source.valueAt(prefix))
        : (problem.source.valueAt(prefix) ?? problem.source.keyAt(prefix));
  }
  if (position === undefined && problem.line !== undefined) position = { line: problem.line, col: 1 };
  return {
    file: problem.file,
    ...(position ? { line: position.line, col: position.col } : {}),
    key: formatPath(problem.path),
    path: problem.path,
    message: problem.message,
    ...(problem.hint ? { hint: problem.hint } : {}),
    workflow: problem.workflow,
  };
}

function fromConfigProblem(problem: ConfigProblem, workflow: string): WorkflowProblem {
  return {
    file: problem.file,
    ...(problem.position ? { line: problem.position.line, col: problem.position.col } : {}),
    key: formatPath(problem.path),
    path: problem.path,
    message: problem.message,
    ...(problem.hint ? { hint: problem.hint } : {}),
    workflow,
  };
}

function sortWorkflowProblems(problems: readonly WorkflowProblem[]): WorkflowProblem[] {
  const byProblem = new Map(problems.map((problem) => [toConfigProblem(problem), problem]));
  return sortProblems([...byProblem.keys()]).map((problem) => byProblem.get(problem) as WorkflowProblem);
}

/** Workflow problems as the config's own (`assistant config check` and `ConfigError` print these). */
export function workflowConfigProblems(problems: readonly WorkflowProblem[]): ConfigProblem[] {
  return problems.map(toConfigProblem);
}

function toConfigProblem(problem: WorkflowProblem): ConfigProblem {
  return {
    severity: 'error',
    file: problem.file,
    path: problem.path,
    message: problem.message,
    ...(problem.line === undefined ? {} : { position: { line: problem.line, col: problem.col ?? 1 } }),
    ...(problem.hint ? { hint: problem.hint } : {}),
  };
}

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (value === null) return '`null`';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `\`${String(value)}\` (${typeof value})`;
}

/** Every persona a workflow runs, its nested workflows' included, each once: the runner checks them before it starts. */
export function workflowPersonas(workflow: Workflow, workflows: ReadonlyMap<string, Workflow>): string[] {
  const found = new Set<string>();
  const visit = (each: Workflow, seen: ReadonlySet<string>) => {
    if (each.topology === 'star') for (const name of [each.supervisor, ...each.workers]) found.add(name);
    if (each.topology === 'mesh') for (const name of each.agents) found.add(name);
    if (each.topology !== 'pipeline') return;
    for (const step of each.steps) {
      if (step.kind === 'agent') found.add(step.persona);
      else {
        const nested = workflows.get(step.workflow);
        // A cycle never loads; the guard keeps a hand-made map from looping here.
        if (nested && !seen.has(nested.name)) visit(nested, new Set([...seen, nested.name]));
      }
    }
  };
  visit(workflow, new Set([workflow.name]));
  return [...found];
}

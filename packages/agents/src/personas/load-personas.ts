import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { matchesToolPattern } from '@assistant/actions';
import {
  type ConfigPath,
  type ConfigProblem,
  durationSchema,
  formatPath,
  issuesToProblems,
  nearest,
  readConfigFile,
  readYaml,
  recordSchemas,
  sortProblems,
  toolPatternSchema,
  type YamlSource,
} from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { splitNote } from '@assistant/notes';
import * as z from 'zod';
import type { Persona, PersonaProblem } from '../persona-types.ts';
import { agentToolNames } from './agent-tool-names.ts';

/** The persona a loop gets when it names none: the owner's chat, a `system.agent` task without `persona`. */
export const defaultPersonaName = 'assistant';

/** The folder of persona files, beside config.yaml and in the notes. */
export const personasFolder = 'personas';

/** A persona's name: its file's name without `.md`. */
export const personaNamePattern = /^[A-Za-z0-9_-]{1,64}$/;

export interface LoadPersonasOptions {
  /** The folder of config.yaml: its `personas/*.md` are read first and win over the notes'. */
  configDir: string;
  /** The notes' root folder (`config.paths.notes`): its `personas/*.md` are read too. */
  notesRoot: string;
  /** config.yaml's `mcp_servers:` names. A persona's `mcp_servers:` naming another is a problem. @default not checked */
  mcpServers?: readonly string[];
  /** config.yaml's `llms:` profile names. A persona's `model:` naming another is a problem. @default not checked */
  profiles?: readonly string[];
  /**
   * The tool names loops offer (`builtinToolNames`). A pattern without `*` naming none of them, and no tool
   * `server__tool` of a server in `mcpServers`, is a problem. @default not checked
   */
  knownTools?: readonly string[];
}

export interface LoadPersonasResult {
  /** Every persona without a problem, by name, and the built-in `assistant` unless a file defines one. */
  personas: Map<string, Persona>;
  /** Every problem, by file and line. A persona with a problem in its file is not in `personas`. */
  problems: PersonaProblem[];
}

const toolList = z.array(toolPatternSchema);
const validToolPattern = (pattern: string) => toolPatternSchema.safeParse(pattern).success;

const frontmatterSchema = z.strictObject({
  description: z.string().optional(),
  model: z.string().min(1).optional(),
  tools: z
    .strictObject({
      allow: toolList.optional(),
      deny: toolList.optional(),
      approve: toolList.optional(),
    })
    .optional(),
  delegable: toolList.optional(),
  mcp_servers: z.array(z.string().min(1)).optional(),
  max_depth: z.int().min(0).max(10).optional(),
  max_children: z.int().min(1).max(50).optional(),
  code_mode: z.enum(['off', 'alongside', 'discovery']).optional(),
  budget: z
    .strictObject({
      max_steps: z.int().min(1).max(200).optional(),
      tokens: z.int().positive().optional(),
      timeout: durationSchema.optional(),
    })
    .optional(),
});

type Frontmatter = z.output<typeof frontmatterSchema>;

/** Problems with a file's body rather than its frontmatter: their key reads `(body)`. */
const bodyProblems = new WeakSet<ConfigProblem>();

/** The defaults of a persona's limits (docs/agents.md#personas). */
export const personaDefaults = { maxDepth: 3, maxChildren: 5, maxSteps: 20 } as const;

/**
 * The built-in default persona, used when no `personas/assistant.md` exists: every tool but the sub-agent ones (a
 * persona must grant those by name), and everything it has may be handed on.
 */
export function builtinDefaultPersona(): Persona {
  return {
    name: defaultPersonaName,
    source: 'built in',
    description: "The owner's assistant (built in; write personas/assistant.md to change it)",
    instructions:
      'You are Assistant, working for your owner. Be brief and accurate, say what you did and what you could not do, and ask before anything that cannot be undone.',
    tools: { allow: ['*'], deny: [...agentToolNames], approve: [] },
    delegable: ['*'],
    mcpServers: [],
    maxDepth: personaDefaults.maxDepth,
    maxChildren: personaDefaults.maxChildren,
    codeMode: 'off',
    budget: { maxSteps: personaDefaults.maxSteps },
  };
}

interface PersonaFile {
  name: string;
  /** As the owner sees it: `personas/x.md` (beside config.yaml) or `notes/personas/x.md`. */
  shown: string;
  absolute: string;
  origin: 'config' | 'notes';
}

/**
 * Reads every persona: `personas/<name>.md` beside config.yaml, then `personas/<name>.md` in the notes. Never throws
 * for bad input: each problem names the file, line and key, and the other personas still load. A broken persona is
 * reported, never rewritten or replaced by the default: a loop naming it fails (see {@link personaNamed}).
 */
export async function loadPersonas(options: LoadPersonasOptions): Promise<LoadPersonasResult> {
  const problems: ConfigProblem[] = [];
  const owners = new Map<ConfigProblem, string>();
  const personas = new Map<string, Persona>();
  /** Every name a file claims, broken or not, and the first file that claimed it. */
  const claimed = new Map<string, PersonaFile>();

  const files = [
    ...(await listPersonaFiles({ directory: path.join(options.configDir, personasFolder), prefix: '', problems })),
    ...(await listPersonaFiles({
      directory: path.join(options.notesRoot, personasFolder),
      prefix: 'notes/',
      problems,
    })),
  ];
  for (const file of files) {
    const first = claimed.get(file.name);
    if (first !== undefined) {
      // The one beside config.yaml wins: the owner's config is the more deliberate place.
      const problem: ConfigProblem = {
        severity: 'error',
        file: file.shown,
        path: [],
        position: { line: 1, col: 1 },
        message: `persona \`${file.name}\` is defined twice: ${first.shown} is used and ${file.shown} is ignored`,
        hint: `rename or remove one of ${first.shown} and ${file.shown}`,
      };
      problems.push(problem);
      owners.set(problem, file.name);
      continue;
    }
    claimed.set(file.name, file);
    const found: ConfigProblem[] = [];
    const persona = await readPersonaFile({ file, options, problems: found });
    for (const problem of found) owners.set(problem, file.name);
    problems.push(...found);
    if (persona !== undefined && found.length === 0) personas.set(persona.name, persona);
  }
  if (!claimed.has(defaultPersonaName)) personas.set(defaultPersonaName, builtinDefaultPersona());
  return {
    personas: new Map([...personas].sort(([left], [right]) => left.localeCompare(right))),
    problems: sortProblems(problems).map((problem) => personaProblem(problem, owners.get(problem))),
  };
}

/**
 * The persona a loop asked for, or a typed error: `PERSONA_INVALID` naming each problem's file, line and key when its
 * file is broken, `PERSONA_UNKNOWN` naming the personas there are when no file defines it.
 */
export function personaNamed(options: { name: string; loaded: LoadPersonasResult }): Persona {
  const { name, loaded } = options;
  const persona = loaded.personas.get(name);
  if (persona !== undefined) return persona;
  const problems = loaded.problems.filter((problem) => problem.persona === name);
  if (problems.length > 0) {
    throw new AssistantError(
      'PERSONA_INVALID',
      `persona \`${name}\` cannot be used: ${problems.map(formatPersonaProblem).join('; ')}`,
      { hint: '`assistant config check` lists every problem; fix the file and try again' },
    );
  }
  const known = [...loaded.personas.keys()];
  throw new AssistantError('PERSONA_UNKNOWN', `no persona \`${name}\`; the personas are ${known.join(', ')}`, {
    hint: `write personas/${name}.md beside config.yaml (docs/agents.md, "Personas")${
      nearest(name, known) ? `, or did you mean \`${nearest(name, known)}\`?` : ''
    }`,
  });
}

/** `personas/x.md:4: tools.allow[1]: unknown tool \`serch\`` */
export function formatPersonaProblem(problem: PersonaProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`;
  return `${where}: ${problem.key && problem.key !== '(document)' ? `${problem.key}: ` : ''}${problem.message}`;
}

/** Persona problems as the config's own, for `assistant config check` and the dashboard's Config page. */
export function personaConfigProblems(problems: readonly PersonaProblem[]): ConfigProblem[] {
  return problems.map((problem) => ({
    severity: 'error',
    file: problem.file,
    path: problem.path ?? [],
    message: problem.message,
    ...(problem.line === undefined ? {} : { position: { line: problem.line, col: problem.col ?? 1 } }),
    ...(problem.hint ? { hint: problem.hint } : {}),
  }));
}

async function listPersonaFiles(options: {
  directory: string;
  /** `''` beside config.yaml, `notes/` in the notes. */
  prefix: string;
  problems: ConfigProblem[];
}): Promise<PersonaFile[]> {
  let entries: import('node:fs').Dirent[];
  try {
    entries = await readdir(options.directory, { withFileTypes: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    options.problems.push({
      severity: 'error',
      file: `${options.prefix}${personasFolder}/`,
      path: [],
      message: `the folder cannot be read: ${(error as Error).message}`,
    });
    return [];
  }
  const found: PersonaFile[] = [];
  // Sorted, so the listing and the problems come in the same order on every machine.
  for (const entry of entries.sort((left, right) => left.name.localeCompare(right.name))) {
    // Dot files are editors' swap and backup files, not personas; other kinds of file may sit beside them.
    if (entry.name.startsWith('.') || !entry.name.endsWith('.md') || entry.isDirectory()) continue;
    const shown = `${options.prefix}${personasFolder}/${entry.name}`;
    const name = entry.name.slice(0, -'.md'.length);
    if (!personaNamePattern.test(name)) {
      options.problems.push({
        severity: 'error',
        file: shown,
        path: [],
        message: `\`${name}\` is not a valid persona name (the file's name without .md)`,
        hint: 'use 1 to 64 letters, digits, _ and -',
      });
      continue;
    }
    found.push({
      name,
      shown,
      absolute: path.join(options.directory, entry.name),
      origin: options.prefix === '' ? 'config' : 'notes',
    });
  }
  return found;
}

async function readPersonaFile(context: {
  file: PersonaFile;
  options: LoadPersonasOptions;
  problems: ConfigProblem[];
}): Promise<Persona | undefined> {
  const { file, options, problems } = context;
  let text: string;
  try {
    text = await readConfigFile(file.absolute, file.shown);
  } catch (error) {
    const message = error instanceof Error ? (error.message.split('\n').at(-1) ?? error.message) : String(error);
    problems.push({ severity: 'error', file: file.shown, path: [], message: `cannot be read: ${message}` });
    return undefined;
  }
  // The same text, checked against the same names, checks the same: the parse is kept by file (the file is still
  // read every time, so an edit counts at the next loop). A copy is given, so no caller's change reaches another.
  const key = JSON.stringify([file.shown, file.origin, options.mcpServers, options.profiles, options.knownTools]);
  const kept = parsedPersonas.get(file.absolute);
  if (kept !== undefined && kept.text === text && kept.key === key) {
    problems.push(...kept.problems);
    return kept.persona === undefined ? undefined : structuredClone(kept.persona);
  }
  const found: ConfigProblem[] = [];
  const persona = parsePersonaText({ file, text, options, problems: found });
  if (parsedPersonas.size >= maxParsedPersonas) parsedPersonas.delete(parsedPersonas.keys().next().value as string);
  parsedPersonas.set(file.absolute, { text, key, persona, problems: found });
  problems.push(...found);
  return persona === undefined ? undefined : structuredClone(persona);
}

/** Parsed persona files by absolute path, with the text and the names they were checked against. */
const parsedPersonas = new Map<
  string,
  { text: string; key: string; persona: Persona | undefined; problems: readonly ConfigProblem[] }
>();
const maxParsedPersonas = 256;

function parsePersonaText(context: {
  file: PersonaFile;
  text: string;
  options: LoadPersonasOptions;
  problems: ConfigProblem[];
}): Persona | undefined {
  const { file, text, options, problems } = context;
  const parts = splitNote(text);
  if (!parts.hasFrontmatter && /^---[ \t]*\r?\n/.test(text)) {
    problems.push({
      severity: 'error',
      file: file.shown,
      path: [],
      position: { line: 1, col: 1 },
      message: 'the frontmatter has no closing `---` line',
      hint: 'end the frontmatter with a line of three dashes, then write the instructions below it',
    });
    return undefined;
  }
  // Lines in the frontmatter count from the file's first line, not the YAML's.
  const lineOffset = text.slice(0, parts.frontmatterStart).split('\n').length - 1;
  const source = shiftLines(
    readYaml({
      text: parts.frontmatter,
      file: file.shown,
      resolveSecret: () => ({
        message: '`!secret` has no place in a persona',
        hint: 'a persona names tools and limits; secrets belong to config.yaml and secrets.yaml',
      }),
    }),
    lineOffset,
  );
  const before = problems.length;
  problems.push(...source.problems);
  // Every problem of the file in one run: the body is checked even when the frontmatter is broken.
  let frontmatter: Frontmatter | undefined;
  if (source.problems.length === 0) {
    const data = source.data ?? {};
    const parsed = frontmatterSchema.safeParse(data, { error: recordSchemas });
    if (parsed.success) frontmatter = parsed.data;
    else problems.push(...issuesToProblems({ issues: parsed.error.issues, source, file: file.shown, data }));
    // Names are checked on what the file says even when another key is wrong: one run shows every problem.
    const at = (keyPath: ConfigPath, message: string, hint?: string) =>
      problems.push(located({ source, file: file.shown, path: keyPath, message, ...(hint ? { hint } : {}) }));
    checkNames({ written: namesWritten(data), options, at });
    const mode = frontmatter?.code_mode;
    if (frontmatter !== undefined && mode !== undefined && mode !== 'off' && !grantsRunCode(frontmatter)) {
      at(
        ['code_mode'],
        `code_mode is ${mode} but the persona's tools do not grant run_code, so its loops would get no code tools`,
        'add run_code (and search_tools) to `tools.allow`, or set `code_mode: off`',
      );
    }
  }

  const instructions = parts.body.trim();
  if (instructions === '') {
    const bodyLine = text.slice(0, text.length - parts.body.length).split('\n').length;
    const problem: ConfigProblem = {
      severity: 'error',
      file: file.shown,
      path: [],
      position: { line: bodyLine, col: 1 },
      message: 'the persona has no instructions: its body (below the frontmatter) is empty',
      hint: 'write who the agent is and how it works below the closing `---`; it starts its system prompt',
    };
    bodyProblems.add(problem);
    problems.push(problem);
  }
  if (problems.length > before || frontmatter === undefined) return undefined;
  return personaOf({ file, frontmatter, instructions });
}

/** Whether a persona's own `tools:` let its loops call `run_code` (code mode needs it). */
function grantsRunCode(frontmatter: Frontmatter): boolean {
  const allow = frontmatter.tools?.allow ?? [];
  const deny = frontmatter.tools?.deny ?? [];
  const approve = frontmatter.tools?.approve ?? [];
  const named = (patterns: readonly string[]) => patterns.some((pattern) => matchesToolPattern(pattern, 'run_code'));
  return (named(allow) || named(approve)) && !named(deny);
}

/** What a persona names, as far as the file has the right shape: a list that is not one is the schema's problem. */
interface NamesWritten {
  model?: string | undefined;
  mcpServers: (string | undefined)[];
  tools: { allow: (string | undefined)[]; deny: (string | undefined)[]; approve: (string | undefined)[] };
  delegable: (string | undefined)[];
}

function namesWritten(data: unknown): NamesWritten {
  const record = (value: unknown): Record<string, unknown> =>
    value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  // Items keep their index (a non-string is undefined), so a problem points at the right item.
  const strings = (value: unknown) =>
    Array.isArray(value) ? value.map((item) => (typeof item === 'string' ? item : undefined)) : [];
  const top = record(data);
  const tools = record(top.tools);
  return {
    model: typeof top.model === 'string' ? top.model : undefined,
    mcpServers: strings(top.mcp_servers),
    tools: { allow: strings(tools.allow), deny: strings(tools.deny), approve: strings(tools.approve) },
    delegable: strings(top.delegable),
  };
}

/** The names a persona refers to: LLM profiles, MCP servers and tools, each checked against what exists. */
function checkNames(context: {
  written: NamesWritten;
  options: LoadPersonasOptions;
  at: (keyPath: ConfigPath, message: string, hint?: string) => void;
}): void {
  const { written, options, at } = context;
  const didYouMean = (input: string, known: readonly string[]) => {
    const close = nearest(input, known);
    if (close) return `did you mean \`${close}\`?`;
    return known.length === 0 ? 'none is defined' : `known: ${known.join(', ')}`;
  };
  const model = written.model;
  if (model !== undefined && model !== '' && options.profiles && !options.profiles.includes(model)) {
    at(['model'], `unknown LLM profile \`${model}\` (config.yaml's \`llms:\`)`, didYouMean(model, options.profiles));
  }
  const servers = options.mcpServers;
  if (servers) {
    written.mcpServers.forEach((server, index) => {
      if (server !== undefined && server !== '' && !servers.includes(server)) {
        at(
          ['mcp_servers', index],
          `unknown MCP server \`${server}\` (config.yaml's \`mcp_servers:\`)`,
          didYouMean(server, servers),
        );
      }
    });
  }
  const knownTools = options.knownTools;
  if (!knownTools) return;
  const lists: [ConfigPath, (string | undefined)[]][] = [
    [['tools', 'allow'], written.tools.allow],
    [['tools', 'deny'], written.tools.deny],
    [['tools', 'approve'], written.tools.approve],
    [['delegable'], written.delegable],
  ];
  for (const [listPath, patterns] of lists) {
    patterns.forEach((pattern, index) => {
      // A pattern the schema refuses (a space, an empty one) is already a problem; one problem per item.
      if (pattern === undefined || !validToolPattern(pattern)) return;
      if (pattern.includes('*') || knownTools.includes(pattern)) return;
      const separator = pattern.indexOf('__');
      // An MCP tool is `server__tool`; its tools are known only once the server runs, so the server's name decides.
      if (separator > 0) {
        const server = pattern.slice(0, separator);
        if (servers === undefined || servers.includes(server)) return;
        at(
          [...listPath, index],
          `unknown tool \`${pattern}\`: no MCP server \`${server}\` in config.yaml's \`mcp_servers:\``,
          didYouMean(server, servers),
        );
        return;
      }
      at([...listPath, index], `unknown tool \`${pattern}\``, didYouMean(pattern, knownTools));
    });
  }
}

function personaOf(context: { file: PersonaFile; frontmatter: Frontmatter; instructions: string }): Persona {
  const { file, frontmatter, instructions } = context;
  const budget = frontmatter.budget;
  return {
    name: file.name,
    source: file.origin === 'config' ? `${file.shown} (config)` : file.shown,
    file: file.absolute,
    ...(frontmatter.description === undefined ? {} : { description: frontmatter.description }),
    instructions,
    ...(frontmatter.model === undefined ? {} : { profile: frontmatter.model }),
    tools: {
      allow: frontmatter.tools?.allow ?? [],
      deny: frontmatter.tools?.deny ?? [],
      approve: frontmatter.tools?.approve ?? [],
    },
    delegable: frontmatter.delegable ?? [],
    mcpServers: frontmatter.mcp_servers ?? [],
    maxDepth: frontmatter.max_depth ?? personaDefaults.maxDepth,
    maxChildren: frontmatter.max_children ?? personaDefaults.maxChildren,
    codeMode: frontmatter.code_mode ?? 'off',
    budget: {
      maxSteps: budget?.max_steps ?? personaDefaults.maxSteps,
      ...(budget?.tokens === undefined ? {} : { tokens: budget.tokens }),
      ...(budget?.timeout === undefined ? {} : { timeoutMs: budget.timeout }),
    },
  };
}

/** A YamlSource of the frontmatter whose positions count lines from the top of the whole file. */
function shiftLines(source: YamlSource, lineOffset: number): YamlSource {
  if (lineOffset === 0) return source;
  const shift = <T extends { line: number } | undefined>(position: T): T =>
    (position === undefined ? undefined : { ...position, line: position.line + lineOffset }) as T;
  return {
    ...source,
    problems: source.problems.map((problem) =>
      problem.position ? { ...problem, position: shift(problem.position) } : problem,
    ),
    valueAt: (keyPath) => shift(source.valueAt(keyPath)),
    keyAt: (keyPath) => shift(source.keyAt(keyPath)),
  };
}

/** A problem at the value of `path`, or the nearest key above it that has a position. */
function located(options: {
  source: YamlSource;
  file: string;
  path: ConfigPath;
  message: string;
  hint?: string;
}): ConfigProblem {
  let position: ConfigProblem['position'];
  for (let length = options.path.length; length >= 0 && position === undefined; length--) {
    const prefix = options.path.slice(0, length);
    position = options.source.valueAt(prefix) ?? options.source.keyAt(prefix);
  }
  return {
    severity: 'error',
    file: options.file,
    path: options.path,
    message: options.message,
    ...(position ? { position } : {}),
    ...(options.hint ? { hint: options.hint } : {}),
  };
}

function personaProblem(problem: ConfigProblem, persona: string | undefined): PersonaProblem {
  return {
    file: problem.file,
    ...(problem.position ? { line: problem.position.line, col: problem.position.col } : {}),
    key: bodyProblems.has(problem) ? '(body)' : formatPath(problem.path),
    path: problem.path,
    message: problem.message,
    ...(problem.hint ? { hint: problem.hint } : {}),
    ...(persona ? { persona } : {}),
  };
}

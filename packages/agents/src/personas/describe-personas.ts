import path from 'node:path';
import type { Persona, PersonaProblem } from '../persona-types.ts';
import { builtinToolNames } from './builtin-tool-names.ts';
import type { LoadPersonasOptions, LoadPersonasResult } from './load-personas.ts';

/** What the listings need of a loaded config (`LoadedConfig` fits). */
export interface PersonaConfig {
  paths: { configFile: string; notes: string };
  llms: Readonly<Record<string, unknown>>;
  mcpServers: Readonly<Record<string, unknown>>;
}

/**
 * Where an installation's personas are and what their names are checked against: the folder of config.yaml, the
 * notes, config.yaml's LLM profiles and MCP servers, and the built-in tools. One place, so `config check`, the CLI,
 * the API and the dashboard judge a persona alike.
 */
export function personaSourcesOf(config: PersonaConfig): LoadPersonasOptions {
  return {
    configDir: path.dirname(config.paths.configFile),
    notesRoot: config.paths.notes,
    profiles: Object.keys(config.llms),
    mcpServers: Object.keys(config.mcpServers),
    knownTools: builtinToolNames,
  };
}

/** One row of a listing: a usable persona, or a file that defines one and cannot be used. */
export interface PersonaEntry {
  name: string;
  /** `personas/x.md (config)`, `notes/personas/x.md`, `built in`; for a broken one, its file. */
  source: string;
  /** Absent when its file has problems: a loop naming it fails with PERSONA_INVALID. */
  persona?: Persona;
  /** Its file's problems (a usable persona has one only when a second file of its name is ignored). */
  problems: PersonaProblem[];
}

/** Every persona by name, the broken ones too, and the problems that belong to no persona (a bad file name). */
export function personaEntries(loaded: LoadPersonasResult): { entries: PersonaEntry[]; unowned: PersonaProblem[] } {
  const entries = new Map<string, PersonaEntry>();
  for (const persona of loaded.personas.values()) {
    entries.set(persona.name, { name: persona.name, source: persona.source, persona, problems: [] });
  }
  const unowned: PersonaProblem[] = [];
  for (const problem of loaded.problems) {
    if (problem.persona === undefined) {
      unowned.push(problem);
      continue;
    }
    const entry = entries.get(problem.persona) ?? { name: problem.persona, source: problem.file, problems: [] };
    entry.problems.push(problem);
    entries.set(problem.persona, entry);
  }
  return { entries: [...entries.values()].sort((left, right) => left.name.localeCompare(right.name)), unowned };
}

/** `allow search_notes, read_note; deny files__write; approve fetch`, or `no tools`. */
export function toolsSummary(persona: Persona): string {
  const parts = (['allow', 'deny', 'approve'] as const)
    .filter((kind) => persona.tools[kind].length > 0)
    .map((kind) => `${kind} ${persona.tools[kind].join(', ')}`);
  return parts.length === 0 ? 'no tools' : parts.join('; ');
}

/** A persona as JSON, its frontmatter's keys as written in the file (snake_case), normalised and with defaults. */
export function personaJson(persona: Persona): Record<string, unknown> {
  return {
    name: persona.name,
    source: persona.source,
    ...(persona.description === undefined ? {} : { description: persona.description }),
    ...(persona.profile === undefined ? {} : { model: persona.profile }),
    tools: { allow: persona.tools.allow, deny: persona.tools.deny, approve: persona.tools.approve },
    delegable: persona.delegable,
    mcp_servers: persona.mcpServers,
    max_depth: persona.maxDepth,
    max_children: persona.maxChildren,
    budget: {
      max_steps: persona.budget.maxSteps,
      ...(persona.budget.tokens === undefined ? {} : { tokens: persona.budget.tokens }),
      ...(persona.budget.timeoutMs === undefined ? {} : { timeout_ms: persona.budget.timeoutMs }),
    },
    instructions: persona.instructions,
  };
}

/** A persona problem as JSON (the same fields as `config check` prints). */
export function personaProblemJson(problem: PersonaProblem): Record<string, unknown> {
  return {
    file: problem.file,
    ...(problem.line === undefined ? {} : { line: problem.line }),
    ...(problem.col === undefined ? {} : { col: problem.col }),
    ...(problem.key === undefined ? {} : { key: problem.key }),
    message: problem.message,
    ...(problem.hint === undefined ? {} : { hint: problem.hint }),
  };
}

/**
 * A listing row as JSON: `usable` says whether a loop may name it; a usable one carries its fields (as
 * {@link personaJson}), a broken one only its name, file and problems.
 */
export function personaEntryJson(entry: PersonaEntry): Record<string, unknown> {
  return {
    ...(entry.persona ? personaJson(entry.persona) : { name: entry.name, source: entry.source }),
    usable: entry.persona !== undefined,
    problems: entry.problems.map(personaProblemJson),
  };
}

import {
  loadPersonas,
  type PersonaEntry,
  type PersonaProblem,
  personaEntries,
  personaEntryJson,
  personaNamed,
  personaProblemJson,
  personaSourcesOf,
  toolsSummary,
} from '@assistant/agents';
import { formatDuration } from '@assistant/config';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

export interface PersonasListOptions {
  globals: GlobalOptions;
  context: CliContext;
  json?: boolean | undefined;
}

export interface PersonasShowOptions extends PersonasListOptions {
  name: string;
}

/** `personas/x.md:4:12: tools.allow[1]: unknown tool `serch`` and its hint on the next line. */
function problemLines(problem: PersonaProblem, indent: string): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}:${problem.col ?? 1}`;
  const key = problem.key && problem.key !== '(document)' ? `${problem.key}: ` : '';
  return `${indent}${where}: ${key}${problem.message}\n${problem.hint ? `${indent}  hint: ${problem.hint}\n` : ''}`;
}

async function loadEntries(options: PersonasListOptions) {
  const { config } = await loadCliConfig(options);
  const loaded = await loadPersonas(personaSourcesOf(config));
  return { loaded, ...personaEntries(loaded) };
}

/**
 * `assistant personas ls [--json]`: each persona with where it is written, its model, its tools in one line, and its
 * problems flagged. A broken persona is listed (it cannot be used), never left out.
 */
export async function personasListCommand(options: PersonasListOptions): Promise<void> {
  const { context } = options;
  const { entries, unowned } = await loadEntries(options);
  if (options.json) {
    return writeJson(context, {
      personas: entries.map(personaEntryJson),
      problems: unowned.map(personaProblemJson),
    });
  }
  for (const entry of entries) context.stdout.write(listingLines(entry));
  for (const problem of unowned) context.stdout.write(`! ${problemLines(problem, '').trimEnd()}\n`);
}

function listingLines(entry: PersonaEntry): string {
  const { persona } = entry;
  const flag = entry.problems.length === 0 ? '' : `  ${entry.problems.length} problem(s)`;
  if (!persona) {
    return `${entry.name}  ${entry.source}  BROKEN (cannot be used)${flag}\n${entry.problems.map((problem) => problemLines(problem, '  ')).join('')}`;
  }
  return (
    `${entry.name}  ${entry.source}  model: ${persona.profile ?? 'default'}${flag}\n` +
    `  tools: ${toolsSummary(persona)}\n` +
    `  delegable: ${persona.delegable.length === 0 ? 'nothing' : persona.delegable.join(', ')}\n` +
    entry.problems.map((problem) => problemLines(problem, '  ')).join('')
  );
}

/**
 * `assistant personas show NAME [--json]`: the persona's fields as normalised (defaults filled in) and its
 * instructions; for a broken one, its problems. A name no file defines is PERSONA_UNKNOWN.
 */
export async function personasShowCommand(options: PersonasShowOptions): Promise<void> {
  const { context } = options;
  const { loaded, entries } = await loadEntries(options);
  const entry = entries.find((candidate) => candidate.name === options.name);
  // personaNamed says what there is when nothing of that name exists.
  if (!entry) personaNamed({ name: options.name, loaded });
  if (!entry) return;
  if (options.json) return writeJson(context, { persona: personaEntryJson(entry) });
  const { persona } = entry;
  if (!persona) {
    context.stdout.write(
      `${entry.name}  ${entry.source}\n  BROKEN: a loop naming it fails (PERSONA_INVALID) until the file is fixed\n${entry.problems.map((problem) => problemLines(problem, '  ')).join('')}`,
    );
    return;
  }
  const budget = [
    `max_steps ${persona.budget.maxSteps}`,
    ...(persona.budget.tokens === undefined ? [] : [`tokens ${persona.budget.tokens}`]),
    ...(persona.budget.timeoutMs === undefined ? [] : [`timeout ${formatDuration(persona.budget.timeoutMs)}`]),
  ];
  const list = (items: readonly string[]) => (items.length === 0 ? '(none)' : items.join(', '));
  context.stdout.write(
    [
      `${persona.name}  ${persona.source}`,
      ...(persona.description ? [`  description:  ${persona.description}`] : []),
      `  model:        ${persona.profile ?? '(the loop default)'}`,
      `  tools.allow:   ${list(persona.tools.allow)}`,
      `  tools.deny:    ${list(persona.tools.deny)}`,
      `  tools.approve: ${list(persona.tools.approve)}`,
      `  delegable:    ${list(persona.delegable)}`,
      `  mcp_servers:  ${list(persona.mcpServers)}`,
      `  max_depth:    ${persona.maxDepth}`,
      `  max_children: ${persona.maxChildren}`,
      `  budget:       ${budget.join(', ')}`,
      ...entry.problems.map((problem) => problemLines(problem, '  ').trimEnd()),
      '',
      persona.instructions,
      '',
    ].join('\n'),
  );
}

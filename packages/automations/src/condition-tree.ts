import type { Classification, WhenConditions } from '@assistant/config';
import { type Condition, type ConditionValue, compileCondition, type FieldType, resolveSubject } from './conditions.ts';

/**
 * A `when:` compiled: every entry of a map must hold (`all`), one entry of `any:` must, `not:`'s map must not.
 * Leaves point into the flat `conditions` list by position.
 */
export type ConditionNode =
  | { kind: 'all'; children: ConditionNode[] }
  | { kind: 'any'; children: ConditionNode[] }
  | { kind: 'not'; child: ConditionNode }
  | { kind: 'test'; condition: number };

/** A problem in a `when:` map, at its key path from where the map sits (`['when', 'any', 1, 'humn']`). */
export interface ConditionProblem {
  path: (string | number)[];
  message: string;
  hint?: string;
  /** The problem is the key's name, not its value. */
  at?: 'key';
}

export interface CompileConditionTreeOptions {
  when: WhenConditions;
  /** Where the map sits, for problems: `['when']` for a rule's, `['on', 'filter']` for a hook's filter. */
  path: (string | number)[];
  classifications: Record<string, Classification>;
  fields: Record<string, FieldType>;
  /** Tests found here are appended to this list; a tree made of several maps shares one list. @default a new one */
  conditions?: Condition[];
  /**
   * What to say about a key that names neither a classification nor a field. @default the platform's wording:
   * `` `humn` is neither a classification of this platform nor one of its fields ``
   */
  unknownKey?: (key: string) => { message: string; hint?: string };
}

/**
 * The one compiler of the condition language, for automations and hooks alike: checks each key against the
 * classifications and fields, compiles each value, nests `any:` and `not:`, and reports every problem at its path.
 */
export function compileConditionTree(options: CompileConditionTreeOptions): {
  when: ConditionNode;
  conditions: Condition[];
  problems: ConditionProblem[];
} {
  const conditions = options.conditions ?? [];
  const problems: ConditionProblem[] = [];
  const unknownKey =
    options.unknownKey ??
    ((key: string) => ({
      message: `\`${key}\` is neither a classification of this platform nor one of its fields`,
      hint: describeChoices(options.classifications, options.fields),
    }));
  const compile = (when: WhenConditions, at: (string | number)[]): ConditionNode => {
    const children: ConditionNode[] = [];
    for (const [key, value] of Object.entries(when)) {
      const path = [...at, key];
      // The schema has already refused any other shape under `any:` and `not:`; these guards keep the types honest.
      if (key === 'any' && Array.isArray(value) && value.every(isConditionMap)) {
        children.push({
          kind: 'any',
          children: value.map((entry, entryIndex) => compile(entry, [...path, entryIndex])),
        });
        continue;
      }
      if (key === 'not' && isConditionMap(value)) {
        children.push({ kind: 'not', child: compile(value, path) });
        continue;
      }
      if (isConditionMap(value) || (Array.isArray(value) && value.some(isConditionMap))) {
        problems.push({ path, message: `\`${key}\` is tested against a value, not a condition map` });
        continue;
      }
      const subject = resolveSubject(key, options.classifications, options.fields);
      if (!subject) {
        const { message, hint } = unknownKey(key);
        problems.push({ path, at: 'key', message, ...(hint === undefined ? {} : { hint }) });
        continue;
      }
      const condition = compileCondition(key, subject, value as ConditionValue);
      if ('problem' in condition) problems.push({ path, message: condition.problem });
      else {
        children.push({ kind: 'test', condition: conditions.length });
        conditions.push(condition);
      }
    }
    return { kind: 'all', children };
  };
  return { when: compile(options.when, options.path), conditions, problems };
}

function isConditionMap(value: unknown): value is WhenConditions {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `classifications: human, spam; fields: from_domain, is_noreply`, for hints. */
function describeChoices(classifications: Record<string, Classification>, fields: Record<string, FieldType>): string {
  const parts = [];
  if (Object.keys(classifications).length > 0)
    parts.push(`classifications: ${Object.keys(classifications).join(', ')}`);
  if (Object.keys(fields).length > 0) parts.push(`fields: ${Object.keys(fields).join(', ')}`);
  return parts.length > 0 ? parts.join('; ') : 'this platform has no classifications or fields to test';
}

/** Kleene's three values: `unknown` is a test whose subject is missing (a classification the model has not given). */
export type Truth = 'true' | 'false' | 'unknown';

/**
 * How a compiled tree answers, given each test's outcome by position. A missing value is unknown, `not` of unknown
 * is unknown, and only `true` matches: so `not: {spam: "> 0.5"}` never acts on an item the model has not classified.
 */
export function conditionTruth(
  node: ConditionNode,
  outcome: (condition: number) => { holds: boolean; missing?: boolean | undefined } | undefined,
): Truth {
  switch (node.kind) {
    case 'test': {
      const tested = outcome(node.condition);
      return tested?.missing ? 'unknown' : tested?.holds ? 'true' : 'false';
    }
    case 'all': {
      const values = node.children.map((child) => conditionTruth(child, outcome));
      return values.includes('false') ? 'false' : values.includes('unknown') ? 'unknown' : 'true';
    }
    case 'any': {
      const values = node.children.map((child) => conditionTruth(child, outcome));
      return values.includes('true') ? 'true' : values.includes('unknown') ? 'unknown' : 'false';
    }
    case 'not': {
      const value = conditionTruth(node.child, outcome);
      return value === 'unknown' ? 'unknown' : value === 'true' ? 'false' : 'true';
    }
  }
}

/** Where each test sits inside `any:` and `not:`, for people: `any 2 of 3`, `not`, `any 1 of 2 › not`. */
export function conditionGroups(node: ConditionNode, where: string[] = [], groups = new Map<number, string>()) {
  switch (node.kind) {
    case 'test':
      if (where.length > 0) groups.set(node.condition, where.join(' › '));
      break;
    case 'all':
      for (const child of node.children) conditionGroups(child, where, groups);
      break;
    case 'any':
      for (const [index, child] of node.children.entries()) {
        conditionGroups(child, [...where, `any ${index + 1} of ${node.children.length}`], groups);
      }
      break;
    case 'not':
      conditionGroups(node.child, [...where, 'not'], groups);
  }
  return groups;
}

/** `when:` in words, for the human log: `human < 0.2, is_noreply = true`, `any of (a = 1; b = 2)`, `not (c = 3)`. */
export function describeConditionTree(node: ConditionNode, conditions: readonly Condition[]): string {
  switch (node.kind) {
    case 'test':
      return conditions[node.condition]?.text ?? '';
    case 'all':
      return node.children.map((child) => describeConditionTree(child, conditions)).join(', ');
    case 'any':
      return `any of (${node.children.map((child) => describeConditionTree(child, conditions)).join('; ')})`;
    case 'not':
      return `not (${describeConditionTree(node.child, conditions)})`;
  }
}

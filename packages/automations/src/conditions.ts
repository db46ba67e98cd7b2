import { type Classification, parseDuration } from '@assistant/config';

/** What a `when:` key tests: one of the platform's classifications, or one of its deterministic fields. */
export type ConditionSubject =
  | { kind: 'classification'; name: string; classification: Classification }
  | { kind: 'field'; name: string; type: FieldType };

export type FieldType = 'boolean' | 'string' | 'number' | 'date' | 'list';

export type ConditionValue = string | number | boolean | null | (string | number | boolean)[];

type Comparison = '<' | '<=' | '>' | '>=' | '==' | '!=';

/** A `when:` entry, checked and compiled: `test` answers for one item's value (undefined when it is missing). */
export interface Condition {
  key: string;
  subject: ConditionSubject;
  /** For people: `human < 0.2`, `is_noreply = true`, `date < now() - 7d`. */
  text: string;
  test(value: unknown, nowMs: number): boolean;
}

const comparisonPattern = /^\s*(<=|>=|==|!=|<|>)\s*(.+?)\s*$/;
const nowPattern = /^now\(\)\s*(?:([+-])\s*(\S+))?$/;

/**
 * Which subject a `when:` key names: `classification.X` and `field.X` say so; a bare name is a classification when
 * the platform classifies it, else a field the platform declares. Undefined when it is neither.
 */
export function resolveSubject(
  key: string,
  classifications: Record<string, Classification>,
  fields: Record<string, FieldType>,
): ConditionSubject | undefined {
  const [prefix, rest] = key.includes('.')
    ? [key.slice(0, key.indexOf('.')), key.slice(key.indexOf('.') + 1)]
    : ['', key];
  if (prefix === 'classification' || prefix === '') {
    // Own keys only: `constructor` or `toString` is no classification or field, whatever Object.prototype holds.
    const classification = Object.hasOwn(classifications, rest) ? classifications[rest] : undefined;
    if (classification) return { kind: 'classification', name: rest, classification };
    if (prefix === 'classification') return undefined;
  }
  if (prefix === 'field' || prefix === '') {
    const type = Object.hasOwn(fields, rest) ? fields[rest] : undefined;
    if (type) return { kind: 'field', name: rest, type };
  }
  return undefined;
}

/** Compiles a `when:` entry, or explains why its value cannot be tested against its subject. */
export function compileCondition(
  key: string,
  subject: ConditionSubject,
  value: ConditionValue,
): Condition | { problem: string } {
  if (subject.kind === 'classification') return compileClassification(key, subject, value);
  return compileField(key, subject, value);
}

function compileClassification(
  key: string,
  subject: Extract<ConditionSubject, { kind: 'classification' }>,
  value: ConditionValue,
): Condition | { problem: string } {
  const { classification } = subject;
  if (value === null)
    return { problem: 'a classification cannot be tested for null: an item without it never matches' };
  switch (classification.type) {
    case 'confidence': {
      const compiled = typeof value === 'number' ? { op: '>=' as const, operand: value } : parseComparison(value);
      if (!compiled || typeof compiled.operand !== 'number' || compiled.operand < 0 || compiled.operand > 1) {
        return {
          problem: `\`${subject.name}\` is a confidence from 0 to 1: write a threshold like "< 0.2", ">= 0.8" or 0.8`,
        };
      }
      const { op, operand } = compiled;
      return {
        key,
        subject,
        text: `${subject.name} ${op} ${operand}`,
        test: (actual) => typeof actual === 'number' && compare(actual, op, operand),
      };
    }
    case 'boolean':
      if (typeof value !== 'boolean') return { problem: `\`${subject.name}\` is yes or no: write true or false` };
      return { key, subject, text: `${subject.name} = ${value}`, test: (actual) => actual === value };
    case 'enum': {
      const wanted = Array.isArray(value) ? value : [value];
      const unknown = wanted.filter((item) => typeof item !== 'string' || !classification.values.includes(item));
      if (unknown.length > 0 || wanted.length === 0) {
        return {
          problem: `\`${subject.name}\` is one of ${classification.values.join(', ')}; ${unknown.map((item) => `\`${String(item)}\``).join(', ') || 'nothing'} is not`,
        };
      }
      return {
        key,
        subject,
        text: wanted.length === 1 ? `${subject.name} = ${wanted[0]}` : `${subject.name} in [${wanted.join(', ')}]`,
        test: (actual) => typeof actual === 'string' && wanted.includes(actual),
      };
    }
  }
}

function compileField(
  key: string,
  subject: Extract<ConditionSubject, { kind: 'field' }>,
  value: ConditionValue,
): Condition | { problem: string } {
  const name = subject.name;
  if (value === null) {
    return {
      key,
      subject,
      text: `${name} is empty`,
      test: (actual) => actual === undefined || actual === null || actual === '',
    };
  }
  switch (subject.type) {
    case 'boolean':
      if (typeof value !== 'boolean') return { problem: `\`${name}\` is true or false` };
      return { key, subject, text: `${name} = ${value}`, test: (actual) => actual === value };
    case 'string': {
      const wanted = Array.isArray(value) ? value.map(String) : [String(value)];
      return {
        key,
        subject,
        text: wanted.length === 1 ? `${name} = ${wanted[0]}` : `${name} in [${wanted.join(', ')}]`,
        // Case-insensitive: `from_domain: Example.COM` means what the owner obviously meant.
        test: (actual) =>
          typeof actual === 'string' && wanted.some((item) => item.toLowerCase() === actual.toLowerCase()),
      };
    }
    case 'list': {
      const wanted = Array.isArray(value) ? value.map(String) : [String(value)];
      return {
        key,
        subject,
        text: `${name} has ${wanted.length === 1 ? wanted[0] : `any of [${wanted.join(', ')}]`}`,
        test: (actual) =>
          Array.isArray(actual) &&
          actual.some((item) => wanted.some((want) => want.toLowerCase() === String(item).toLowerCase())),
      };
    }
    case 'number': {
      const compiled = typeof value === 'number' ? { op: '==' as const, operand: value } : parseComparison(value);
      if (!compiled || typeof compiled.operand !== 'number')
        return { problem: `\`${name}\` is a number: write 3 or a comparison like "> 3"` };
      const { op, operand } = compiled;
      return {
        key,
        subject,
        text: `${name} ${op} ${operand}`,
        test: (actual) => typeof actual === 'number' && compare(actual, op, operand),
      };
    }
    case 'date': {
      const compiled = typeof value === 'string' ? parseDateComparison(value) : undefined;
      if (!compiled)
        return { problem: `\`${name}\` is a date: write a comparison like "< now() - 7d" or "> 2026-01-01"` };
      return {
        key,
        subject,
        text: `${name} ${compiled.text}`,
        test: (actual, nowMs) => {
          const actualMs =
            typeof actual === 'string' ? Date.parse(actual) : actual instanceof Date ? actual.getTime() : Number.NaN;
          return !Number.isNaN(actualMs) && compare(actualMs, compiled.op, compiled.operandMs(nowMs));
        },
      };
    }
  }
}

function parseComparison(value: ConditionValue): { op: Comparison; operand: number } | undefined {
  if (typeof value !== 'string') return undefined;
  const match = comparisonPattern.exec(value);
  if (!match) return undefined;
  const operand = Number(match[2]);
  if (match[2] === undefined || match[2].trim() === '' || Number.isNaN(operand)) return undefined;
  return { op: match[1] as Comparison, operand };
}

function parseDateComparison(
  value: string,
): { op: Comparison; text: string; operandMs: (nowMs: number) => number } | undefined {
  const match = comparisonPattern.exec(value);
  if (!match?.[2]) return undefined;
  const op = match[1] as Comparison;
  const operand = match[2];
  const relative = nowPattern.exec(operand);
  if (relative) {
    const offsetMs = relative[2] === undefined ? 0 : parseDuration(relative[2]);
    if (offsetMs === undefined) return undefined;
    const signed = relative[1] === '-' ? -offsetMs : offsetMs;
    return { op, text: `${op} ${operand}`, operandMs: (nowMs) => nowMs + signed };
  }
  const absoluteMs = Date.parse(operand);
  if (Number.isNaN(absoluteMs)) return undefined;
  return { op, text: `${op} ${operand}`, operandMs: () => absoluteMs };
}

function compare(actual: number, op: Comparison, operand: number): boolean {
  switch (op) {
    case '<':
      return actual < operand;
    case '<=':
      return actual <= operand;
    case '>':
      return actual > operand;
    case '>=':
      return actual >= operand;
    case '==':
      return actual === operand;
    case '!=':
      return actual !== operand;
  }
}

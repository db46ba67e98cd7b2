import type { FrontmatterData } from './frontmatter.ts';

/** A condition on one frontmatter key: a value (equality) or operators, all of which must hold. */
export type FieldCondition =
  | string
  | number
  | boolean
  | null
  | unknown[]
  | {
      eq?: unknown;
      ne?: unknown;
      gt?: string | number | undefined;
      gte?: string | number | undefined;
      lt?: string | number | undefined;
      lte?: string | number | undefined;
      exists?: boolean | undefined;
      in?: unknown[] | undefined;
    };

/** Conditions on frontmatter keys; a dotted key (`classifications.human`) reaches into nested mappings. */
export type NoteWhere = Record<string, FieldCondition>;

function valueAt(data: FrontmatterData, key: string): unknown {
  let current: unknown = data;
  for (const part of key.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

// Ranges compare numbers as numbers and anything else as strings, which orders ISO dates correctly.
function compare(left: unknown, right: string | number): number | undefined {
  if (typeof left === 'number' && typeof right === 'number') return left - right;
  if (typeof left === 'string' && typeof right === 'string') return left < right ? -1 : left > right ? 1 : 0;
  return undefined;
}

const same = (left: unknown, right: unknown) => JSON.stringify(left) === JSON.stringify(right);

/** True when `data` meets every condition of `where`. */
export function matchesWhere(data: FrontmatterData, where: NoteWhere): boolean {
  for (const [key, condition] of Object.entries(where)) {
    const value = valueAt(data, key);
    if (condition === null || typeof condition !== 'object' || Array.isArray(condition)) {
      if (!same(value, condition)) return false;
      continue;
    }
    if (condition.exists !== undefined && (value !== undefined) !== condition.exists) return false;
    if ('eq' in condition && !same(value, condition.eq)) return false;
    if ('ne' in condition && same(value, condition.ne)) return false;
    if (condition.in !== undefined && !condition.in.some((option) => same(value, option))) return false;
    const ranges: [string | number | undefined, (difference: number) => boolean][] = [
      [condition.gt, (difference) => difference > 0],
      [condition.gte, (difference) => difference >= 0],
      [condition.lt, (difference) => difference < 0],
      [condition.lte, (difference) => difference <= 0],
    ];
    for (const [bound, holds] of ranges) {
      if (bound === undefined) continue;
      const difference = compare(value, bound);
      if (difference === undefined || !holds(difference)) return false;
    }
  }
  return true;
}

/**
 * Parses `--where key=value` flags: `status=new`, `confidence>=0.8`, `date<2026-12-01`, `archived?` (exists),
 * `!archived?` (does not exist). Numbers, true, false and null are read as such; anything else is a string.
 */
export function parseWhereFlag(text: string): [string, FieldCondition] {
  const exists = /^(!?)([\w.-]+)\?$/.exec(text);
  if (exists) return [exists[2] ?? '', { exists: exists[1] !== '!' }];
  const match = /^([\w.-]+)(>=|<=|!=|=|>|<)(.*)$/.exec(text);
  if (!match) throw new Error(`\`${text}\` is not a condition: use key=value, key>=value, key<value, key? or !key?`);
  const [, key = '', operator, raw = ''] = match;
  const value: string | number | boolean | null =
    raw === 'true'
      ? true
      : raw === 'false'
        ? false
        : raw === 'null'
          ? null
          : raw !== '' && Number.isFinite(Number(raw))
            ? Number(raw)
            : raw;
  switch (operator) {
    case '=':
      return [key, value];
    case '!=':
      return [key, { ne: value }];
    default: {
      if (typeof value !== 'number' && typeof value !== 'string')
        throw new Error(`\`${text}\`: compare with a number or a date`);
      const name = { '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' }[operator as '>' | '>=' | '<' | '<='];
      return [key, { [name]: value }];
    }
  }
}

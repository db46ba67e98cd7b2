// The hot path's task encoding: the plain block YAML that `stringifyTask` writes for an ordinary task, read and
// written without building the `yaml` library's document (its lexer, parser, composer and node tree cost more CPU
// per task than everything else the worker does for a `system.echo`, and most of its garbage). The files are the
// same bytes either way: people, `ls`, editors and every other reader see the YAML they always did.
//
// Both directions accept only a narrow, unambiguous subset and answer `undefined` for anything else, which then
// goes the slow way (the library, with its limits and error messages): a hand-edited file with a comment, a flow
// collection, a block scalar, a quoted key, a float, a non-ASCII character, a blank line or an odd indentation is
// never read here. Within the subset each direction agrees with the library exactly (task-yaml-fast.test.ts checks
// both against it with generated tasks and texts).

/** Deeper than this the fast path gives up; the slow path applies the real limit (maxTaskFileNestingDepth). */
const maxFastDepth = 16;

/** YAML 1.2 core-schema scalars that are not strings: a plain scalar matching one is read as a number, bool or null. */
const coreNonString = [
  /^(?:~|[Nn]ull|NULL)$/,
  /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/,
  /^[-+]?[0-9]+$/,
  /^0o[0-7]+$/,
  /^0x[0-9a-fA-F]+$/,
  /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$/,
  /^[-+]?\.(?:inf|Inf|INF)$/,
  /^\.(?:nan|NaN|NAN)$/,
];

/** Printable ASCII only: no tabs, line breaks, control or non-ASCII characters. */
const printableAscii = /^[\x20-\x7e]+$/;
/** Characters that mean something at the start of a plain scalar (indicators), and a leading space. */
const indicatorStart = /^[-?:,[\]{}#&*!|>'"%@`<=~ ]/;

/**
 * A string the library writes, and reads back, as a plain scalar with nothing special about it: printable ASCII,
 * no indicator first, no `: ` or ` #` inside, no space or colon last, and nothing the core schema reads as another
 * type. Stricter than YAML needs (`-a` could be plain), never looser.
 */
function isPlainSafe(text: string): boolean {
  return (
    text.length <= maxPlainLength &&
    printableAscii.test(text) &&
    !indicatorStart.test(text) &&
    !text.endsWith(' ') &&
    !text.endsWith(':') &&
    !text.includes(': ') &&
    !text.includes(' #') &&
    !coreNonString.some((pattern) => pattern.test(text))
  );
}

/** Longer keys must be written as explicit keys (`? …`); values of this length are left to the library too. */
const maxPlainLength = 1_000;

const integerText = /^-?(?:0|[1-9][0-9]{0,15})$/;

/** A scalar as the fast path reads it; `undefined` (not a value) when it is not one it knows. */
function readScalar(text: string): { value: unknown } | undefined {
  switch (text) {
    case 'null':
      return { value: null };
    case 'true':
      return { value: true };
    case 'false':
      return { value: false };
    case '{}':
      return { value: {} };
    case '[]':
      return { value: [] };
    case '""':
      return { value: '' };
  }
  if (integerText.test(text)) {
    const value = Number(text);
    return Number.isSafeInteger(value) && text !== '-0' ? { value } : undefined;
  }
  if (text.length > 2 && text.startsWith('"') && text.endsWith('"')) {
    // Double-quoted without an escape: every character between the quotes is itself.
    const inner = text.slice(1, -1);
    return printableAscii.test(inner) && !inner.includes('"') && !inner.includes('\\') ? { value: inner } : undefined;
  }
  return isPlainSafe(text) ? { value: text } : undefined;
}

class NotFast extends Error {}

/**
 * The data of a task file's text, as `parseDocument(text).toJS()` gives it, when the text is in the fast subset;
 * `undefined` when it is not (the caller then parses it the slow way, which also reports any problem).
 */
export function readTaskYamlFast(text: string): Record<string, unknown> | undefined {
  if (text.length === 0 || !text.endsWith('\n')) return undefined;
  const lines = text.slice(0, -1).split('\n');
  let index = 0;

  const indentOf = (line: string): number => {
    let spaces = 0;
    while (line.charCodeAt(spaces) === 32) spaces += 1;
    return spaces;
  };

  const readMapping = (indent: number, depth: number): Record<string, unknown> => {
    if (depth > maxFastDepth) throw new NotFast();
    const mapping: Record<string, unknown> = {};
    while (index < lines.length) {
      const line = lines[index] as string;
      if (indentOf(line) !== indent) break;
      const rest = line.slice(indent);
      if (rest.startsWith('- ') || rest === '-') break;
      const separator = rest.indexOf(': ');
      let key: string;
      let value: unknown;
      index += 1;
      if (separator < 0) {
        if (!rest.endsWith(':')) throw new NotFast();
        key = rest.slice(0, -1);
        value = readNested(indent + 2, depth + 1);
      } else {
        key = rest.slice(0, separator);
        const scalar = readScalar(rest.slice(separator + 2));
        if (!scalar) throw new NotFast();
        value = scalar.value;
      }
      // Duplicate keys are an error the slow path reports; `__proto__` would not be a plain key of an object.
      if (!isPlainSafe(key) || key === '__proto__' || Object.hasOwn(mapping, key)) throw new NotFast();
      mapping[key] = value;
    }
    return mapping;
  };

  const readNested = (indent: number, depth: number): unknown => {
    const next = lines[index];
    if (next === undefined || indentOf(next) !== indent) throw new NotFast();
    const rest = next.slice(indent);
    return rest.startsWith('- ') ? readSequence(indent) : readMapping(indent, depth);
  };

  const readSequence = (indent: number): unknown[] => {
    const items: unknown[] = [];
    while (index < lines.length) {
      const line = lines[index] as string;
      if (indentOf(line) !== indent || !line.startsWith('- ', indent)) break;
      // Items are scalars or empty collections only: `- key: value` and `- - x` go the slow way.
      const scalar = readScalar(line.slice(indent + 2));
      if (!scalar) throw new NotFast();
      items.push(scalar.value);
      index += 1;
    }
    return items;
  };

  try {
    const data = readMapping(0, 1);
    // A line left over (deeper, or a sequence at the top) is something the subset does not describe.
    return index === lines.length ? data : undefined;
  } catch (error) {
    if (error instanceof NotFast) return undefined;
    throw error;
  }
}

/** A scalar as the fast path writes it, or `undefined` when it is not one it writes. */
function writeScalar(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (value === true) return 'true';
  if (value === false) return 'false';
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && !Object.is(value, -0) ? String(value) : undefined;
  }
  if (typeof value === 'string') {
    if (value === '') return '""';
    return isPlainSafe(value) ? value : undefined;
  }
  if (Array.isArray(value)) return value.length === 0 ? '[]' : undefined;
  if (typeof value === 'object' && isPlainObject(value) && Object.keys(value).length === 0) return '{}';
  return undefined;
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * The text `stringifyTask` writes for a task file's data (`taskFileData`), byte for byte, when every key and value is
 * in the fast subset; `undefined` otherwise (the caller then writes it with the library).
 */
export function writeTaskYamlFast(data: Record<string, unknown>): string | undefined {
  const out: string[] = [];
  const writeMapping = (mapping: Record<string, unknown>, indent: number, depth: number): boolean => {
    if (depth > maxFastDepth) return false;
    const pad = ' '.repeat(indent);
    for (const key of Object.keys(mapping)) {
      if (!isPlainSafe(key) || key === '__proto__') return false;
      const value = mapping[key];
      const scalar = writeScalar(value);
      if (scalar !== undefined) {
        out.push(`${pad}${key}: ${scalar}\n`);
        continue;
      }
      if (Array.isArray(value)) {
        out.push(`${pad}${key}:\n`);
        for (const item of value) {
          // Items are scalars or empty collections only, as the reader takes them.
          const written = writeScalar(item);
          if (written === undefined) return false;
          out.push(`${pad}  - ${written}\n`);
        }
        continue;
      }
      if (typeof value === 'object' && value !== null && isPlainObject(value)) {
        out.push(`${pad}${key}:\n`);
        if (!writeMapping(value, indent + 2, depth + 1)) return false;
        continue;
      }
      return false;
    }
    return true;
  };
  return writeMapping(data, 0, 1) ? out.join('') : undefined;
}

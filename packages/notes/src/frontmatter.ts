import { isMap, isScalar, LineCounter, type Pair, parseDocument, type Scalar, stringify } from 'yaml';

/** A note's text cut into its parts, with the offsets needed to edit one part without touching the others. */
export interface NoteParts {
  /** The YAML between the `---` lines, without them; '' when the note has no frontmatter. */
  frontmatter: string;
  /** Everything after the closing `---` line, byte for byte. */
  body: string;
  /** Offset of `frontmatter` in the whole text. */
  frontmatterStart: number;
  hasFrontmatter: boolean;
}

const opening = /^---[ \t]*\r?\n/;
const closing = /(^|\n)---[ \t]*(\r?\n|$)/;

/** Splits a note into frontmatter and body. A note without a leading `---` line (or no closing one) is all body. */
export function splitNote(text: string): NoteParts {
  const open = opening.exec(text);
  if (!open) return { frontmatter: '', body: text, frontmatterStart: 0, hasFrontmatter: false };
  const start = open[0].length;
  const rest = text.slice(start);
  const close = closing.exec(rest);
  if (!close) return { frontmatter: '', body: text, frontmatterStart: 0, hasFrontmatter: false };
  const end = close.index + (close[1] ?? '').length;
  return {
    frontmatter: rest.slice(0, end),
    body: rest.slice(close.index + close[0].length),
    frontmatterStart: start,
    hasFrontmatter: true,
  };
}

/** Frontmatter that is not valid YAML or not a mapping: where, and why. */
export class FrontmatterError extends Error {
  override name = 'FrontmatterError';
  readonly line: number;
  readonly column: number;

  constructor(message: string, line: number, column: number) {
    super(`line ${line}, column ${column}: ${message}`);
    this.line = line;
    this.column = column;
  }
}

export type FrontmatterData = Record<string, unknown>;

/**
 * Frontmatter this process parsed lately, by its exact text, most recently used last. The worker reads back what it
 * has just written (a mail's note is created, read by its rules, updated with its classification, read again to
 * act), and parsing YAML was the largest share of its CPU in an inbox drain (docs/performance.md, issue 38): a text
 * seen before is cloned from here instead. Only successful parses are kept; a text that fails is parsed, and
 * reported, every time. Bounded in entries, in the size of a text kept and in the characters kept in all: enough for
 * the notes between a mail's collection and its classification (the model's backlog and what is in flight), which
 * at 128 entries had left the cache before they were read again.
 */
const parsedFrontmatter = new Map<string, FrontmatterData>();
const parsedFrontmatterEntries = 1024;
const parsedFrontmatterMaxChars = 16_384;
const parsedFrontmatterTotalChars = 1_000_000;
let parsedFrontmatterChars = 0;

/** Keeps `data` as what `text` parses to, most recently used last, within the bounds above. */
function keepParsed(text: string, data: FrontmatterData): void {
  const known = parsedFrontmatter.get(text);
  if (known !== undefined) {
    parsedFrontmatter.delete(text);
    parsedFrontmatterChars -= text.length;
  }
  parsedFrontmatter.set(text, data);
  parsedFrontmatterChars += text.length;
  while (parsedFrontmatter.size > parsedFrontmatterEntries || parsedFrontmatterChars > parsedFrontmatterTotalChars) {
    const oldest = parsedFrontmatter.keys().next().value as string;
    parsedFrontmatter.delete(oldest);
    parsedFrontmatterChars -= oldest.length;
  }
}

/** Parses frontmatter text into plain data. Dates stay strings (YAML 1.2 core schema has no timestamps). */
export function parseFrontmatter(text: string, lineOffset = 1): FrontmatterData {
  const known = parsedFrontmatter.get(text);
  if (known !== undefined) {
    keepParsed(text, known);
    // A copy: callers own what they are given, and may change it.
    return structuredClone(known);
  }
  const data = parseFrontmatterText(text, lineOffset);
  if (text.length <= parsedFrontmatterMaxChars) keepParsed(text, structuredClone(data));
  return data;
}

/**
 * Tells the cache what `text` parses to, when this process has just made `text` from `data` (`updateFrontmatterText`):
 * the note store writes a note and hands it back, and reads it again a moment later, and neither need parse what it
 * wrote. Only when the answer is certain: every value is plain JSON (strings, finite numbers, booleans, null, arrays
 * and plain objects of them, which YAML writes and reads back unchanged), and every top-level key is a plain name, as
 * the notes Assistant writes have (not one YAML reads as a boolean or null). Otherwise the text is parsed when it is
 * read, as any other. A property test holds it to a fresh parse over generated notes, keys and changes.
 */
export function rememberFrontmatter(text: string, data: FrontmatterData): void {
  if (text.length > parsedFrontmatterMaxChars || !keysWrittenPlainly(text, data) || !isPlainJson(data, 0)) return;
  keepParsed(text, structuredClone(data));
}

const plainKeyLine = /^([A-Za-z_][A-Za-z0-9_-]*):(?:[ \t]|$)/;
const yamlWords = /^(?:null|Null|NULL|true|True|TRUE|false|False|FALSE)$/;

/**
 * Whether the text's top-level keys are exactly `data`'s, each a plain name at the start of its own line. The data
 * is the old note's with the changes, so a key the text writes another way (`1: one`, `"x": 2`, `? [a, b]`), which
 * a change under the name `1` would neither find nor remove, makes the two disagree: then nothing is remembered.
 * Lines that start with a space (values, continued), comments and blank lines are not keys.
 */
function keysWrittenPlainly(text: string, data: FrontmatterData): boolean {
  const keys = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith(' ') || line.startsWith('#')) continue;
    const key = plainKeyLine.exec(line)?.[1];
    if (key === undefined || yamlWords.test(key) || keys.has(key)) return false;
    keys.add(key);
  }
  const names = Object.keys(data);
  return names.length === keys.size && names.every((name) => keys.has(name));
}

function isPlainJson(value: unknown, depth: number): boolean {
  if (depth > 32) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isPlainJson(item, depth + 1));
  if (typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return false;
  return Object.values(value).every((item) => isPlainJson(item, depth + 1));
}

function parseFrontmatterText(text: string, lineOffset: number): FrontmatterData {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const problem = document.errors[0];
  if (problem) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    throw new FrontmatterError(problem.message.split('\n')[0] ?? problem.message, line + lineOffset, col);
  }
  const data: unknown = document.toJS({ maxAliasCount: 100 });
  if (data === null || data === undefined) return {};
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new FrontmatterError('frontmatter must be a mapping of `key: value` lines', lineOffset + 1, 1);
  }
  return data as FrontmatterData;
}

/** Top-level changes: a value sets the key, `undefined` removes it. */
export type FrontmatterChanges = Record<string, unknown>;

/**
 * Applies top-level key changes to frontmatter text, leaving every byte that was not changed as it was: comments,
 * key order, quoting, blank lines, other keys' formatting. A changed value is spliced in place of the old one; a
 * new key is appended at the end; a removed key loses its line(s). Dumping the whole document again would
 * reformat what the person wrote.
 */
export function updateFrontmatterText(text: string, changes: FrontmatterChanges): string {
  const document = parseDocument(text, { uniqueKeys: true, keepSourceTokens: true });
  if (document.errors.length > 0) throw new Error('cannot update frontmatter that does not parse');
  const contents = document.contents;
  if (contents !== null && !isMap(contents)) throw new Error('cannot update frontmatter that is not a mapping');
  const pairs = contents ? (contents.items as Pair[]) : [];
  const edits: { start: number; end: number; text: string }[] = [];
  const appended: string[] = [];
  for (const [key, value] of Object.entries(changes)) {
    const pair = pairs.find((item) => isScalar(item.key) && (item.key as Scalar).value === key);
    if (!pair) {
      if (value !== undefined) appended.push(serializePair(key, value));
      continue;
    }
    const keyNode = pair.key as Scalar;
    const keyStart = keyNode.range?.[0] ?? 0;
    const lineStart = text.lastIndexOf('\n', keyStart - 1) + 1;
    const valueNode = pair.value as { range?: [number, number, number] } | null;
    // The pair ends where its value node ends, including the value's own trailing comment and newline.
    const valueEnd = valueNode?.range?.[2] ?? keyNode.range?.[2] ?? keyStart;
    const pairEnd = endOfLine(text, valueEnd);
    if (value === undefined) {
      edits.push({ start: lineStart, end: pairEnd, text: '' });
      continue;
    }
    const scalarOnOneLine =
      valueNode !== null &&
      isScalar(valueNode) &&
      isSimple(value) &&
      !text.slice(valueNode.range?.[0] ?? 0, valueNode.range?.[1] ?? 0).includes('\n');
    if (scalarOnOneLine && valueNode?.range) {
      // Keep the key, the spacing and any comment after the value: replace just the value's characters.
      edits.push({ start: valueNode.range[0], end: valueNode.range[1], text: serializeInline(value) });
    } else {
      const indent = text.slice(lineStart, keyStart);
      edits.push({ start: lineStart, end: pairEnd, text: indentLines(serializePair(key, value), indent) });
    }
  }
  let result = text;
  for (const edit of edits.sort((left, right) => right.start - left.start)) {
    result = result.slice(0, edit.start) + edit.text + result.slice(edit.end);
  }
  if (appended.length > 0) {
    if (result.length > 0 && !result.endsWith('\n')) result += '\n';
    result += appended.join('');
  }
  return result;
}

function endOfLine(text: string, offset: number): number {
  const newline = text.indexOf('\n', Math.max(0, offset - 1));
  if (newline === -1) return text.length;
  // The value's range may already end after its newline.
  return offset > newline ? offset : newline + 1;
}

function isSimple(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function serializeInline(value: unknown): string {
  const text = stringify(value, { lineWidth: 0 }).replace(/\n$/, '');
  // A multi-line string serialises as a block scalar; that cannot sit on the key's line without its header.
  return text.includes('\n') ? JSON.stringify(value) : text;
}

function serializePair(key: string, value: unknown): string {
  return stringify({ [key]: value }, { lineWidth: 0 });
}

function indentLines(text: string, indent: string): string {
  if (indent === '') return text;
  return text
    .split('\n')
    .map((line) => (line === '' ? line : indent + line))
    .join('\n');
}

/** A whole note's text from frontmatter text and a body. */
export function joinNote(frontmatter: string, body: string): string {
  const block = frontmatter === '' || frontmatter.endsWith('\n') ? frontmatter : `${frontmatter}\n`;
  return `---\n${block}---\n${body}`;
}

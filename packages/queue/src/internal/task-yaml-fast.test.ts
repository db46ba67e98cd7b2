import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Document, parseDocument } from 'yaml';
import { readTaskYamlFast, writeTaskYamlFast } from './task-yaml-fast.ts';

/** What the library writes for the data, as stringifyTask's slow way does (no string is multi-line here). */
function libraryText(data: unknown): string {
  return new Document(data, { aliasDuplicateObjects: false }).toString({ lineWidth: 0 });
}

/** What the library reads from the text, or undefined when it reports an error or a warning. */
function libraryData(text: string): unknown {
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  if (document.errors.length > 0 || document.warnings.length > 0) return undefined;
  return document.toJS() ?? {};
}

// Strings that sit on every edge of the subset: indicators, colons and hashes, look-alikes of other types, spaces at
// the ends, quotes and backslashes, tabs, line breaks and characters outside ASCII.
const edgy = fc.constantFrom(
  '',
  ' ',
  'a',
  'hello world',
  'Re: meeting',
  'a:b',
  'key:',
  'a #b',
  'a#b',
  '#a',
  '-a',
  '- a',
  'a - b',
  '?a',
  '@x',
  '`x',
  '&x',
  '*x',
  '!x',
  '|x',
  '>x',
  '%x',
  '{x}',
  '[x]',
  'a,b',
  "it's",
  'a "q"',
  '"q"',
  "'q'",
  'a\\b',
  'x ',
  ' x',
  'true',
  'True',
  'TRUE',
  'yes',
  'no',
  'on',
  'null',
  'Null',
  '~',
  '12',
  '-3',
  '+4',
  '007',
  '1.5',
  '.5',
  '1e5',
  '1_000',
  '0x1f',
  '0o17',
  '.inf',
  '-.inf',
  '.nan',
  '2026-11-29T08:00:00.000Z',
  '01m81zbz7e0rvw1d46qzvhsksj',
  'host-12-ab3f',
  'system.echo',
  '/path/to/note.md',
  'a\tb',
  'a\nb',
  'é',
  'a: b: c',
  '__proto__',
  'constructor',
  '<<',
  '=',
  'a'.repeat(1_001),
);
const text = fc.oneof(
  edgy,
  fc.string({ maxLength: 12 }),
  fc.string({ unit: fc.constantFrom('a', ' ', ':', '#', '-', '"', "'", '1', '.', 'e', '\\'), maxLength: 8 }),
);
const scalar = fc.oneof(
  text,
  fc.integer(),
  fc.constantFrom(0, -0, 1.5, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 2, 1e21, -7),
  fc.boolean(),
  fc.constant(null),
);
const value = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(text, tie('value'), { maxKeys: 4 }),
  ),
})).value;
const taskData = fc.record({
  id: fc.constant('01m81zbz7e0rvw1d46qzvhsksj'),
  type: fc.constantFrom('system.echo', 'email.personal.classify'),
  priority: fc.integer({ min: 0, max: 9 }),
  created_at: fc.constant('2026-11-22T11:00:00.000Z'),
  source: fc.constantFrom('cli', 'api', 'scheduler'),
  payload: value,
  attempts: fc.nat(5),
  worker: fc.record({ id: fc.constant('host-1-abc'), pid: fc.nat(), host: text }),
  result: value,
});

describe('writeTaskYamlFast', () => {
  it('writes an ordinary task as the library writes it', () => {
    const data = {
      id: '01m81zbz7e0rvw1d46qzvhsksj',
      type: 'system.echo',
      priority: 5,
      created_at: '2026-11-22T11:00:00.000Z',
      source: 'cli',
      payload: { i: 3, text: 'hello world', tags: ['a', 'b'], none: null, empty: {}, list: [] },
      attempts: 1,
      worker: { id: 'host-1-abc', pid: 12, host: 'host' },
    };
    const written = writeTaskYamlFast(data);
    expect(written).toBeDefined();
    expect(written).toBe(libraryText(data));
    expect(readTaskYamlFast(written as string)).toEqual(data);
  });

  it('either writes what the library writes, byte for byte, or leaves it to the library', () => {
    fc.assert(
      fc.property(taskData, (data) => {
        const written = writeTaskYamlFast(data);
        if (written !== undefined) expect(written).toBe(libraryText(data));
      }),
      { numRuns: 2_000 },
    );
  });
});

describe('readTaskYamlFast', () => {
  it('reads what it writes, and what the library writes, as the library reads it', () => {
    fc.assert(
      fc.property(taskData, (data) => {
        const written = libraryText(data);
        const read = readTaskYamlFast(written);
        if (read !== undefined) expect(read).toEqual(libraryData(written));
        const fast = writeTaskYamlFast(data);
        // Whatever the fast writer writes, the fast reader takes back whole.
        if (fast !== undefined) expect(readTaskYamlFast(fast)).toEqual(libraryData(fast));
        if (fast !== undefined) expect(readTaskYamlFast(fast)).toBeDefined();
      }),
      { numRuns: 2_000 },
    );
  });

  it('reads any text either as the library does or not at all', () => {
    // Lines of YAML-ish pieces at random indentations: hand edits, half-written files, near misses.
    const piece = fc.oneof(
      edgy,
      fc.constantFrom('', '{}', '[]', '""', '"a b"', '"a\\"b"', "'a'", '|', '>', '&a x', '*a', '!tag x', '? k', '# c'),
    );
    const line = fc
      .tuple(
        fc.constantFrom(0, 0, 2, 2, 4, 1, 3),
        fc.boolean(),
        fc.constantFrom('a', 'b', 'payload', 'x y', '"k"', '1'),
        piece,
        fc.constantFrom(': ', ':', ' : ', ''),
      )
      .map(
        ([indent, dash, key, rest, separator]) => `${' '.repeat(indent)}${dash ? '- ' : ''}${key}${separator}${rest}`,
      );
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 8 }), fc.boolean(), (lines, newline) => {
        const source = lines.join('\n') + (newline ? '\n' : '');
        const read = readTaskYamlFast(source);
        if (read !== undefined) expect(read).toEqual(libraryData(source));
      }),
      { numRuns: 5_000 },
    );
  });

  it('leaves hand-written forms to the library', () => {
    for (const source of [
      'payload: {text: hello}\n',
      '# a comment\npayload: x\n',
      'payload: x # trailing\n',
      'payload: |\n  two\n  lines\n',
      'payload:\n- a\n',
      'payload: 1.5\n',
      'payload: x\n\nattempts: 1\n',
      'payload: x\r\n',
      'payload: x',
      'payload: x\npayload: y\n',
      'payload:\n  - a: 1\n',
      '---\npayload: x\n',
      'payload: é\n',
    ]) {
      expect(readTaskYamlFast(source), source).toBeUndefined();
    }
  });
});

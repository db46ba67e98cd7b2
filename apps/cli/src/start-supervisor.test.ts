import { describe, expect, it } from 'vitest';
import { crashLine, createLinePrefixer, plainStartArguments } from './start-supervisor.js';

function collect(options: { maxLineChars?: number } = {}) {
  const writes: string[] = [];
  const prefixer = createLinePrefixer({ prefix: '[server] ', write: (text) => writes.push(text), ...options });
  return { prefixer, writes };
}

describe('createLinePrefixer', () => {
  it('prefixes each line and writes whole lines only', () => {
    const { prefixer, writes } = collect();
    prefixer.push('one\ntw');
    prefixer.push('o\nthree');
    expect(writes).toEqual(['[server] one\n', '[server] two\n']);
    prefixer.end();
    expect(writes).toEqual(['[server] one\n', '[server] two\n', '[server] three\n']);
  });

  it('writes several complete lines in one write', () => {
    const { prefixer, writes } = collect();
    prefixer.push('a\nb\n\nc\n');
    expect(writes).toEqual(['[server] a\n[server] b\n[server] \n[server] c\n']);
  });

  it('keeps a UTF-8 character that arrives split across chunks', () => {
    const { prefixer, writes } = collect();
    const bytes = Buffer.from('café ☕\n');
    prefixer.push(bytes.subarray(0, 4));
    prefixer.push(bytes.subarray(4, 8));
    prefixer.push(bytes.subarray(8));
    expect(writes).toEqual(['[server] café ☕\n']);
  });

  it('writes nothing at the end when the output ended with a newline', () => {
    const { prefixer, writes } = collect();
    prefixer.push('done\n');
    prefixer.end();
    expect(writes).toEqual(['[server] done\n']);
  });

  it('writes an endless line in pieces instead of holding it', () => {
    const { prefixer, writes } = collect({ maxLineChars: 4 });
    prefixer.push('abcdefgh');
    expect(writes).toEqual(['[server] abcdefgh\n']);
  });

  it('leaves out the lines `swallow` takes, and writes nothing when it took them all', () => {
    const taken: string[] = [];
    const writes: string[] = [];
    const prefixer = createLinePrefixer({
      prefix: '[worker] ',
      write: (text) => writes.push(text),
      swallow: (line) => line.startsWith('\u001e') && taken.push(line) > 0,
    });
    prefixer.push('\u001ebeat 60000\n');
    expect(writes).toEqual([]);
    prefixer.push('a\n\u001ebeat 60000\nb\n');
    expect(writes).toEqual(['[worker] a\n[worker] b\n']);
    expect(taken).toEqual(['\u001ebeat 60000', '\u001ebeat 60000']);
  });
});

describe('plainStartArguments', () => {
  it('takes a plain start with its global options, in any order', () => {
    expect(plainStartArguments(['start'])).toEqual({ config: undefined, data: undefined });
    expect(plainStartArguments(['--config', 'c.yaml', 'start', '--data=d'])).toEqual({ config: 'c.yaml', data: 'd' });
    expect(plainStartArguments(['start', '--verbose'])).toEqual({ config: undefined, data: undefined, verbose: true });
  });

  it('leaves everything else to the full command line, which explains it', () => {
    for (const argv of [
      [],
      ['serve'],
      ['start', 'now'],
      ['start', '--help'],
      ['start', '--preflight'],
      ['start', '--confg', 'x'],
      ['start', '--config'],
      ['start', '--config='],
    ]) {
      expect(plainStartArguments(argv), argv.join(' ')).toBeUndefined();
    }
  });
});

describe('crashLine', () => {
  it('picks the line of a crashed Node process that says what went wrong, and nothing else', () => {
    expect(crashLine('Error: boom')).toBe('Error: boom');
    expect(crashLine('TypeError [ERR_INVALID_ARG_TYPE]: bad')).toBe('TypeError [ERR_INVALID_ARG_TYPE]: bad');
    expect(crashLine('FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory')).toMatch(
      /^FATAL ERROR: /,
    );
    for (const line of [
      "  throw new Error('boom');",
      '    at run (file:///x.ts:1:2)',
      'Node.js v24.1.0',
      'Errors: 3',
      '',
    ]) {
      expect(crashLine(line)).toBeUndefined();
    }
    expect(crashLine(`Error: ${'x'.repeat(1_000)}`)).toHaveLength(501);
  });
});

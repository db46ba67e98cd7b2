import { describe, expect, it } from 'vitest';
import { parseTaskFile, stringifyTask, type Task, TaskFileError } from './task-file.ts';
import type { TaskName } from './task-name.ts';

const name: TaskName = {
  priority: 5,
  readyAtMs: Date.UTC(2026, 10, 22, 12),
  id: '01m81zbz7e0rvw1d46qzvhsksj',
  fingerprint: '0123456789abcdef',
  type: 'system.echo',
};
const options = { name, defaultMaxAttempts: 3, createdAtMs: Date.UTC(2026, 10, 22, 11) };

describe('parseTaskFile', () => {
  it('fills a hand-written file from its name and the defaults', () => {
    expect(parseTaskFile('payload: {text: hello}\n', options)).toEqual({
      id: name.id,
      type: 'system.echo',
      priority: 5,
      createdAt: '2026-11-22T11:00:00.000Z',
      readyAt: '2026-11-22T12:00:00.000Z',
      source: 'file',
      payload: { text: 'hello' },
      attempts: 0,
      maxAttempts: 3,
      history: [],
    });
    expect(parseTaskFile('', options).payload).toBeNull();
  });

  it('round-trips what it writes', () => {
    const task: Task = {
      ...parseTaskFile('payload: [1, "two", {three: 3.5}]\n', options),
      attempts: 2,
      startedAt: '2026-11-22T12:00:01.000Z',
      worker: { id: 'host-1-abc', pid: 1, host: 'host' },
      history: [
        {
          attempt: 1,
          startedAt: '2026-11-22T12:00:00.000Z',
          finishedAt: '2026-11-22T12:00:00.500Z',
          worker: 'host-1-abc',
          error: { type: 'Error', message: 'line one\nline two: with colon', stack: 'Error: x\n    at y' },
        },
      ],
      onResult: { note: 'services/x' },
    };
    expect(parseTaskFile(stringifyTask(task), options)).toEqual(task);
  });

  it('lets the name win over the content for priority and ready time', () => {
    const task = parseTaskFile('priority: 1\nready_at: 2030-01-01T00:00:00Z\n', options);
    expect(task.priority).toBe(5);
    expect(task.readyAt).toBe('2026-11-22T12:00:00.000Z');
  });

  it.each([
    ['payload: [\n', /^YAML syntax at line 2/],
    ['payload: 1\npayload: 2\n', /^YAML syntax.*unique/i],
    ['paylod: 1\n', /Unrecognized key.*paylod/],
    ['type: other.type\n', 'type: the file says `other.type` but its name says `system.echo`'],
    ['attempts: -1\n', /^attempts: /],
    ['- just\n- a list\n', /expected object/i],
    ['payload: !secret x\n', /^YAML syntax at line 1, column 10: .*tag/i],
  ])('refuses %j with a reason', (text, reason) => {
    expect(() => parseTaskFile(text, options)).toThrow(TaskFileError);
    expect(() => parseTaskFile(text, options)).toThrow(reason);
  });

  it('refuses alias bombs and oversized files before expanding them', () => {
    const bomb = [
      'a: &a [x, x, x, x, x, x, x, x, x, x]',
      ...Array.from({ length: 9 }, (_, index) => {
        const previous = String.fromCharCode(97 + index);
        const current = String.fromCharCode(98 + index);
        return `${current}: &${current} [*${previous}, *${previous}, *${previous}, *${previous}, *${previous}, *${previous}, *${previous}, *${previous}, *${previous}, *${previous}]`;
      }),
      'payload: *j',
    ].join('\n');
    expect(() => parseTaskFile(bomb, options)).toThrow(TaskFileError);
    expect(() => parseTaskFile(`payload: "${'x'.repeat(2_000)}"\n`, { ...options, maxBytes: 1_024 })).toThrow(
      /bytes; the limit is 1024/,
    );
  });

  it('hole 17: refuses a 200 000-deep YAML sequence, block or flow, before parsing it', () => {
    const block = `payload:\n${'- '.repeat(200_000)}x\n`;
    const flow = `payload: ${'['.repeat(200_000)}${']'.repeat(200_000)}\n`;
    const indented = `payload:\n${Array.from({ length: 100 }, (_, level) => `${' '.repeat(level)}k${level}:`).join('\n')} 1\n`;
    for (const text of [block, flow, indented]) {
      expect(() => parseTaskFile(text, options)).toThrow(TaskFileError);
      expect(() => parseTaskFile(text, options)).toThrow(
        /^nested more than 65 levels deep; the limit is 65 for a task file, 64 for its payload \(maxTaskNestingDepth\)$/,
      );
    }
  });

  it('hole 17: refuses nesting that only aliases reveal', () => {
    // Each anchor is shallow in the text, but holds the one before: about 30 + 29 + 29 levels once expanded.
    const lines = [`a0: &a0 ${'['.repeat(30)}1${']'.repeat(30)}`];
    for (let index = 1; index < 3; index++) {
      lines.push(`a${index}: &a${index} ${'['.repeat(29)}*a${index - 1}${']'.repeat(29)}`);
    }
    lines.push('payload: *a2');
    expect(() => parseTaskFile(lines.join('\n'), options)).toThrow(/^nested more than 65 levels deep through aliases/);
  });

  it('accepts a payload exactly at the nesting limit', () => {
    let payload: Task['payload'] = 'leaf';
    for (let level = 0; level < 64; level++) payload = level % 2 === 0 ? [payload] : { key: payload };
    const task: Task = { ...parseTaskFile('', options), payload };
    expect(parseTaskFile(stringifyTask(task), options)).toEqual(task);
  });

  it('hole 19: strings whose first lines hold only spaces or tabs come back byte for byte', () => {
    const base = parseTaskFile('', options);
    for (const text of [' \n', ' \n\t\n', '  \n\n x', '\t \n', '\n', 'line one\n  line two\n']) {
      const task: Task = { ...base, payload: { text, [text]: [text] } };
      expect(parseTaskFile(stringifyTask(task), options), JSON.stringify(text)).toEqual(task);
    }
  });
});

import type { Task, TaskRecord } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { formatLocalTime } from './format-local-time.ts';
import { formatTaskRecord } from './format-task-record.ts';

const task: Task = {
  id: '01m81zbz7e0rvw1d46qzvhsksj',
  type: 'email.inbox.check',
  priority: 3,
  createdAt: '2026-11-22T10:00:00.000Z',
  readyAt: '2026-11-22T10:00:00.000Z',
  source: 'scheduler',
  integration: 'email.personal',
  payload: { folder: 'INBOX' },
  attempts: 2,
  maxAttempts: 3,
  startedAt: '2026-11-22T10:01:00.000Z',
  finishedAt: '2026-11-22T10:01:02.500Z',
  worker: { id: 'host-1-abc', pid: 1, host: 'host' },
  error: {
    type: 'TypeError',
    message: 'cannot read properties of undefined',
    stack: 'TypeError: cannot read properties of undefined\n    at check (check.ts:3:7)\n    at run (run.ts:9:1)',
  },
  history: [
    {
      attempt: 1,
      startedAt: '2026-11-22T10:00:00.000Z',
      finishedAt: '2026-11-22T10:00:00.040Z',
      worker: 'host-1-abc',
      error: { type: 'RetryableError', message: 'IMAP said BYE', stack: 'RetryableError: IMAP said BYE\n    at x' },
    },
  ],
};

const record = (fields: Partial<TaskRecord>): TaskRecord => ({
  state: 'failed',
  location: 'queue/failed/f.yaml',
  name: undefined,
  ...fields,
});

const local = (iso: string) => formatLocalTime(new Date(iso));

describe('formatTaskRecord', () => {
  it('aligns the key fields, then payload, error with the frames of an unplanned error, and the history', () => {
    expect(formatTaskRecord(record({ task })).split('\n')).toEqual([
      'id           01m81zbz7e0rvw1d46qzvhsksj',
      'type         email.inbox.check',
      'state        failed',
      'priority     3',
      'source       scheduler',
      'integration  email.personal',
      'attempts     2 of 3',
      `created      ${local(task.createdAt)}`,
      `ready        ${local(task.readyAt)}`,
      `started      ${local('2026-11-22T10:01:00.000Z')}`,
      `finished     ${local('2026-11-22T10:01:02.500Z')} (took 2.5s)`,
      'worker       host-1-abc (pid 1 on host)',
      'file         queue/failed/f.yaml',
      '',
      'payload:',
      '  {"folder":"INBOX"}',
      '',
      'error: TypeError: cannot read properties of undefined',
      '    at check (check.ts:3:7)',
      '    at run (run.ts:9:1)',
      '',
      'history (attempts that ended in an error):',
      `  1. ${local('2026-11-22T10:00:00.000Z')}  40ms  host-1-abc`,
      // An error thrown on purpose to steer the task: its message says it all, the stack is left out.
      '     RetryableError: IMAP said BYE',
    ]);
  });

  it('shows a result, spreading a long one over several lines', () => {
    const done: Task = { ...task, result: { summary: 'x'.repeat(100) }, history: [] };
    delete done.error;
    const text = formatTaskRecord(record({ state: 'done', task: done }));
    expect(text).toContain(`\nresult:\n  {\n    "summary": "${'x'.repeat(100)}"\n  }`);
    expect(text).not.toContain('error:');
    expect(text).not.toContain('history');
  });

  it('shows the problem of a file that cannot be read as a task', () => {
    expect(formatTaskRecord(record({ problem: 'YAML syntax at line 2, column 1: bad' }))).toBe(
      ['state    failed', 'file     queue/failed/f.yaml', 'problem  YAML syntax at line 2, column 1: bad'].join('\n'),
    );
  });
});

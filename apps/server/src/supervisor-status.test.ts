import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { registerSecretValue } from '@assistant/errors';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readSupervisorStatus } from './supervisor-status.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-supervisor-status-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const scrubPaths = (text: string) => text.replaceAll(`${dir}/`, '');

async function writeState(state: unknown): Promise<void> {
  await writeFile(path.join(dir, 'supervisor.json'), JSON.stringify(state));
}

describe('readSupervisorStatus', () => {
  it('reads the restarts `assistant start` recorded, with reasons scrubbed of secrets and the data path', async () => {
    registerSecretValue('supervisor-secret-0123456789');
    await writeState({
      supervisor_pid: 4242,
      started_at: '2026-11-27T09:00:00.000Z',
      processes: {
        worker: {
          pid: null,
          restarts: 1,
          last_restart: {
            at: '2026-11-27T10:00:00.000Z',
            reason: `exited with code 1: Error: token supervisor-secret-0123456789 refused reading ${dir}/notes/x.md`,
            code: 1,
            signal: null,
          },
          next_start_at: '2026-11-27T10:00:01.000Z',
        },
        server: { pid: 12, restarts: 0, started_at: '2026-11-27T09:00:00.000Z' },
      },
    });
    const status = await readSupervisorStatus({ dataDir: dir, scrubPaths, supervisorPid: 4242 });
    expect(status).toEqual([
      { name: 'server', running: true, restarts: 0 },
      {
        name: 'worker',
        running: false,
        restarts: 1,
        last_restart: {
          at: '2026-11-27T10:00:00.000Z',
          reason: expect.stringMatching(/^exited with code 1: Error: token \S+ refused reading notes\/x\.md$/),
          code: 1,
          signal: null,
        },
        next_start_at: '2026-11-27T10:00:01.000Z',
      },
    ]);
    expect(JSON.stringify(status)).not.toContain('supervisor-secret-0123456789');
  });

  it('shows nothing for a file another supervisor left, a broken file, or none', async () => {
    expect(await readSupervisorStatus({ dataDir: dir, scrubPaths, supervisorPid: 1 })).toEqual([]);
    await writeState({ supervisor_pid: 4242, processes: { worker: { pid: 1, restarts: 3 } } });
    expect(await readSupervisorStatus({ dataDir: dir, scrubPaths, supervisorPid: 4243 })).toEqual([]);
    await writeFile(path.join(dir, 'supervisor.json'), '{"supervisor_pid": 42');
    expect(await readSupervisorStatus({ dataDir: dir, scrubPaths, supervisorPid: 42 })).toEqual([]);
  });
});

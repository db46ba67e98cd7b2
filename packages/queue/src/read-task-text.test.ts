import { execFileSync } from 'node:child_process';
import { lstat, mkdir, mkdtemp, open, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readTaskText } from './read-task-text.ts';
import { TaskFileError } from './task-file.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-read-task-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The read's outcome, or `still waiting` when it has not settled within `ms`: a read that blocks fails a test. */
async function settleWithin(read: Promise<string>, ms: number): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const waiting = new Promise<'still waiting'>((resolve) => {
    timer = setTimeout(() => resolve('still waiting'), ms);
  });
  try {
    return await Promise.race([read.catch((error: unknown) => error), waiting]);
  } finally {
    clearTimeout(timer);
  }
}

describe('readTaskText', () => {
  it('reads a regular file', async () => {
    const file = path.join(dir, 'task.yaml');
    await writeFile(file, 'payload: 1\n');
    expect(await readTaskText(file, 1_024)).toBe('payload: 1\n');
  });

  it('hole 17: a FIFO is refused at once, never waited on', async () => {
    const fifo = path.join(dir, 'task.yaml');
    execFileSync('mkfifo', [fifo]);
    const read = readTaskText(fifo, 1_024);
    const outcome = await settleWithin(read, 3_000);
    if (outcome === 'still waiting') {
      // Release the blocked open (a writer arrives, then goes) so the test process is not left with a stuck thread.
      await (await open(fifo, 'w')).close();
      await read.catch(() => {});
    }
    expect(outcome).toBeInstanceOf(TaskFileError);
    expect((outcome as Error).message).toBe('a FIFO (named pipe), not a regular file');
  });

  it('hole 17: a symbolic link is refused, never followed, whether it points at a task, a device or nothing', async () => {
    const target = path.join(dir, 'real.yaml');
    await writeFile(target, 'payload: 1\n');
    for (const [name, to] of [
      ['to-task.yaml', target],
      ['to-zero.yaml', '/dev/zero'],
      ['dangling.yaml', path.join(dir, 'missing.yaml')],
    ] as const) {
      const link = path.join(dir, name);
      await symlink(to, link);
      const outcome = await settleWithin(readTaskText(link, 1_024), 3_000);
      expect(outcome, name).toBeInstanceOf(TaskFileError);
      expect((outcome as Error).message, name).toBe('a symbolic link, not a regular file; links are never followed');
    }
  });

  it('hole 17: a directory is refused as not a regular file', async () => {
    const directory = path.join(dir, 'task.yaml');
    await mkdir(directory);
    const outcome = await settleWithin(readTaskText(directory, 1_024), 3_000);
    expect(outcome).toBeInstanceOf(TaskFileError);
    expect((outcome as Error).message).toBe('a directory, not a regular file');
  });

  it('refuses a device without reading it', async () => {
    const outcome = await settleWithin(readTaskText('/dev/zero', 1_024), 3_000);
    expect(outcome).toBeInstanceOf(TaskFileError);
    expect((outcome as Error).message).toBe('a character device, not a regular file');
  });

  it('refuses a file over the limit, and accepts one exactly at it', async () => {
    const file = path.join(dir, 'task.yaml');
    await writeFile(file, 'x'.repeat(1_025));
    await expect(readTaskText(file, 1_024)).rejects.toThrow('file is 1025 bytes; the limit is 1024');
    await writeFile(file, 'x'.repeat(1_024));
    expect(await readTaskText(file, 1_024)).toHaveLength(1_024);
  });

  it('hole 17: reads at most maxBytes + 1 bytes whatever the size said (a /proc file says 0 and holds more)', async () => {
    expect((await lstat('/proc/cpuinfo')).size).toBe(0);
    await expect(readTaskText('/proc/cpuinfo', 16)).rejects.toThrow(
      new TaskFileError('file grew past 16 bytes while it was read; the limit is 16 (queue.max_task_bytes)'),
    );
  });
});

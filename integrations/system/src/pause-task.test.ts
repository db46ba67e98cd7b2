import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore, PauseStore } from '@assistant/notes';
import type { HandlerContext } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runPauseTask } from './pause-task.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'system-pause-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function context(notes: FileNoteStore, payload: unknown, lines: string[]): HandlerContext {
  // Only what the handler uses; the worker's tests cover the real context.
  return {
    payload,
    notes,
    log: { human: async (message: string) => void lines.push(message), info() {}, warn() {} },
  } as unknown as HandlerContext;
}

describe('system.pause', () => {
  it('pauses an instance in system/paused.md once, recording who and why', async () => {
    const notes = new FileNoteStore({ root: dir });
    const lines: string[] = [];
    const payload = { integration: 'work-mail', reason: '3 failures in an hour', by: 'hook:failures' };
    expect(await runPauseTask(context(notes, payload, lines))).toMatchObject({
      integration: 'work-mail',
      already: false,
    });
    expect(await runPauseTask(context(notes, payload, lines))).toMatchObject({ already: true });
    const state = await new PauseStore({ notes }).read();
    expect(state.entries).toEqual([
      expect.objectContaining({
        kind: 'instance',
        name: 'work-mail',
        by: 'hook:failures',
        reason: '3 failures in an hour',
      }),
    ]);
    expect(lines).toEqual(['paused work-mail']);
  });

  it('refuses a payload without an instance', async () => {
    const notes = new FileNoteStore({ root: dir });
    await expect(runPauseTask(context(notes, { by: 'x' }, []))).rejects.toThrow(/system.pause expects/);
  });
});

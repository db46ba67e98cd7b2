import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ControlFiles } from './control-files.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-control-files-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const taskId = '01jabcdefghjkmnpqrstvwxyz0';

describe('ControlFiles', () => {
  it('settles a request by its id, and refuses an id that could name another file', async () => {
    const files = new ControlFiles({ root: dir, taskId });
    const request = await files.request({ action: 'pause', source: 'test' });
    expect((await files.pending()).map((entry) => entry.id)).toEqual([request.id]);
    expect(await files.hasRequest(request.id)).toBe(true);
    await files.settle(request.id, { status: 'applied' });
    expect(await files.pending()).toEqual([]);
    expect(await files.outcome(request.id)).toMatchObject({ request_id: request.id, status: 'applied' });
    for (const id of ['../events', '.hidden', 'a/b', '']) {
      await expect(files.settle(id, { status: 'applied' })).rejects.toThrow(/not a steering request id/);
      expect(await files.outcome(id)).toBeUndefined();
    }
    expect((await readdir(files.directory)).sort()).toEqual(['outcomes', 'requests']);
  });

  it('waits for a request newer than the last one seen, and answers at once when aborted', async () => {
    const files = new ControlFiles({ root: dir, taskId });
    const first = await files.request({ action: 'pause', source: 'test' });
    // Without `after`, anything pending answers at once.
    expect((await files.waitForRequests({ timeoutMs: 20_000 })).map((entry) => entry.id)).toEqual([first.id]);
    const waiting = files.waitForRequests({ after: first.id, timeoutMs: 20_000 });
    const second = await files.request({ action: 'resume', source: 'test' });
    expect((await waiting).map((entry) => entry.id)).toEqual([first.id, second.id]);

    const stop = new AbortController();
    const aborted = files.waitForRequests({ after: second.id, timeoutMs: 20_000, signal: stop.signal });
    stop.abort();
    expect((await aborted).map((entry) => entry.id)).toEqual([first.id, second.id]);
  });

  it('does not create the folder of a task nobody steered while waiting for its requests', async () => {
    const files = new ControlFiles({ root: dir, taskId });
    expect(await files.waitForRequests({ timeoutMs: 0 })).toEqual([]);
    expect(await files.exists()).toBe(false);
  });
});

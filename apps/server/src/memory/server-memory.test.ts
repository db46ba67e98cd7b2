import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import { openOwnerMemory } from './server-memory.ts';

const token = 'test-token-for-the-server-memory-0123456789';

let dir: string;
let notesRoot: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-server-memory-'));
  notesRoot = path.join(dir, 'data', 'notes');
  await mkdir(notesRoot, { recursive: true });
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('openOwnerMemory', () => {
  it('starts one index on first use, shares it, and the server closes it at shutdown', async () => {
    const { config, registry } = await loadRuntime({
      installation,
      configPath: path.join(dir, 'config.yaml'),
      cwd: dir,
    });
    const notes = new FileNoteStore({ root: notesRoot });
    const memory = openOwnerMemory({ config, notes, localNotes: notes });
    const app = createServer({ config, registry, token, memory });
    await app.ready();
    const task = await memory.stores.tasks.add({ title: 'Call the dentist about Friday', createdBy: 'owner' });
    const search = await app.inject({
      method: 'GET',
      url: '/api/memory/search?q=dentist',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(search.statusCode, search.body).toBe(200);
    expect(search.json().hits.map((hit: { path: string }) => hit.path)).toEqual([task.path]);
    const [first, second] = await Promise.all([memory.index(), memory.index()]);
    expect(first).toBe(second);
    await app.close();
    await expect(memory.index()).rejects.toThrow('the memory index is closed');
  });
});

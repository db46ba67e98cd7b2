// 2,000 POST /api/tasks over real loopback HTTP, 50 in flight: each becomes exactly one pending task.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { openFileTaskQueue } from '@assistant/queue';
import { createServer } from '@assistant/server';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { tempDir } from './helpers/temp-dir.ts';

const requests = 2_000;
const inFlight = 50;

describe('POST /api/tasks under load', () => {
  it('turns each of 2,000 concurrent requests into exactly one pending task', async () => {
    await using dir = await tempDir();
    const configPath = await dir.write('config.yaml', 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath });
    const token = 'test-token-for-the-load-test-0123456789ab';
    await using app = createServer({ config, token });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });

    // The request index each returned id answered, to check that each request became its own task.
    const indexById = new Map<string, number>();
    const ids: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const sender = async () => {
      while (next < requests) {
        const index = next++;
        const response = await fetch(`${address}/api/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          // Each payload distinct, so a task on disk can be traced back to the one request that made it.
          body: JSON.stringify({ type: 'system.echo', payload: { index } }),
        });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const { id } = z.object({ id: z.string() }).parse(await response.json());
        ids.push(id);
        indexById.set(id, index);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, sender));

    expect(Object.fromEntries(statuses)).toEqual({ 201: requests });
    expect(ids).toHaveLength(requests);
    expect(new Set(ids).size).toBe(requests);
    const pending = (await readdir(path.join(config.paths.queue, 'pending'))).filter((name) => name.endsWith('.yaml'));
    expect(pending).toHaveLength(requests);
    const idsOnDisk = new Set(pending.map((name) => /_([0-9a-z]{26})--/.exec(name)?.[1]));
    expect(idsOnDisk).toEqual(new Set(ids));
    expect(await readdir(path.join(config.paths.queue, 'tmp'))).toEqual([]);
    // Every file holds the payload of the request its id was returned to.
    const queue = await openFileTaskQueue({
      directory: config.paths.queue,
      dataDirectory: config.paths.dataDir,
      settings: config.queue,
    });
    const mismatched: string[] = [];
    for (const entry of await queue.list({ state: 'pending', limit: requests + 1 })) {
      const id = entry.name?.id ?? '';
      const record = await queue.get(id);
      if (!record?.task || JSON.stringify(record.task.payload) !== JSON.stringify({ index: indexById.get(id) })) {
        mismatched.push(entry.location);
      }
    }
    expect(mismatched).toEqual([]);
  });
});

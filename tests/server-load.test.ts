// 2,000 POST /api/tasks over real loopback HTTP, 50 in flight: each becomes exactly one pending task.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
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
    await using app = createServer({ config });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });

    const ids: string[] = [];
    const statuses = new Map<number, number>();
    let next = 0;
    const sender = async () => {
      while (next < requests) {
        const index = next++;
        const response = await fetch(`${address}/api/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          // Half of them identical: manual tasks bypass dedup, so identical requests are still separate tasks.
          body: JSON.stringify({ type: 'system.echo', payload: index % 2 === 0 ? { index } : { same: true } }),
        });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        ids.push(z.object({ id: z.string() }).parse(await response.json()).id);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, sender));

    expect(Object.fromEntries(statuses)).toEqual({ 201: requests });
    expect(new Set(ids).size).toBe(requests);
    const pending = (await readdir(path.join(config.paths.queue, 'pending'))).filter((name) => name.endsWith('.yaml'));
    expect(pending).toHaveLength(requests);
    const idsOnDisk = new Set(pending.map((name) => /_([0-9a-z]{26})--/.exec(name)?.[1]));
    expect(idsOnDisk).toEqual(new Set(ids));
    expect(await readdir(path.join(config.paths.queue, 'tmp'))).toEqual([]);
  });
});

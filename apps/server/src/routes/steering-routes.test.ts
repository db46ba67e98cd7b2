import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TaskQueue, TaskState } from '@assistant/queue';
import Fastify from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RouteTable } from '../route-table.ts';
import type { AssistantServer } from '../server-type.ts';
import { registerSteeringRoutes } from './steering-routes.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-steering-routes-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const id = '01jabcdefghjkmnpqrstvwxyz0';

/**
 * The two calls the event stream makes on a queue: `get` answers from `states` (the last one repeats), and the
 * queue's events never report anything — as when its watcher failed or the kernel dropped a notification.
 */
function queueMissingEvents(states: TaskState[]): { queue: TaskQueue; reads: () => number } {
  let reads = 0;
  const queue = {
    get: async (taskId: string) => {
      if (taskId !== id) return undefined;
      const state = states[Math.min(reads, states.length - 1)];
      reads += 1;
      return { id, state };
    },
    events: () => ({ subscribe: () => () => {}, close: async () => {} }),
  };
  return { queue: queue as unknown as TaskQueue, reads: () => reads };
}

describe('GET /api/tasks/:id/events', () => {
  it('ends when the task has finished even if the queue never reports the change', async () => {
    const { queue, reads } = queueMissingEvents(['active', 'done']);
    const app = Fastify() as unknown as AssistantServer;
    registerSteeringRoutes(app, new RouteTable(), { queue: () => queue, controlRoot: path.join(dir, 'control') });
    await app.ready();
    try {
      let deadline: NodeJS.Timeout | undefined;
      const response = await Promise.race([
        app.inject({ method: 'GET', url: `/api/tasks/${id}/events` }),
        new Promise<never>((_resolve, reject) => {
          deadline = setTimeout(
            () => reject(new Error(`the event stream did not end within 10 s (${reads()} reads of the task)`)),
            10_000,
          );
        }),
      ]).finally(() => clearTimeout(deadline));
      expect(response.statusCode).toBe(200);
      expect(response.body).toContain('event: end\ndata: {"state":"done"}');
      expect(reads()).toBeGreaterThanOrEqual(2);
    } finally {
      await app.close();
    }
  });
});

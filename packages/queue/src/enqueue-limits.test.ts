import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FileTaskConsumer } from './file-task-consumer.ts';
import { FileTaskQueue } from './file-task-queue.ts';
import { maxTaskNestingDepth, valueNestingDepth } from './input-limits.ts';
import { readTaskText } from './read-task-text.ts';
import type { JsonValue } from './task-file.ts';
import { decodeTaskName } from './task-name.ts';

let directory: string;
beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-enqueue-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** `leaf` wrapped in `depth` arrays and objects, alternating. */
function nested(depth: number, leaf: JsonValue = 'leaf'): JsonValue {
  let value = leaf;
  for (let level = 0; level < depth; level++) value = level % 2 === 0 ? [value] : { [`k${level}`]: value };
  return value;
}

describe('FileTaskQueue.enqueue and nesting', () => {
  it('hole 19: refuses a payload nested deeper than maxTaskNestingDepth with BAD_REQUEST naming the limit', async () => {
    const queue = await FileTaskQueue.open({ directory });
    for (const payload of [nested(maxTaskNestingDepth + 1), nested(200_000)]) {
      const refusal = await queue.enqueue({ type: 'system.echo', payload }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(AssistantError);
      expect(refusal).toMatchObject({
        code: 'BAD_REQUEST',
        message: 'payload is nested more than 64 levels deep; the limit is 64 (maxTaskNestingDepth)',
      });
    }
    await expect(queue.enqueue({ type: 'system.echo', onResult: nested(65) })).rejects.toThrow(
      /^on_result is nested more than 64 levels deep/,
    );
    expect(await queue.list()).toEqual([]);
    expect((await queue.enqueue({ type: 'system.echo', payload: nested(maxTaskNestingDepth) })).status).toBe(
      'enqueued',
    );
  });

  it('hole 19: any payload enqueue accepts round-trips through its task file, and it accepts every payload within the limit', async () => {
    const queue = await FileTaskQueue.open({ directory });
    // Strings YAML has to quote, fold or write as block scalars, inside values nested up to a little past the limit.
    const awkwardString = fc.oneof(
      fc.string(),
      fc
        .array(
          fc.constantFrom(' ', '\t', '\n', '- ', ': ', '? ', '[', ']', '{', '}', '#', '|', '"', "'", '&a', '*a', 'x'),
          {
            maxLength: 10,
          },
        )
        .map((parts) => parts.join('')),
    );
    const leaf = fc.oneof(
      awkwardString,
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
    );
    const payload = fc
      .tuple(fc.integer({ min: 0, max: maxTaskNestingDepth + 6 }), fc.jsonValue({ maxDepth: 3 }), leaf, awkwardString)
      .map(([depth, inner, scalar, key]) => {
        // A random value at the bottom of a random-depth chain of arrays and objects with awkward keys.
        let value = [inner as JsonValue, scalar] as JsonValue;
        for (let level = 1; level < depth; level++) value = level % 3 === 0 ? [value, scalar] : { [key]: value, x: 1 };
        return value;
      });
    await fc.assert(
      fc.asyncProperty(payload, async (value) => {
        const depth = valueNestingDepth(value);
        const outcome = await queue.enqueue({ type: 'system.echo', payload: value }).catch((error: unknown) => error);
        if (depth > maxTaskNestingDepth) {
          expect(outcome).toMatchObject({ code: 'BAD_REQUEST' });
          return;
        }
        if (outcome instanceof Error || (outcome as { status: string }).status !== 'enqueued') {
          throw new Error(`enqueue refused a payload ${depth} levels deep: ${String(outcome)}`);
        }
        const { location, task } = outcome as { location: string; task: unknown };
        const file = path.join(path.dirname(directory), location);
        const fileName = path.basename(file);
        const name = decodeTaskName(fileName);
        if (!name) throw new Error(`enqueue wrote a file name that is not a task name: ${fileName}`);
        // What the worker does: the bounded, non-following read, then the parse with its depth pre-scan.
        const read = queue.parseTask(await readTaskText(file, queue.maxTaskBytes), name);
        expect(read).toEqual(task);
        await queue.remove(file);
      }),
      { numRuns: 150 },
    );
  });

  it('hole 19: a result nested deeper than the limit fails its task instead of writing a done/ file nobody can read', async () => {
    const queue = await FileTaskQueue.open({ directory });
    const consumer = new FileTaskConsumer(queue, { pollIntervalMs: 50 });
    try {
      // Enqueued before start, whose full listing indexes it: no waiting on the watcher.
      await queue.enqueue({ type: 'system.echo', payload: 1 });
      await consumer.start();
      const claimed = await consumer.claim();
      if (!claimed) throw new Error('nothing to claim');
      await consumer.complete(claimed, nested(maxTaskNestingDepth + 1));
      const record = await queue.get(claimed.task.id);
      expect(record).toMatchObject({
        state: 'failed',
        task: {
          error: {
            type: 'UnrecoverableError',
            message: `the handler returned a result nested more than 64 levels deep; the limit is 64 (maxTaskNestingDepth)`,
          },
        },
      });
    } finally {
      await consumer.close();
    }
  });
});

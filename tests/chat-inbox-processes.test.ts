// Two processes accept the same client ids at the same moment: each message is stored once, and both senders get
// the same id for it.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ChatInbox } from '@assistant/chat';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { repoRoot, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

const acceptor = path.join(repoRoot, 'tests/fixtures/chat-accept.ts');
const resultSchema = z.object({ clientId: z.string(), id: z.string(), duplicate: z.boolean() });

describe('ChatInbox across processes', () => {
  it('stores each client id once when two processes accept the same ids concurrently', async () => {
    await using dir = await tempDir();
    const inboxDirectory = path.join(dir.path, 'data/chat/inbox');
    const goFile = path.join(dir.path, 'go');
    const count = 150;
    const processes = [0, 1].map(() =>
      startNode({ args: [acceptor, inboxDirectory, 'shared', String(count), goFile] }),
    );
    for (const child of processes) await child.waitForOutput(/^ready$/m);
    await writeFile(goFile, '');
    const runs = await Promise.all(processes.map((child) => child.exited));
    for (const run of runs) {
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
    }
    const results = runs.map((run) =>
      run.stdout
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => resultSchema.parse(JSON.parse(line))),
    );
    const [first = [], second = []] = results;
    expect(first).toHaveLength(count);
    expect(second).toHaveLength(count);
    for (let index = 0; index < count; index++) {
      expect(first[index]?.id).toBe(second[index]?.id);
      // Exactly one of the two stored it.
      expect([first[index]?.duplicate, second[index]?.duplicate].filter((duplicate) => !duplicate)).toHaveLength(1);
    }
    const stored = await new ChatInbox({ directory: inboxDirectory }).messages('shared');
    expect(stored).toHaveLength(count);
    expect(stored.map((message) => message.clientId).toSorted()).toEqual(
      Array.from({ length: count }, (_, index) => `client-${index}`).toSorted(),
    );
  });
});

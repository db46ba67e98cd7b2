// The server and the worker append to a conversation's event log at once while a third process compacts it
// (decision 0077): a follower sees each event once and in order, with a gap only where it is told `compacted`, and
// the log ends whole, holding each writer's last events.
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { type ChatEventEntry, ChatEventLog } from '@assistant/chat';
import { describe, expect, it } from 'vitest';
import { repoRoot, runNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('chat event log compaction across processes', () => {
  it('loses and duplicates no event of two appending processes while a third compacts', async () => {
    await using dir = await tempDir();
    const directory = path.join(dir.path, 'chat', 'events');
    await mkdir(directory, { recursive: true });
    const script = path.join(repoRoot, 'tests/fixtures/chat-event-writer.ts');
    const writers = ['server', 'worker'];
    const count = 600;
    const log = new ChatEventLog({ directory, pollMs: { watching: 200, unwatched: 50 } });
    const controller = new AbortController();
    const seen: ChatEventEntry[] = [];
    const finished = new Set<string>();
    const following = (async () => {
      for await (const entry of log.follow('c1', { fromOffset: 0, signal: controller.signal })) {
        seen.push(entry);
        if (entry.event.n === count - 1) finished.add(String(entry.event.writer));
        if (finished.size === writers.length) controller.abort();
      }
    })();
    const [compactor, ...appenders] = await Promise.all([
      runNode({ args: [script, 'compact', directory, String(writers.length)] }),
      ...writers.map((writer) => runNode({ args: [script, 'append', directory, writer, String(count)] })),
    ]);
    for (const run of [compactor, ...appenders]) {
      expect(run?.stderr).toBe('');
      expect(run?.code).toBe(0);
    }
    expect(Number(compactor?.stdout.trim())).toBeGreaterThan(0);
    const timeout = setTimeout(() => controller.abort(), 60_000);
    await following;
    clearTimeout(timeout);
    expect([...finished].sort()).toEqual([...writers].sort());

    for (const writer of writers) {
      let last = -1;
      let told = false;
      for (const entry of seen) {
        if (entry.event.type === 'compacted') told = true;
        if (entry.event.writer !== writer) continue;
        const n = entry.event.n as number;
        if (told) expect(n, `${writer} after a compaction`).toBeGreaterThan(last);
        else expect(n, `${writer} after ${last}`).toBe(last + 1);
        told = false;
        last = n;
      }
      expect(last).toBe(count - 1);
    }
    const offsets = seen.map((entry) => entry.offset);
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect((await readdir(directory)).sort()).toEqual(['c1.jsonl']);
  });
});

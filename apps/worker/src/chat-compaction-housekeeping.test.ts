// Housekeeping compacts the chat stores by the chat instance's `retention`: an idle event log past its size is cut
// (offsets kept), answered inbox messages past the retention are removed, unanswered ones stay; and the human log's
// day files older than `human_log.retention_days` go. A real worker in
// this process over files written by the chat stores themselves.
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatEventLog, ChatInbox } from '@assistant/chat';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadTestRuntime } from './testing/load-test-runtime.ts';
import { runUntilIdle } from './testing/run-until-idle.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-compaction-'));
  await writeFile(
    path.join(dir, 'config.yaml'),
    [
      'data_dir: ./data',
      'worker: {poll_interval: 50ms}',
      'integrations:',
      '  - type: chat',
      '    name: chat',
      '    retention: {events_max_bytes: 8192, events_idle: 0s, answered_inbox: 1d}',
      'human_log: {retention_days: 30}',
      '',
    ].join('\n'),
  );
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('housekeeping and data/chat', () => {
  it('compacts idle event logs and removes old answered inbox messages by the chat retention', async () => {
    const { config, registry, queue } = await loadTestRuntime(dir);
    const chat = path.join(config.paths.dataDir, 'chat');
    const events = new ChatEventLog({ directory: path.join(chat, 'events') });
    let end = 0;
    for (let n = 0; n < 400; n += 1) end = await events.append('c1', { type: 'token', n, text: 'x'.repeat(50) });
    const dayAgo = new Date(Date.now() - 2 * 24 * 3_600_000);
    const inbox = new ChatInbox({ directory: path.join(chat, 'inbox'), now: () => dayAgo });
    const answered = await inbox.accept('c1', { text: 'answered', clientId: 'phone-1' });
    const unanswered = await inbox.accept('c1', { text: 'still waiting' });
    await inbox.markAnswered('c1', { ids: [answered.id], replyId: 'm-reply' });

    // The human log's day files: one past `human_log.retention_days`, one within it, and a file of the owner's.
    await mkdir(config.paths.logs, { recursive: true });
    const day = (daysAgo: number) => {
      const date = new Date();
      date.setDate(date.getDate() - daysAgo);
      return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}.md`;
    };
    for (const name of [day(40), day(10), 'my-notes.md'])
      await writeFile(path.join(config.paths.logs, name), '- old\n');

    const housekeeping = await queue.enqueue({ type: 'system.housekeeping.run', source: 'cli' });
    if (housekeeping.status !== 'enqueued') throw new Error(housekeeping.status);
    await runUntilIdle({ config, registry });

    expect((await stat(events.file('c1'))).size).toBeLessThanOrEqual(8192);
    expect(await events.end('c1')).toBe(end);
    expect((await inbox.messages('c1')).map((message) => message.id)).toEqual([unanswered.id]);
    const record = await queue.get(housekeeping.task.id);
    expect(record?.task?.result).toMatchObject({ chat: { eventLogs: 1, inboxMessages: 1 }, humanLogDays: 1 });
    const files = await readdir(config.paths.logs);
    expect(files).not.toContain(day(40));
    expect(files).toEqual(expect.arrayContaining([day(10), 'my-notes.md']));
    // Today's file (whatever day the worker wrote it on) holds the housekeeping's line.
    const today = files.filter((name) => name !== day(10) && name !== 'my-notes.md');
    const log = (await Promise.all(today.map((name) => readFile(path.join(config.paths.logs, name), 'utf8')))).join('');
    expect(log).toContain('removed 1 days of this log older than human_log.retention_days');
    expect(log).toContain('compacted 1 chat event logs');
    expect(log).toContain('removed 1 answered chat inbox messages');
    // The reason names the settings that applied: no queue task was pruned.
    expect(log).toContain('scheduled housekeeping (chat retention, human_log.retention_days)');
    expect(log).not.toContain('queue.retention');
    await queue.close();
  });
});

// The email act stage takes an irreversible action once per message, even when one task lists it twice, and an SMTP
// server that is down delays it instead of failing it for good.
import { rename } from 'node:fs/promises';
import path from 'node:path';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startSmtpSink } from './helpers/smtp-sink.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const item = 'email/local/1-1.md';
const unsubscribe = { kind: 'platform', name: 'unsubscribe', key: 'unsubscribe', tier: 'irreversible', yolo: true };

/** A Maildir instance sending through `smtpPort`, one newsletter note with a mailto: unsubscribe, and a worker. */
async function setup(dir: TempDir, smtpPort: number) {
  await dir.write('Maildir/cur/.keep', '');
  await dir.write(
    'config.yaml',
    `data_dir: ./data
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    smtp: {host: 127.0.0.1, port: ${smtpPort}, from: alice@example.test}
    platforms:
      inbox:
        automations:
          - name: leave lists
            when: {has_list_unsubscribe: true}
            then: !yolo unsubscribe
`,
  );
  const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
  const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
  const notes = new FileNoteStore({ root: runtime.config.paths.notes });
  await notes.create(item, {
    data: {
      uid: 1,
      mailbox: 'INBOX',
      subject: 'Letters #1',
      has_list_unsubscribe: true,
      list_unsubscribe: ['mailto:leave@lists.example.test'],
      list_unsubscribe_one_click: false,
    },
  });
  const act = async (actions: unknown[]) => {
    const outcome = await queue.enqueue({
      type: 'email.inbox.act',
      integration: 'local',
      source: 'automation',
      policies: false,
      payload: { item, rule: 'leave lists', rule_index: 0, provenance: 'rule', actions: actions as never },
    });
    if (outcome.status !== 'enqueued') throw new Error(`not enqueued: ${outcome.status}`);
    return outcome.task.id;
  };
  const work = () =>
    runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
    });
  return { queue, notes, act, work };
}

describe('email act', () => {
  it('hole 14: an unsubscribe listed twice in one act task sends one mail', async () => {
    // A mailto: unsubscribe through an SMTP sink: one-click to a loopback address is refused (hole 3).
    await using smtp = await startSmtpSink();
    await using dir = await tempDir();
    const { queue, notes, act, work } = await setup(dir, smtp.port);
    const first = await act([unsubscribe, unsubscribe]);
    await work();
    expect((await queue.get(first))?.state).toBe('done');
    expect(smtp.mails.map((mail) => mail.to)).toEqual([['leave@lists.example.test']]);
    // Another task with the same action for the same message: nothing more.
    await act([unsubscribe, unsubscribe]);
    await work();
    expect(smtp.mails).toHaveLength(1);
    expect((await notes.read(item))?.data.actions_started).toEqual([
      expect.objectContaining({ action: 'unsubscribe', task: first }),
    ]);
  });

  it('waits for an SMTP server that is down, without spending attempts, and sends once when it is back', async () => {
    // A free port with nobody listening: the server is down.
    const probe = await startSmtpSink();
    const port = probe.port;
    await probe[Symbol.asyncDispose]();
    await using dir = await tempDir();
    const { queue, notes, act, work } = await setup(dir, port);
    const id = await act([unsubscribe]);
    await work();
    const waiting = await queue.get(id);
    expect(waiting?.state).toBe('pending');
    expect(waiting?.task?.attempts).toBe(0);
    expect(Date.parse(waiting?.task?.readyAt ?? '')).toBeGreaterThan(Date.now() + 30_000);
    // Nothing was sent, so nothing is recorded as started: the next try takes it.
    expect((await notes.read(item))?.data.actions_started).toEqual([]);

    await using smtp = await startSmtpSink({ port });
    // Rather than wait a minute: renaming a pending file reschedules it (docs/queue.md).
    // The file is found by its location and renamed by hand, as a person would (its ready time is in the name).
    if (!waiting) throw new Error('no pending task');
    const file = path.join(dir.path, 'data', waiting.location);
    const stamp = new Date(Date.now() - 1000).toISOString().replace(/[-:.]/g, '');
    await rename(
      file,
      path.join(path.dirname(file), path.basename(file).replace(/^(\d)_\d{8}T\d{9}Z_/, `$1_${stamp}_`)),
    );
    await work();
    expect((await queue.get(id))?.state).toBe('done');
    expect(smtp.mails.map((mail) => mail.to)).toEqual([['leave@lists.example.test']]);
  });
});

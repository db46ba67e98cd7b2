// The email act stage takes an irreversible action once per message, even when one task lists it twice.
import path from 'node:path';
import { NoteStore } from '@assistant/notes';
import { TaskQueue } from '@assistant/queue';
import { loadRuntime } from '@assistant/runtime';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { startSmtpSink } from './helpers/smtp-sink.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('email act', () => {
  it('hole 14: an unsubscribe listed twice in one act task sends one mail', async () => {
    // A mailto: unsubscribe through an SMTP sink: one-click to a loopback address is refused (hole 3).
    await using smtp = await startSmtpSink();
    const port = smtp.port;
    await using dir = await tempDir();
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
    smtp: {host: 127.0.0.1, port: ${port}, from: alice@example.test}
    platforms:
      inbox:
        automations:
          - name: leave lists
            when: {has_list_unsubscribe: true}
            then: !yolo unsubscribe
`,
    );
    const runtime = await loadRuntime({ configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
    const queue = await TaskQueue.open({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    const notes = new NoteStore({ root: runtime.config.paths.notes });
    const item = 'email/local/1-1.md';
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
    const unsubscribe = {
      kind: 'platform',
      name: 'unsubscribe',
      key: 'unsubscribe',
      tier: 'irreversible',
      yolo: true,
    };
    const act = () =>
      queue.enqueue({
        type: 'email.inbox.act',
        integration: 'local',
        source: 'automation',
        policies: false,
        payload: {
          item,
          rule: 'leave lists',
          rule_index: 0,
          provenance: 'rule',
          actions: [unsubscribe, unsubscribe],
        },
      });
    const work = () =>
      runWorker({
        config: runtime.config,
        registry: runtime.registry,
        logger: pino({ level: 'silent' }),
        signal: new AbortController().signal,
        exitWhenIdle: true,
      });
    const first = await act();
    await work();
    expect(first.status === 'enqueued' ? (await queue.get(first.task.id))?.state : undefined).toBe('done');
    expect(smtp.mails.map((mail) => mail.to)).toEqual([['leave@lists.example.test']]);
    // Another task with the same action for the same message: nothing more.
    await act();
    await work();
    expect(smtp.mails).toHaveLength(1);
    expect((await notes.read(item))?.data.actions_started).toEqual([
      expect.objectContaining({ action: 'unsubscribe', task: first.status === 'enqueued' ? first.task.id : '' }),
    ]);
  });
});

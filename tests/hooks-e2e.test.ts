// Hooks end to end through `assistant start`: a mail from a given sender fires a reminder that comes due after a
// restart, and fires once; a one-shot hook fires once, across a restart; a burst of failed tasks pauses an
// integration instance. Real processes, a Maildir instance, the file queue and the event ledger on disk.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { compareCursors, EventLedger, type LedgerEvent } from '@assistant/events';
import { FileNoteStore, PauseStore } from '@assistant/notes';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const mail = (from: string, subject: string, id: string) =>
  `From: ${from}\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${id}@example.test>\r\nDate: Sat, 28 Nov 2026 08:00:00 +0000\r\n\r\nHello.\r\n`;

describe('hooks through assistant start', () => {
  it('fires a mail reminder after a restart, a one-shot hook once, and pauses an instance after a burst of failures', {
    timeout: 180_000,
  }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    await dir.write('Maildir/cur/.keep', '');
    await dir.write('Maildir/tmp/.keep', '');
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 5s}
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
`,
    );
    await dir.write(
      'hooks/accountant.yaml',
      `on: mail.received
when: {from_domain: accountant.example}
then:
  - notify: "Your accountant wrote: {{event.data.subject}}"
    after: 15s
`,
    );
    await dir.write(
      'hooks/first-echo.yaml',
      `on: {type: task.done, filter: {task_type: system.echo}}
once: true
then:
  - notify: "The first echo is done"
`,
    );
    await dir.write(
      'hooks/failures.yaml',
      `on: task.failed
when: {task_type: system.sleep}
count: {at_least: 3, within: 1h, per: task_type}
then:
  - pause: {integration: local, reason: "{{event.data.task_type}} failed 3 times in an hour"}
`,
    );
    const data = path.join(dir.path, 'data');
    const ledger = new EventLedger({ directory: path.join(data, 'events') });
    const notes = new FileNoteStore({ root: path.join(data, 'notes') });
    const queue = await openFileTaskQueue({ directory: path.join(data, 'queue') });
    let assistant: NodeProcess | undefined;
    const start = async () => {
      assistant = startNode({ args: [cliMain, 'start', '--config', configPath], cwd: dir.path });
      await assistant.waitForOutput(/listening on/, { timeoutMs: 30_000 });
      await assistant.waitForOutput(/worker ready/, { timeoutMs: 30_000 });
      return fetchWithToken(await readApiToken(data));
    };
    const stop = async () => {
      assistant?.child.kill('SIGTERM');
      const run = await assistant?.exited;
      assistant = undefined;
      return run;
    };
    const events = async (type: string) => (await ledger.list({ types: [type], limit: 1000 })).events as LedgerEvent[];
    const notifications = async () =>
      ((await notes.read('chats/notifications.md').catch(() => undefined))?.body ?? '') as string;
    /** Waits until the hook runner has handled `event` (its cursor is at or past it). */
    const handled = (event: LedgerEvent | undefined) =>
      waitUntil(
        async () => {
          if (!event) return false;
          const saved = JSON.parse(await readFile(path.join(data, 'hooks', 'cursor.json'), 'utf8')) as {
            cursor: string;
          };
          return compareCursors(saved.cursor, event.cursor) >= 0;
        },
        { what: `the hook runner to handle ${event?.type}`, timeoutMs: 30_000 },
      );
    try {
      let api = await start();
      const base = `http://127.0.0.1:${port}`;
      const post = (url: string, body: unknown) =>
        api(`${base}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });

      // 1. Two mails; the accountant's fires a reminder due in 15 s, the other fires nothing.
      await dir.write('Maildir/new/1.eml', mail('Anna <anna@accountant.example>', 'Tax return due', 'a1'));
      await dir.write('Maildir/new/2.eml', mail('bob@other.example', 'Lunch?', 'b2'));
      expect((await post('/api/integrations/local/inbox/trigger', {})).status).toBe(201);
      const received = await waitUntil(
        async () => ((await events('mail.received')).length === 2 ? events('mail.received') : false),
        {
          what: 'two mail.received events',
          timeoutMs: 30_000,
        },
      );
      expect(received.map((event) => event.data.from_domain).sort()).toEqual(['accountant.example', 'other.example']);
      await handled(received.at(-1));
      const fired = await events('hook.fired');
      expect(fired.map((event) => event.data.hook)).toEqual(['accountant']);
      // The reminder is a chat.notify task in pending/, ready 15 s after the hook decided.
      const reminder = (await queue.list({ state: 'pending' })).find((entry) => entry.name?.type === 'chat.notify');
      const dueMs = reminder?.name?.readyAtMs ?? Number.NaN;
      expect(dueMs).toBeGreaterThan(Date.now());
      // Stopped before it is due: the reminder is a delayed task in the queue, on disk.
      const stopped = await stop();
      expect(stopped?.code).toBe(0);
      expect(await notifications()).not.toContain('Your accountant wrote');

      api = await start();
      await waitUntil(async () => (await notifications()).includes('Your accountant wrote: Tax return due'), {
        what: 'the reminder in the notifications conversation',
        timeoutMs: 40_000,
      });
      // On time: not before it was due; once; and nothing for the other sender.
      expect(Date.now()).toBeGreaterThanOrEqual(dueMs);
      const text = await notifications();
      expect(text.split('Your accountant wrote').length - 1).toBe(1);
      expect(text).not.toContain('Lunch?');

      // 2. A one-shot hook: three echoes, one notification.
      for (const n of [1, 2, 3]) {
        expect((await post('/api/tasks', { type: 'system.echo', payload: { n } })).status).toBe(201);
      }
      const echoes = await waitUntil(
        async () => {
          const done = (await events('task.done')).filter((event) => event.data.task_type === 'system.echo');
          return done.length >= 3 ? done : false;
        },
        { what: 'three echoes done', timeoutMs: 30_000 },
      );
      await handled(echoes.at(-1));
      await waitUntil(async () => (await notifications()).includes('The first echo is done'), {
        what: 'the one-shot notification',
        timeoutMs: 30_000,
      });

      // 3. Three failures of system.sleep within the hour pause the instance `local`.
      for (const ms of [-1, -2, -3]) {
        expect((await post('/api/tasks', { type: 'system.sleep', payload: { ms } })).status).toBe(201);
      }
      const pause = await waitUntil(
        async () => (await new PauseStore({ notes }).read()).entries.find((entry) => entry.name === 'local'),
        { what: 'the pause of local', timeoutMs: 30_000 },
      );
      expect(pause).toMatchObject({ kind: 'instance', by: 'hook:failures' });
      expect(pause.reason).toBe('system.sleep failed 3 times in an hour');

      // After a restart the one-shot hook stays spent: another echo fires nothing.
      await stop();
      api = await start();
      expect((await post('/api/tasks', { type: 'system.echo', payload: { n: 4 } })).status).toBe(201);
      const fourth = await waitUntil(
        async () =>
          (await events('task.done')).find(
            (event) =>
              (event.data.task as string) &&
              event.data.task_type === 'system.echo' &&
              echoes.every((seen) => seen.id !== event.id),
          ),
        { what: 'the fourth echo done', timeoutMs: 30_000 },
      );
      await handled(fourth);
      const all = await notifications();
      expect(all.split('The first echo is done').length - 1).toBe(1);
      const hookFirings = (await events('hook.fired')).map((event) => event.data.hook).sort();
      expect(hookFirings).toEqual(['accountant', 'failures', 'first-echo']);
    } finally {
      await stop();
    }
  });
});

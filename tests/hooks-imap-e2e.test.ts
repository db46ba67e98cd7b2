// Hooks end to end through `assistant start`, with mail from a real IMAP server (Dovecot on loopback) and crashes:
// - a mail from the accountant fires a hook whose `notify` waits 12 s (a delayed task in the queue); the server, the
//   worker and `start` itself are SIGKILLed before it is due; started again, the reminder is told once, not before
//   its due time; a mail from another sender fires nothing;
// - three failed tasks within the hour pause the instance the hook names: `assistant paused` shows it with who and
//   why, the day's human log says it with the reason, and a task of that instance enqueued afterwards is held in
//   pending/ (the pause is in effect), not run;
// - a one-shot hook fires once for several done tasks, its state (what `assistant hooks ls` shows) says fired and
//   disabled, and after a SIGKILL and a start it still does not fire.
// tests/hooks-e2e.test.ts covers the same through a Maildir and SIGTERM; this file adds real IMAP and SIGKILL.
import { readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { compareCursors, EventLedger, type LedgerEvent } from '@assistant/events';
import { readHookStates } from '@assistant/hooks';
import { loadRuntime } from '@assistant/integration-host';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { type Dovecot, startDovecot } from './helpers/dovecot.ts';
import { freePort } from './helpers/free-port.ts';
import { appendMessages } from './helpers/imap-client.ts';
import { cliMain, type NodeProcess, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const mail = (from: string, subject: string, id: string) =>
  `From: ${from}\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nMessage-ID: <${id}@example.test>\r\nDate: Sat, 28 Nov 2026 08:00:00 +0000\r\n\r\nHello.\r\n`;

/** Alive and not a zombie: a SIGKILLed grandchild whose parent died too may stay unreaped in a container. */
function running(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  // `pid (command) state …`; the command may hold spaces or parentheses.
  const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  return state !== 'Z' && state !== 'X';
}

let dovecot: Dovecot;

/** One Assistant on a temp folder: start, stop (SIGTERM) or crash (SIGKILL of start, server and worker). */
function assistantOn(dir: TempDir, configPath: string, port: number) {
  const data = path.join(dir.path, 'data');
  let current: NodeProcess | undefined;
  const base = `http://127.0.0.1:${port}`;
  return {
    data,
    base,
    async start() {
      current = startNode({ args: [cliMain, 'start', '--config', configPath], cwd: dir.path });
      await current.waitForOutput(/listening on/, { timeoutMs: 40_000 });
      await current.waitForOutput(/worker ready/, { timeoutMs: 40_000 });
      return fetchWithToken(await readApiToken(data));
    },
    async stop() {
      const process = current;
      current = undefined;
      if (!process) return undefined;
      process.child.kill('SIGTERM');
      return process.exited;
    },
    /** SIGKILLs `start`, the server and the worker at once, as a power cut or the OOM killer would. */
    async crash() {
      const process = current;
      current = undefined;
      if (!process) return;
      const pids = [...process.stdout().matchAll(/(?:server|worker) started \(pid (\d+)\)/g)].map((match) =>
        Number(match[1]),
      );
      expect(pids.length).toBeGreaterThanOrEqual(2);
      process.child.kill('SIGKILL');
      for (const pid of pids) {
        try {
          globalThis.process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      await process.exited;
      await waitUntil(() => pids.every((pid) => !running(pid)), { what: `processes ${pids.join(', ')} to die` });
    },
  };
}

async function eventsOf(data: string, type: string): Promise<LedgerEvent[]> {
  const ledger = new EventLedger({ directory: path.join(data, 'events') });
  return (await ledger.list({ types: [type], limit: 1000 })).events as LedgerEvent[];
}

/** Waits until the hook runner's cursor is at or past `event`: every hook has decided on it. */
function handled(data: string, event: LedgerEvent | undefined) {
  return waitUntil(
    async () => {
      if (!event) return false;
      const text = await readFile(path.join(data, 'hooks', 'cursor.json'), 'utf8').catch(() => undefined);
      if (text === undefined) return false;
      return compareCursors((JSON.parse(text) as { cursor: string }).cursor, event.cursor) >= 0;
    },
    { what: `the hook runner to handle ${event?.type} ${event?.id}`, timeoutMs: 30_000 },
  );
}

async function notifications(data: string): Promise<string> {
  const notes = new FileNoteStore({ root: path.join(data, 'notes') });
  return ((await notes.read('chats/notifications.md').catch(() => undefined))?.body ?? '') as string;
}

const occurrences = (text: string, needle: string) => text.split(needle).length - 1;

function imapConfig(port: number): string {
  return `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 5s}
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: email
    name: personal
    imap_server: ${dovecot.host}
    port: ${dovecot.port}
    tls: false
    username: ${dovecot.user}
    password: !secret imap_password
    window: 3650d
`;
}

describe('hooks through assistant start, with real IMAP and crashes', () => {
  beforeAll(async () => {
    dovecot = await startDovecot();
  }, 30_000);
  afterAll(async () => {
    await dovecot?.[Symbol.asyncDispose]();
  });

  it('a mail from the accountant in Dovecot makes a reminder that is told once, on time, after a SIGKILL', {
    timeout: 180_000,
  }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    await dir.write('secrets.yaml', `imap_password: ${JSON.stringify(dovecot.password)}\n`, 0o600);
    const configPath = await dir.write('config.yaml', imapConfig(port));
    await dir.write(
      'hooks/accountant.yaml',
      `on: mail.received
when: {from_address: anna@accountant.example}
then:
  - notify: "Answer your accountant: {{event.data.subject}}"
    after: 12s
`,
    );
    await appendMessages(dovecot, 'INBOX', [
      mail('Anna <anna@accountant.example>', 'Tax return due', 'imap-a1'),
      mail('Bob <bob@other.example>', 'Lunch?', 'imap-b2'),
    ]);
    const assistant = assistantOn(dir, configPath, port);
    try {
      const api = await assistant.start();
      const triggered = await api(`${assistant.base}/api/integrations/personal/inbox/trigger`, { method: 'POST' });
      expect(triggered.status).toBe(201);
      const received = await waitUntil(
        async () => {
          const found = await eventsOf(assistant.data, 'mail.received');
          return found.length >= 2 ? found : false;
        },
        { what: 'two mail.received events from Dovecot', timeoutMs: 60_000 },
      );
      expect(received.map((event) => event.data.from_address).sort()).toEqual([
        'anna@accountant.example',
        'bob@other.example',
      ]);
      await handled(assistant.data, received.at(-1));
      const fired = await eventsOf(assistant.data, 'hook.fired');
      expect(fired.map((event) => event.data.hook)).toEqual(['accountant']);
      // The reminder's due time is the ready time of its task in pending/ (the name's timestamp, `YYYYMMDDTHHMMSSmmmZ`).
      const pending = await waitUntil(
        async () =>
          (await readdir(path.join(assistant.data, 'queue', 'pending'))).find((name) =>
            name.endsWith('--chat.notify.yaml'),
          ),
        { what: 'the reminder task in pending/' },
      );
      const stamp = /^\d_(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z_/.exec(pending);
      expect(stamp).not.toBeNull();
      const [, year, month, day, hour, minute, second, millisecond] = (stamp ?? []).map(Number);
      const dueAtMs = Date.UTC(year ?? 0, (month ?? 1) - 1, day, hour, minute, second, millisecond);
      // Due about 12 s after the hook fired, not at once.
      expect(dueAtMs).toBeGreaterThan(Date.parse(fired[0]?.at ?? '') + 10_000);

      // Crashed before it is due (the firing was just now, the reminder waits 12 s), with nothing told yet.
      expect(Date.now()).toBeLessThan(dueAtMs);
      await assistant.crash();
      expect(await notifications(assistant.data)).not.toContain('Answer your accountant');

      await assistant.start();
      await waitUntil(
        async () => (await notifications(assistant.data)).includes('Answer your accountant: Tax return due'),
        { what: 'the reminder in the notifications conversation', timeoutMs: 40_000 },
      );
      expect(Date.now()).toBeGreaterThanOrEqual(dueAtMs);
      // Once, even though its hook's firing and its task were on disk when everything was killed.
      const reminder = await waitUntil(
        async () => {
          const dir = path.join(assistant.data, 'queue', 'done');
          const names = (await readdir(dir)).filter((name) => name.includes('chat.notify'));
          return names.length > 0 ? names : false;
        },
        { what: 'the chat.notify task in done/' },
      );
      expect(reminder).toHaveLength(1);
      const text = await notifications(assistant.data);
      expect(occurrences(text, 'Answer your accountant')).toBe(1);
      expect(text).not.toContain('Lunch?');
      expect((await eventsOf(assistant.data, 'hook.fired')).map((event) => event.data.hook)).toEqual(['accountant']);
    } finally {
      await assistant.stop();
    }
  });

  it('three failures within the hour pause the instance: in the pause note with the reason, in the log, and held', {
    timeout: 180_000,
  }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    await dir.write('secrets.yaml', `imap_password: ${JSON.stringify(dovecot.password)}\n`, 0o600);
    const configPath = await dir.write('config.yaml', imapConfig(port));
    await dir.write(
      'hooks/failing-three-times.yaml',
      `on: task.failed
when: {task_type: system.sleep}
count: {at_least: 3, within: 1h, per: task_type}
then:
  - pause: {integration: personal, reason: "{{event.data.task_type}} failed 3 times in an hour"}
`,
    );
    const assistant = assistantOn(dir, configPath, port);
    const cli = async (...args: string[]) => {
      const run = await runCli([...args, '--config', configPath], { cwd: dir.path });
      expect(run.code, `assistant ${args.join(' ')}\n${run.stdout}\n${run.stderr}`).toBe(0);
      return run;
    };
    try {
      await assistant.start();
      // Two failures: below the count, nothing is paused.
      for (const ms of [-1, -2]) await cli('enqueue', 'system.sleep', '--payload', JSON.stringify({ ms }));
      const failedTwice = await waitUntil(
        async () => {
          const found = await eventsOf(assistant.data, 'task.failed');
          return found.length >= 2 ? found : false;
        },
        { what: 'two task.failed events', timeoutMs: 30_000 },
      );
      await handled(assistant.data, failedTwice.at(-1));
      expect(JSON.parse((await cli('paused', '--json')).stdout).entries).toEqual([]);

      await cli('enqueue', 'system.sleep', '--payload', JSON.stringify({ ms: -3 }));
      const paused = await waitUntil(
        async () => {
          const body = JSON.parse((await cli('paused', '--json')).stdout) as {
            entries: { kind: string; name: string; by?: string; reason?: string }[];
          };
          return body.entries.find((entry) => entry.kind === 'instance' && entry.name === 'personal');
        },
        { what: '`assistant paused` to list the instance personal', timeoutMs: 30_000 },
      );
      expect(paused).toMatchObject({
        by: 'hook:failing-three-times',
        reason: 'system.sleep failed 3 times in an hour',
      });
      // The day's human log says it, with the reason.
      const logs = path.join(assistant.data, 'logs');
      const log = (
        await Promise.all((await readdir(logs)).map((file) => readFile(path.join(logs, file), 'utf8')))
      ).join('');
      expect(log).toMatch(/paused personal \(system\.sleep failed 3 times in an hour\)/);
      expect((await eventsOf(assistant.data, 'hook.fired')).map((event) => event.data.hook)).toEqual([
        'failing-three-times',
      ]);

      // In effect: the instance's check, triggered now, is claimed and put back to wait in pending/, never run.
      const trigger = await runCli(['trigger', 'personal', 'inbox', '--json', '--config', configPath], {
        cwd: dir.path,
      });
      expect(trigger.code, trigger.stderr).toBe(0);
      const { id } = JSON.parse(trigger.stdout) as { id: string };
      await waitUntil(
        async () => {
          const shown = JSON.parse((await cli('task', 'show', id, '--json')).stdout) as {
            state: string;
            task?: { readyAt?: string; createdAt?: string };
          };
          // Put back by the paused-instance check: still pending, ready later than it was made.
          const readyMs = Date.parse(shown.task?.readyAt ?? '');
          const createdMs = Date.parse(shown.task?.createdAt ?? '');
          return shown.state === 'pending' && readyMs > createdMs + 1_000;
        },
        { what: `the task ${id} of the paused instance to be held in pending/`, timeoutMs: 30_000 },
      );
      expect(await readdir(path.join(assistant.data, 'queue', 'done'))).not.toContainEqual(expect.stringContaining(id));
    } finally {
      await assistant.stop();
    }
  });

  it('a one-shot hook fires once, is shown fired and disabled, and does not fire after a SIGKILL and a start', {
    timeout: 180_000,
  }, async () => {
    await using dir = await tempDir();
    const port = await freePort();
    await dir.write('secrets.yaml', `imap_password: ${JSON.stringify(dovecot.password)}\n`, 0o600);
    const configPath = await dir.write('config.yaml', imapConfig(port));
    await dir.write(
      'hooks/first-tidy.yaml',
      `on: {type: task.done, filter: {task_type: system.housekeeping.run}}
once: true
then:
  - notify: "Housekeeping ran for the first time"
`,
    );
    const assistant = assistantOn(dir, configPath, port);
    const doneHousekeeping = async () =>
      (await eventsOf(assistant.data, 'task.done')).filter(
        (event) => event.data.task_type === 'system.housekeeping.run',
      );
    const trigger = async () => {
      const run = await runCli(['trigger', 'system', 'housekeeping', '--config', configPath], { cwd: dir.path });
      expect(run.code, run.stderr).toBe(0);
    };
    try {
      await assistant.start();
      for (const count of [1, 2, 3]) {
        await trigger();
        const done = await waitUntil(
          async () => {
            const found = await doneHousekeeping();
            return found.length >= count ? found : false;
          },
          { what: `${count} housekeeping runs done`, timeoutMs: 30_000 },
        );
        await handled(assistant.data, done.at(-1));
      }
      expect((await eventsOf(assistant.data, 'hook.fired')).map((event) => event.data.hook)).toEqual(['first-tidy']);
      // What `assistant hooks ls` shows: fired, and disabled since.
      const { hooks } = await loadRuntime({ installation, configPath, cwd: dir.path });
      const [state] = await readHookStates({ dataDir: assistant.data, hooks });
      expect(state).toMatchObject({ name: 'first-tidy', once: true, firedOnce: true, enabled: false, firings: 1 });
      expect(state?.lastFiredAt).toEqual(expect.any(String));

      await assistant.crash();
      await assistant.start();
      const before = (await doneHousekeeping()).length;
      await trigger();
      const after = await waitUntil(
        async () => {
          const found = await doneHousekeeping();
          return found.length > before ? found : false;
        },
        { what: 'a housekeeping run after the restart', timeoutMs: 30_000 },
      );
      await handled(assistant.data, after.at(-1));
      expect((await eventsOf(assistant.data, 'hook.fired')).map((event) => event.data.hook)).toEqual(['first-tidy']);
      expect(occurrences(await notifications(assistant.data), 'Housekeeping ran for the first time')).toBe(1);
    } finally {
      await assistant.stop();
    }
  });
});

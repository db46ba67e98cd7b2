import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { startDovecot } from './helpers/dovecot.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

/** How many mails the Maildir holds: each is a newsletter to the fake model, so each gets one proposal. */
const mailCount = 4;

/** A small mail dated now (inside the instance's default 14-day window). */
function mail(index: number): string {
  return [
    `From: Letters ${index} <letters${index}@news.example.test>`,
    'To: owner@example.test',
    `Subject: Weekly letter number ${index}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <letter-${index}@news.example.test>`,
    'Content-Type: text/plain; charset=utf-8',
    '',
    `This is weekly letter number ${index}.`,
    '',
  ].join('\r\n');
}

/** Every file under the Maildir with a hash of its content: a move, a flag (a renamed file) or an edit changes it. */
async function maildirState(root: string): Promise<Record<string, string>> {
  const state: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    state[path.relative(root, file)] = createHash('sha256')
      .update(await readFile(file))
      .digest('hex');
  }
  return state;
}

const shadowBody = z.object({
  entries: z.array(z.object({ id: z.string(), instance: z.string(), title: z.string(), wouldHave: z.string() })),
  broken: z.array(z.string()),
});
const healthBody = z.object({
  queue: z.object({ pending: z.number(), active: z.number(), done: z.number(), failed: z.number() }),
});
const tasksBody = z.object({ tasks: z.array(z.object({ type: z.string() })) });

describe('assistant init, then shadow mode on a Maildir', () => {
  it('init --yes writes a working config in shadow mode; start and a trigger take 0 actions and show one proposal per mail', async () => {
    await using model = await FakeOpenAiServer.start({
      // Every classification says newsletter, so init's rule "archive newsletters" matches each mail; memory's
      // consolidation (on by default, a structured call asking for `people`) learns nothing from a newsletter.
      respond: (request) =>
        request.body.response_format
          ? JSON.stringify(request.body.response_format).includes('"people"')
            ? { json: { people: [], facts: [], followups: [] } }
            : { json: { human: 0.05, requires_response: false, newsletter: true, urgent: false } }
          : { text: 'a reply' },
    });
    await using dir = await tempDir();
    for (let index = 0; index < mailCount; index++) {
      await dir.write(`Maildir/new/1795000000.${index}.test`, mail(index));
    }
    await dir.write('Maildir/cur/.keep', '');
    const maildir = path.join(dir.path, 'Maildir');
    const before = await maildirState(maildir);
    const port = await freePort();
    const config = path.join(dir.path, 'config.yaml');
    const cli = (args: string[]) => runCli([...args, '--config', config], { cwd: dir.path, timeoutMs: 60_000 });

    const init = await cli([
      'init',
      '--yes',
      '--model-url',
      model.url,
      '--model',
      'fake-model',
      '--maildir',
      './Maildir',
      '--address',
      'owner@example.test',
      '--port',
      String(port),
    ]);
    expect(init.stderr).toBe('');
    expect(init.code).toBe(0);
    // The model was probed (GET /models), the Maildir checked, config check ran.
    expect(init.stdout).toMatch(/^ok .*GET .*\/models answered HTTP 200, model fake-model available$/m);
    expect(init.stdout).toMatch(/^ok .*Maildir .* has 4 messages in INBOX$/m);
    expect(init.stdout).toMatch(/config\.yaml: OK$/m);
    expect(init.stdout).toMatch(
      /^ {4}personal \(email\), shadow mode \(proposes only\), platforms: inbox, every 15m$/m,
    );
    const written = await readFile(config, 'utf8');
    expect(written).toMatch(/^ {4}shadow: true$/m);
    expect(written).toMatch(/^# Assistant configuration, written by `assistant init`/m);
    expect((await stat(path.join(dir.path, 'secrets.yaml'))).mode & 0o777).toBe(0o600);

    // A second init refuses to overwrite what the first wrote.
    const again = await cli(['init', '--yes', '--maildir', './Maildir', '--model-url', model.url]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/config\.yaml exists already/);
    expect(await readFile(config, 'utf8')).toBe(written);

    const start = startNode({ args: [cliMain, 'start', '--config', config], cwd: dir.path });
    try {
      await start.waitForOutput(/^\[server\] .*listening on http:\/\/127\.0\.0\.1:\d+/m, { timeoutMs: 60_000 });
      await start.waitForOutput(/^\[worker\] .*worker ready/m, { timeoutMs: 60_000 });
      const api = `http://127.0.0.1:${port}`;
      const assistant = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const triggered = await assistant(`${api}/api/integrations/personal/inbox/trigger`, { method: 'POST' });
      expect(triggered.status).toBeLessThan(300);

      const shadow = await waitUntil(
        async () => {
          const body = shadowBody.parse(await (await assistant(`${api}/api/shadow?instance=personal`)).json());
          return body.entries.length >= mailCount ? body : undefined;
        },
        { what: `${mailCount} shadow proposals`, timeoutMs: 90_000 },
      );
      // Then the queue drains: every task of the cycle is done, none failed, none waits.
      const drained = await waitUntil(
        async () => {
          const { queue } = healthBody.parse(await (await assistant(`${api}/health`)).json());
          return queue.pending === 0 && queue.active === 0 ? queue : undefined;
        },
        { what: 'the queue to drain', timeoutMs: 60_000 },
      );
      expect(drained.failed).toBe(0);
      expect(shadow.entries).toHaveLength(mailCount);
      expect(shadow.broken).toEqual([]);
      expect(shadow.entries.every((entry) => entry.wouldHave === 'archive')).toBe(true);
      // Each item is named by its subject.
      for (let index = 0; index < mailCount; index++) {
        expect(shadow.entries.filter((entry) => entry.title.includes(`Weekly letter number ${index}`))).toHaveLength(1);
      }

      // 0 actions: no act task ever ran, and the Maildir is as it was, file for file.
      const done = tasksBody.parse(await (await assistant(`${api}/api/tasks?state=done&limit=500`)).json());
      expect(done.tasks.filter((task) => task.type === 'email.inbox.act')).toEqual([]);
      expect(await maildirState(maildir)).toEqual(before);

      // The CLI shows the same N proposals.
      const report = await cli(['shadow', 'report', 'personal']);
      expect(report.code).toBe(0);
      expect(report.stdout.match(/^ {4}would have: archive \(rule "archive newsletters"/gm)).toHaveLength(mailCount);
      expect(report.stdout).toMatch(new RegExp(`^${mailCount} proposals \\(${mailCount} pending\\)`, 'm'));

      // A proposal cannot be approved while the instance is in shadow mode.
      const first = shadow.entries[0]?.id ?? '';
      const approve = await assistant(`${api}/api/approvals/${first}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ decision: 'approve' }),
      });
      expect(approve.status).toBe(409);
      expect(await approve.text()).toMatch(/still in shadow mode/);
      expect(await maildirState(maildir)).toEqual(before);
    } finally {
      start.child.kill('SIGTERM');
      await start.exited;
    }

    // Leaving shadow mode is one command, which keeps config.yaml's comments.
    const off = await cli(['shadow', 'off', 'personal']);
    expect(off.code).toBe(0);
    expect(off.stdout).toMatch(/^personal left shadow mode/m);
    const after = await readFile(config, 'utf8');
    expect(after).toMatch(/^ {4}shadow: false$/m);
    expect(after.replace(/^ {4}shadow: false$/m, '    shadow: true')).toBe(written);
    expect((await cli(['config', 'check'])).code).toBe(0);
  }, 240_000);
});

describe('assistant init, asking', () => {
  it('asks each question in turn, tests the model and the Maildir, keeps the typed bot token out of the output and config.yaml', async () => {
    await using model = await FakeOpenAiServer.start({ replies: [] });
    await using dir = await tempDir();
    await dir.write('Mail/new/1795000000.0.test', mail(0));
    const config = path.join(dir.path, 'config.yaml');
    const init = startNode({ args: [cliMain, 'init', '--config', config], cwd: dir.path, stdin: 'pipe' });
    const botToken = '123456:secret-bot-token-typed-at-the-prompt';
    try {
      const answers: [RegExp, string][] = [
        [/Model endpoint \(OpenAI-compatible base URL\) \[http:\/\/127\.0\.0\.1:11434\/v1\]: $/, model.url],
        [/Model name \[llama3\.2\]: $/, 'fake-model'],
        [/Your first mailbox: imap or maildir\? \[imap\]: $/, 'maildir'],
        [/Maildir path \(relative to config\.yaml\) \[\.\/Maildir\]: $/, './Mail'],
        [/Your address \(optional\): $/, 'owner@example.test'],
        [/Chat with Assistant over Telegram\? \(y\/n\) \[n\]: $/, 'y'],
        [/Bot token from @BotFather: $/, botToken],
        [/Your Telegram user id \(digits; others are ignored\): $/, '42'],
        [/Serve the dashboard\? \(y\/n\) \[y\]: $/, 'n'],
      ];
      for (const [prompt, answer] of answers) {
        // Each answer is written once its question is on screen: the last thing printed so far.
        await init.waitForOutput(new RegExp(prompt.source.replace(/\$$/, ''), 'm'), { timeoutMs: 60_000 });
        expect(init.stdout()).toMatch(prompt);
        init.child.stdin?.write(`${answer}\n`);
      }
      const run = await init.exited;
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^ok .*model fake-model available$/m);
      expect(run.stdout).toMatch(/^ok .*Maildir .*Mail has 1 messages in INBOX$/m);
      expect(run.stdout).toMatch(/config\.yaml: OK$/m);
      expect(run.stdout).not.toContain(botToken);
    } finally {
      init.child.kill('SIGKILL');
      await init.exited;
    }
    const written = await readFile(config, 'utf8');
    expect(written).not.toContain(botToken);
    expect(written).toMatch(/^ {6}token: !secret telegram_bot_token$/m);
    expect(written).toMatch(/^ {6}allowed_users: \[42\]$/m);
    expect(written).toMatch(/^ {2}dashboard: false$/m);
    expect(written).toMatch(/^ {4}shadow: true$/m);
    expect(await readFile(path.join(dir.path, 'secrets.yaml'), 'utf8')).toContain(`telegram_bot_token: "${botToken}"`);
  }, 120_000);
});

describe('assistant init with IMAP', () => {
  it('logs in to test the mailbox: a wrong password fails with what is wrong, the right one passes', async () => {
    await using dovecot = await startDovecot();
    await using model = await FakeOpenAiServer.start({ replies: [] });
    await using dir = await tempDir();
    const config = path.join(dir.path, 'config.yaml');
    const wrong = await dir.write('wrong-password', 'not the password\n', 0o600);
    const right = await dir.write('password', `${dovecot.password}\n`, 0o600);
    const init = (passwordFile: string, extra: string[] = []) =>
      runCli(
        [
          'init',
          '--yes',
          '--config',
          config,
          '--model-url',
          model.url,
          '--model',
          'fake-model',
          '--imap-host',
          dovecot.host,
          '--imap-port',
          String(dovecot.port),
          '--no-imap-tls',
          '--imap-user',
          dovecot.user,
          '--imap-password-file',
          passwordFile,
          ...extra,
        ],
        { cwd: dir.path, timeoutMs: 60_000 },
      );
    const failed = await init(wrong);
    expect(failed.code).toBe(2);
    expect(failed.stdout).toMatch(/^FAIL/m);
    expect(failed.stderr).toMatch(/^assistant: the mailbox does not work: /m);
    const passed = await init(right, ['--force']);
    expect(passed.stderr).toBe('');
    expect(passed.code).toBe(0);
    expect(passed.stdout).toMatch(/config\.yaml: OK$/m);
    const written = await readFile(config, 'utf8');
    expect(written).toMatch(/^ {4}password: !secret imap_password$/m);
    expect(written).not.toContain(dovecot.password);
    const secrets = path.join(dir.path, 'secrets.yaml');
    expect(await readFile(secrets, 'utf8')).toContain(`imap_password: ${JSON.stringify(dovecot.password)}`);
    expect((await stat(secrets)).mode & 0o777).toBe(0o600);
  }, 120_000);
});

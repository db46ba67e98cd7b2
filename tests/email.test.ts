// The email integration end to end: a real Dovecot with the 20 test messages, the fake OpenAI-compatible server as
// the classifier, `assistant trigger` and `assistant work`, and the results checked on the IMAP server.
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { type Dovecot, startDovecot } from './helpers/dovecot.ts';
import { appendMessages, listMailbox, readMailFixtures, withImapClient } from './helpers/imap-client.ts';
import { type Judgement, judgements } from './helpers/mail-judgements.ts';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { startSmtpSink } from './helpers/smtp-sink.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

function fakeModel(table: Judgement[]) {
  return (request: FakeChatRequest): FakeReply => {
    const messages = request.body.messages as { role: string; content: string }[];
    const text = messages.map((message) => message.content).join('\n');
    const subject = /<<<UNTRUSTED-\S+ subject>>>\n([\s\S]*?)\n<<<END/.exec(text)?.[1]?.trim() ?? '';
    if (!request.body.response_format) return { text: 'Thank you, I will get back to you today.' };
    const row = table.find((candidate) => candidate.subject === subject);
    if (!row) return { json: { human: 0.5, requires_response: false, newsletter: false, urgent: false } };
    return {
      json: {
        human: row.human ? 0.95 : 0.05,
        requires_response: row.requiresResponse,
        newsletter: row.newsletter,
        urgent: false,
      },
    };
  };
}

/** The fixture classifier, which also calls the test's own "Loopback Letters" a newsletter. */
function newsletterModel(answer: (request: FakeChatRequest) => FakeReply) {
  return (request: FakeChatRequest): FakeReply => {
    const text = JSON.stringify(request.body.messages);
    if (request.body.response_format && text.includes('Loopback Letters')) {
      return { json: { human: 0.05, requires_response: false, newsletter: true, urgent: false } };
    }
    return answer(request);
  };
}

/**
 * secrets.yaml with the test server's password, and config.yaml with one mailbox `personal` on it and the fake model.
 * `top` is more top-level YAML; `instance` the instance's further keys (indented four spaces). Returns config.yaml's path.
 */
async function writeMailboxConfig(
  dir: TempDir,
  options: { dovecot: Dovecot; modelUrl: string; top?: string; instance: string },
): Promise<string> {
  const { dovecot } = options;
  await dir.write('secrets.yaml', `imap_password: ${JSON.stringify(dovecot.password)}\n`, 0o600);
  return dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${options.modelUrl}", model: fake-model}
${options.top ?? ''}integrations:
  - type: email
    name: personal
    imap_server: ${dovecot.host}
    port: ${dovecot.port}
    tls: false
    username: ${dovecot.user}
    password: !secret imap_password
    window: 3650d
${options.instance}`,
  );
}

describe('the email integration against Dovecot', () => {
  it('collects, classifies and acts on 20 messages, on the server, and does nothing twice', async () => {
    await using dovecot = await startDovecot();
    const fixtures = await readMailFixtures();
    await appendMessages(
      dovecot,
      'INBOX',
      fixtures.map((fixture) => fixture.text),
    );
    const table = await judgements();
    await using model = await FakeOpenAiServer.start({ respond: fakeModel(table) });
    await using dir = await tempDir();
    await writeMailboxConfig(dir, {
      dovecot,
      modelUrl: model.url,
      instance: `    authserv_ids: [mx.example.test]
    platforms:
      inbox:
        automations:
          - name: archive newsletters
            when: {newsletter: true}
            then: archive
          - name: answer people
            when: {human: ">= 0.8", requires_response: true}
            then: [flag, draft_reply]
          - name: read notifications
            when: {is_noreply: true}
            then: mark_read
          - name: quarantine failed authentication
            when: {authentication: fail}
            then: {move: Junk}
`,
    });
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    const triggered = await cli(['trigger', 'personal', 'inbox']);
    expect(triggered.stderr).toBe('');
    expect(triggered.code).toBe(0);
    const work = await cli(['work', '--exit-when-idle']);
    expect(work.stderr).toBe('');
    expect(work.code).toBe(0);

    const byFile = (file: string) => fixtures.findIndex((fixture) => fixture.file.startsWith(file));
    const subjectOf = (file: string) => table[byFile(file)]?.subject;
    const inbox = await listMailbox(dovecot, 'INBOX');
    const archive = await listMailbox(dovecot, 'Archive');
    const junk = await listMailbox(dovecot, 'Junk');
    const drafts = await listMailbox(dovecot, 'Drafts');
    expect(archive.map((message) => message.subject).sort()).toEqual(['04', '05', '06'].map(subjectOf).sort());
    expect(junk.map((message) => message.subject)).toEqual([subjectOf('16')]);
    expect(inbox).toHaveLength(16);
    const flagged = inbox.filter((message) => message.flags.includes('\\Flagged')).map((message) => message.subject);
    const needsAnswer = table.filter((row) => row.human && row.requiresResponse).map((row) => row.subject);
    expect(flagged.sort()).toEqual(needsAnswer.sort());
    expect(drafts.map((message) => message.subject).sort()).toEqual(
      needsAnswer.map((subject) => (subject.startsWith('Re:') ? subject : `Re: ${subject}`)).sort(),
    );
    const read = inbox.filter((message) => message.flags.includes('\\Seen')).map((message) => message.subject);
    expect(read.sort()).toEqual(['11', '12', '13'].map(subjectOf).sort());

    const notes = JSON.parse((await cli(['notes', 'ls', 'email/personal', '--json'])).stdout) as string[];
    expect(notes).toHaveLength(20);
    const maria = JSON.parse(
      (await cli(['notes', 'search', 'Lisbon apartment', '--in', 'email/personal', '--json'])).stdout,
    );
    expect(JSON.stringify(maria)).toContain('keller-family.example');
    const log = (await cli(['log'])).stdout;
    expect(log).toMatch(/20 new messages in INBOX/);
    expect(log).toMatch(/done: archived: "The Weekly Brief/);
    expect(log).toMatch(/done: flagged, saved a draft reply: "Lunch on Tuesday\?"/);

    // A second cycle: nothing new to collect, classify or act on. The owner moved one newsletter back into the
    // INBOX meanwhile: it has a new UID, but its note is found by Message-ID and it is not archived again.
    await withImapClient(dovecot, async (client) => {
      await client.mailboxOpen('Archive');
      const [first] = archive;
      if (first) await client.messageMove(String(first.uid), 'INBOX', { uid: true });
    });
    const before = (await cli(['queue', 'stats', '--json'])).stdout;
    const calls = model.requests.length;
    await cli(['trigger', 'personal', 'inbox']);
    await cli(['work', '--exit-when-idle']);
    const after = JSON.parse((await cli(['queue', 'stats', '--json'])).stdout) as { done: number };
    expect(after.done).toBe((JSON.parse(before) as { done: number }).done + 1);
    expect(model.requests.length).toBe(calls);
    expect(await listMailbox(dovecot, 'Archive')).toHaveLength(2);
    expect(JSON.parse((await cli(['notes', 'ls', 'email/personal', '--json'])).stdout)).toHaveLength(20);
  });

  it('fails the running tasks with a clear error when the IMAP server dies mid-cycle, and recovers when it is back', async () => {
    await using dovecot = await startDovecot();
    const fixtures = (await readMailFixtures()).slice(0, 6);
    await appendMessages(
      dovecot,
      'INBOX',
      fixtures.map((fixture) => fixture.text),
    );
    const table = await judgements();
    // Slow answers keep the cycle busy while the server is killed.
    const answer = fakeModel(table);
    await using model = await FakeOpenAiServer.start({ respond: (request) => ({ ...answer(request), delayMs: 150 }) });
    await using dir = await tempDir();
    const config = await writeMailboxConfig(dir, {
      dovecot,
      modelUrl: model.url,
      // Every collect still to run when the server dies fails at once, and how many there are is a matter of timing:
      // five would open the type's breaker for five minutes. This test is about retries, not the breaker.
      top: `worker: {concurrency: 2, poll_interval: 100ms, shutdown_grace: 2s}
circuit_breaker: {failures: 1000}
queue:
  policies:
    overrides:
      "email.*": {max_attempts: 30, backoff: {type: fixed, delay: 1s}}
`,
      instance: `    connect_timeout: 2s
    platforms:
      inbox:
        automations:
          - {when: {newsletter: true}, then: archive}
`,
    });
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    const worker = startNode({ args: [cliMain, 'work', '--config', config], cwd: dir.path });
    try {
      await worker.waitForOutput(/worker ready/);
      await cli(['trigger', 'personal', 'inbox']);
      // Once the first message is being classified, the collects are under way: kill the server.
      await waitUntil(() => model.requests.length >= 1, { what: 'the first classification request to the model' });
      await dovecot.kill();
      // A retried task waits in pending/ with the failed attempt in its history: read the files directly.
      const pending = path.join(dir.path, 'data/queue/pending');
      const failedAttempt = await waitUntil(
        async () => {
          for (const name of await readdir(pending).catch(() => [] as string[])) {
            const text = await readFile(path.join(pending, name), 'utf8').catch(() => '');
            const message = /^\s+message: (.*)$/m.exec(text.slice(text.indexOf('history:')))?.[1];
            if (text.includes('history:') && message) return message.replace(/^["']|["']$/g, '');
          }
          return undefined;
        },
        { what: 'a task in pending/ with a failed attempt in its history' },
      );
      expect(failedAttempt).toMatch(
        new RegExp(
          `^(cannot reach the IMAP server 127\\.0\\.0\\.1:${dovecot.port}|IMAP 127\\.0\\.0\\.1:${dovecot.port}): `,
        ),
      );
      await dovecot.restart();
      // The retries find the server again: every message is collected, classified and evaluated.
      let seen = '';
      await waitUntil(
        async () => {
          const stats = JSON.parse((await cli(['queue', 'stats', '--json'])).stdout) as {
            pending: number;
            active: number;
          };
          const notes = JSON.parse((await cli(['notes', 'ls', 'email/personal', '--json'])).stdout) as string[];
          seen = `queue ${JSON.stringify(stats)}, ${notes.length} notes`;
          return stats.pending === 0 && stats.active === 0 && notes.length === 6 ? true : undefined;
        },
        { what: 'an idle queue and 6 notes in email/personal' },
      ).catch((error: unknown) => {
        // Failed once in CI (a 25 s wait after the restart, not reproduced): say what the queue and the worker did.
        const tail = (text: string) => text.split('\n').slice(-60).join('\n');
        throw new Error(
          `${error instanceof Error ? error.message : String(error)}; last seen: ${seen}\nworker stdout:\n${tail(worker.stdout())}\nworker stderr:\n${tail(worker.stderr())}`,
        );
      });
      const stats = JSON.parse((await cli(['queue', 'stats', '--json'])).stdout) as { failed: number };
      expect(stats.failed).toBe(0);
      const archived = await listMailbox(dovecot, 'Archive');
      expect(archived.map((message) => message.subject).sort()).toEqual(
        table
          .filter((row) => row.newsletter && fixtures.some((fixture) => fixture.file === row.file))
          .map((row) => row.subject)
          .sort(),
      );
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});

describe('irreversible email actions', () => {
  it('sends a reply only after approval, unsubscribes by mail with a fixed text under !yolo, and never twice', async () => {
    await using dovecot = await startDovecot();
    const [maria] = await readMailFixtures();
    // A newsletter whose mailto: unsubscribe asks for a subject and body of its own choosing (hole 4).
    const newsletter = [
      'From: Loopback Letters <letters@loopback.example>',
      'To: alice@example.test',
      'Subject: Loopback Letters #1',
      'Date: Sat, 21 Nov 2026 09:00:00 +0000',
      'Message-ID: <letters-1@loopback.example>',
      'List-Unsubscribe: <mailto:leave-alice@loopback.example?subject=Please%20wire%20EUR%209000&body=Invoice%2042%20approved>',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'This week: nothing much.',
      '',
    ].join('\r\n');
    await appendMessages(dovecot, 'INBOX', [maria?.text ?? '', newsletter]);
    await using smtp = await startSmtpSink();
    const smtpPort = smtp.port;
    const table = await judgements();
    await using model = await FakeOpenAiServer.start({ respond: newsletterModel(fakeModel(table)) });
    await using dir = await tempDir();
    await writeMailboxConfig(dir, {
      dovecot,
      modelUrl: model.url,
      instance: `    smtp: {host: 127.0.0.1, port: ${smtpPort}, from: alice@example.test}
    platforms:
      inbox:
        automations:
          - name: answer people
            when: {human: ">= 0.8", requires_response: true}
            then: send_reply
            approval: required
          - name: leave newsletters
            when: {newsletter: true, has_list_unsubscribe: true}
            then: !yolo unsubscribe
`,
    });
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    const triggered = await cli(['trigger', 'personal', 'inbox']);
    // `!yolo` is warned about at every start.
    expect(triggered.stderr).toMatch(
      /^warning: config\.yaml:\d+:\d+: .*`!yolo`: this action runs without human approval/,
    );
    expect(triggered.code).toBe(0);
    expect((await cli(['work', '--exit-when-idle'])).code).toBe(0);
    // The unsubscribe mail: the fixed text, to the one address, whatever the URL asked for.
    expect(smtp.mails).toHaveLength(1);
    const unsubscribeMail = await simpleParser(smtp.mails[0]?.text ?? '');
    expect(unsubscribeMail.subject).toBe('unsubscribe');
    expect(unsubscribeMail.text?.trim()).toBe('unsubscribe');
    expect(smtp.mails[0]?.text).toMatch(/^To: leave-alice@loopback\.example$/m);
    const pending = JSON.parse((await cli(['approvals', '--json'])).stdout) as { id: string; title: string }[];
    expect(pending.map((request) => request.title)).toEqual([`"${table[0]?.subject}"`]);

    expect((await cli(['approve', pending[0]?.id ?? ''])).code).toBe(0);
    expect((await cli(['work', '--exit-when-idle'])).code).toBe(0);
    expect(smtp.mails).toHaveLength(2);
    expect(smtp.mails[1]?.text).toMatch(/^To: Maria Keller <maria\.keller@keller-family\.example>$/m);
    expect(smtp.mails[1]?.text).toMatch(/^In-Reply-To: <[^>]+>$/m);
    expect(smtp.mails[1]?.text).toMatch(/^Subject: Re: Lisbon apartment/m);

    // Another cycle: nothing is sent or unsubscribed again.
    await cli(['trigger', 'personal', 'inbox']);
    await cli(['work', '--exit-when-idle']);
    expect(smtp.mails).toHaveLength(2);
    const log = (await cli(['log'])).stdout;
    expect(log).toMatch(/unsubscribed \(mail to leave-alice@loopback\.example\): "Loopback Letters #1"/);
    expect(log).toMatch(/sent a reply \("Thank you, I will get back to you today\."\): "Lisbon apartment/);
  });

  it('hole 3: a one-click unsubscribe to a loopback address is refused and recorded, not followed', async () => {
    await using dovecot = await startDovecot();
    // This machine's own web service, which a hostile List-Unsubscribe points at.
    const reached: string[] = [];
    const web = http.createServer((request, response) => {
      reached.push(`${request.method} ${request.url}`);
      response.end('ok');
    });
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    const webPort = (web.address() as AddressInfo).port;
    const newsletter = (number: number, target: string) =>
      [
        'From: Loopback Letters <letters@loopback.example>',
        'To: alice@example.test',
        `Subject: Loopback Letters #${number}`,
        'Date: Sat, 21 Nov 2026 09:00:00 +0000',
        `Message-ID: <letters-${number}@loopback.example>`,
        `List-Unsubscribe: <${target}>`,
        'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'This week: nothing much.',
        '',
      ].join('\r\n');
    await appendMessages(dovecot, 'INBOX', [
      newsletter(1, `http://127.0.0.1:${webPort}/admin/u/alice`),
      newsletter(2, `https://127.0.0.1:${webPort}/admin/u/alice`),
    ]);
    await using model = await FakeOpenAiServer.start({ respond: newsletterModel(fakeModel(await judgements())) });
    await using dir = await tempDir();
    await writeMailboxConfig(dir, {
      dovecot,
      modelUrl: model.url,
      instance: `    platforms:
      inbox:
        automations:
          - name: leave newsletters
            when: {newsletter: true, has_list_unsubscribe: true}
            then: !yolo unsubscribe
`,
    });
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    try {
      expect((await cli(['trigger', 'personal', 'inbox'])).code).toBe(0);
      expect((await cli(['work', '--exit-when-idle'])).code).toBe(0);
      expect(reached).toEqual([]);
      // Recorded on each note and in the log; the act tasks failed without retries.
      const paths = JSON.parse((await cli(['notes', 'ls', 'email/personal', '--json'])).stdout) as string[];
      const notes = await Promise.all(
        paths.map(
          async (notePath) =>
            JSON.parse((await cli(['notes', 'show', notePath, '--json'])).stdout) as { data: Record<string, unknown> },
        ),
      );
      const refusals = Object.fromEntries(notes.map((note) => [note.data.subject, note.data.unsubscribe_refused]));
      expect(refusals).toEqual({
        'Loopback Letters #1': expect.stringMatching(/^refused: the one-click target is http:/),
        'Loopback Letters #2': `refused: the unsubscribe target 127.0.0.1:${webPort} is 127.0.0.1, not a public internet address`,
      });
      expect(notes.every((note) => note.data.unsubscribed_at === undefined)).toBe(true);
      expect(notes.find((note) => note.data.subject === 'Loopback Letters #2')?.data).toMatchObject({
        unsubscribe_method: 'one-click',
        unsubscribe_target: `127.0.0.1:${webPort}`,
      });
      const log = (await cli(['log'])).stdout;
      expect(log.match(/did not unsubscribe: refused: /g)).toHaveLength(2);
      const stats = JSON.parse((await cli(['queue', 'stats', '--json'])).stdout) as { failed: number; pending: number };
      expect(stats).toMatchObject({ failed: 2, pending: 0 });
      // Another cycle does not try again.
      await cli(['trigger', 'personal', 'inbox']);
      await cli(['work', '--exit-when-idle']);
      expect(reached).toEqual([]);
    } finally {
      await new Promise((resolve) => web.close(resolve));
    }
  });
});

describe('replies to a hostile sender', () => {
  it("hole 7: line breaks in a sender's name, subject or Message-ID add no header to the draft saved over IMAP or the reply sent", async () => {
    await using dovecot = await startDovecot();
    const encoded = (text: string) => `=?UTF-8?B?${Buffer.from(text, 'utf8').toString('base64')}?=`;
    // Encoded words decode to real CR/LF in the parsed name and subject.
    const hostile = [
      `From: ${encoded('Mallory\r\nBcc: victim@elsewhere.example')} <mallory@evil.example>`,
      'To: alice@example.test',
      `Subject: ${encoded('Quick question\r\nBcc: victim@elsewhere.example\r\nX-Injected: yes')}`,
      'Date: Sat, 21 Nov 2026 09:00:00 +0000',
      'Message-ID: <1@evil.example>\r\n Bcc: victim@elsewhere.example',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Can you answer today?',
      '',
    ].join('\r\n');
    await appendMessages(dovecot, 'INBOX', [hostile]);
    await using smtp = await startSmtpSink();
    const smtpPort = smtp.port;
    const received = smtp.mails;
    await using model = await FakeOpenAiServer.start({ respond: fakeModel(await judgements()) });
    await using dir = await tempDir();
    await writeMailboxConfig(dir, {
      dovecot,
      modelUrl: model.url,
      instance: `    smtp: {host: 127.0.0.1, port: ${smtpPort}, from: alice@example.test}
    platforms:
      inbox:
        automations:
          - name: answer evil.example
            when: {from_domain: evil.example}
            then: [draft_reply, !yolo send_reply] # from_domain is the sender's word: hybrid, so !yolo (hole 6)
`,
    });
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    expect((await cli(['trigger', 'personal', 'inbox'])).code).toBe(0);
    expect((await cli(['work', '--exit-when-idle'])).code).toBe(0);
    const [draft] = await withImapClient(dovecot, async (client) => {
      await client.mailboxOpen('Drafts');
      const sources: Buffer[] = [];
      for await (const message of client.fetch('1:*', { source: true })) {
        if (message.source) sources.push(message.source);
      }
      return sources;
    });
    expect(received).toHaveLength(1);
    expect(received[0]?.to).toEqual(['mallory@evil.example']);
    for (const raw of [draft ?? '', received[0]?.text ?? '']) {
      const parsed = await simpleParser(raw);
      expect(parsed.headerLines.map((line) => line.key).sort()).toEqual([
        'content-transfer-encoding',
        'content-type',
        'date',
        'from',
        'message-id',
        'mime-version',
        'subject',
        'to',
      ]);
      const to = Array.isArray(parsed.to) ? parsed.to : parsed.to ? [parsed.to] : [];
      expect(to.flatMap((group) => group.value.map((address) => address.address))).toEqual(['mallory@evil.example']);
      expect(parsed.subject).toMatch(/^Re: Quick question Bcc: victim@elsewhere\.example X-Injected: yes$/);
    }
  });
});

describe('a reply sent after approval', () => {
  it('issue 30: sends exactly the text the approval showed, written before asking; the model is not asked again', async () => {
    const fixtures = (await readMailFixtures()).filter((fixture) => /^0[12]-/.test(fixture.file));
    const table = await judgements();
    // Every reply the model writes is another one: a text written again at act time would differ from the approved.
    const replies: string[] = [];
    const classify = fakeModel(table);
    await using model = await FakeOpenAiServer.start({
      respond: (request) => {
        if (request.body.response_format) return classify(request);
        replies.push(`Thanks, reply number ${replies.length + 1} from Alice.`);
        return { text: replies.at(-1) ?? '' };
      },
    });
    await using smtp = await startSmtpSink();
    await using dir = await tempDir();
    for (const [index, fixture] of fixtures.entries()) {
      await dir.write(`Maildir/new/1795000000.${index}.test`, fixture.text);
    }
    await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    window: 3650d
    smtp: {host: 127.0.0.1, port: ${smtp.port}, from: alice@example.test}
    platforms:
      inbox:
        automations:
          - name: answer people
            when: {human: ">= 0.8", requires_response: true}
            then: send_reply
            approval: required
`,
    );
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    expect((await cli(['trigger', 'local', 'inbox'])).code).toBe(0);
    expect((await cli(['work', '--exit-when-idle'])).code).toBe(0);
    expect(smtp.mails).toEqual([]);
    // Each request carries the reply, written when the message was evaluated: one model reply per message.
    const pending = JSON.parse((await cli(['approvals', '--json'])).stdout) as {
      id: string;
      title: string;
      actions: { name: string; text?: string }[];
    }[];
    expect(replies).toHaveLength(2);
    const maria = pending.find((request) => request.title.includes('Lisbon apartment'));
    const tom = pending.find((request) => request.title.includes('Lunch on Tuesday'));
    const approvedText = maria?.actions[0]?.text ?? '';
    expect(replies).toContain(approvedText);
    expect(tom?.actions[0]?.text).toMatch(/^Thanks, reply number \d from Alice\.$/);
    expect(tom?.actions[0]?.text).not.toBe(approvedText);

    // Tom's request with its text taken out by hand after it was made: what would run is no longer what it showed.
    const tomFile = path.join(dir.path, 'data/notes/approvals', `${tom?.id}.md`);
    const edited = (await readFile(tomFile, 'utf8')).replace(/^ +text: .*\n/m, '');
    expect(edited).not.toMatch(/text: /);
    await dir.write(`data/notes/approvals/${tom?.id}.md`, edited);

    expect((await cli(['approve', maria?.id ?? ''])).code).toBe(0);
    expect((await cli(['approve', tom?.id ?? ''])).code).toBe(0);
    expect((await cli(['work', '--exit-when-idle'])).code).toBe(0);
    // Exactly the approved words went out, and the model was not asked for new ones.
    expect(replies).toHaveLength(2);
    expect(smtp.mails).toHaveLength(1);
    expect(smtp.mails[0]?.to).toEqual(['maria.keller@keller-family.example']);
    expect((await simpleParser(smtp.mails[0]?.text ?? '')).text?.trim()).toBe(approvedText);
    // The request whose text was taken out sent nothing and says why: the act no longer renders to its digest.
    const failed = JSON.parse((await cli(['queue', 'ls', '--state', 'failed', '--json'])).stdout) as { id: string }[];
    expect(failed).toHaveLength(1);
    expect((await cli(['task', 'show', failed[0]?.id ?? '', '--json'])).stdout).toMatch(
      /send_reply`: what the task would run is not what approval ap-[0-9a-f]{12} showed the owner/,
    );
    // What was sent is on the note and in the log.
    const notes = JSON.parse((await cli(['notes', 'ls', 'email/local', '--json'])).stdout) as string[];
    const shown = await Promise.all(
      notes.map(
        async (notePath) =>
          JSON.parse((await cli(['notes', 'show', notePath, '--json'])).stdout) as { data: Record<string, unknown> },
      ),
    );
    expect(shown.find((note) => String(note.data.subject).startsWith('Lisbon'))?.data.reply_text).toBe(approvedText);
    expect((await cli(['log'])).stdout).toContain(`sent a reply (${JSON.stringify(approvedText)}): "Lisbon apartment`);
  }, 240_000);
});

describe('a Maildir as the source', () => {
  it('reads, classifies and acts on a local Maildir: moves are renames, flags are letters in the file name', async () => {
    const fixtures = (await readMailFixtures()).filter((fixture) => /^(0[1-4]|11)-/.test(fixture.file));
    const table = await judgements();
    await using model = await FakeOpenAiServer.start({ respond: fakeModel(table) });
    await using dir = await tempDir();
    for (const [index, fixture] of fixtures.entries()) {
      await dir.write(`Maildir/new/1795000000.${index}.test`, fixture.text);
    }
    await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    window: 3650d
    platforms:
      inbox:
        automations:
          - {when: {newsletter: true}, then: archive}
          - {when: {human: ">= 0.8", requires_response: true}, then: [flag, draft_reply]}
          - {when: {is_noreply: true}, then: mark_read}
`,
    );
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });
    expect((await cli(['trigger', 'local', 'inbox'])).code).toBe(0);
    const work = await cli(['work', '--exit-when-idle']);
    expect(work.stderr).toBe('');
    // Messages nobody touched stay in new/, as a mail client would leave them; changed flags move a message to cur/.
    expect(await readdir(path.join(dir.path, 'Maildir/new'))).toEqual(['1795000000.2.test']);
    const inbox = (await readdir(path.join(dir.path, 'Maildir/cur'))).sort();
    const archived = await readdir(path.join(dir.path, 'Maildir/.Archive/cur'));
    const drafts = await readdir(path.join(dir.path, 'Maildir/.Drafts/cur'));
    expect(archived).toEqual(['1795000000.3.test:2,']);
    expect(inbox).toEqual(['1795000000.0.test:2,F', '1795000000.1.test:2,F', '1795000000.4.test:2,S']);
    expect(drafts).toHaveLength(2);
    expect(drafts.every((name) => name.endsWith(':2,DS'))).toBe(true);
    const draft = await readFile(path.join(dir.path, 'Maildir/.Drafts/cur', drafts[0] ?? ''), 'utf8');
    expect(draft).toMatch(/^In-Reply-To: <[^>]+>$/m);
    const notes = JSON.parse((await cli(['notes', 'ls', 'email/local', '--json'])).stdout) as string[];
    expect(notes).toHaveLength(5);
    const doctor = await cli(['doctor']);
    expect(doctor.stdout).toMatch(/^ok {3}email local: Maildir .*Maildir has 4 messages in INBOX$/m);
  });
});

describe('assistant doctor for email', () => {
  it('logs in and says what is wrong: a wrong password, a closed port', async () => {
    await using dovecot = await startDovecot();
    await appendMessages(
      dovecot,
      'INBOX',
      (await readMailFixtures()).slice(0, 2).map((fixture) => fixture.text),
    );
    await using model = await FakeOpenAiServer.start({ replies: [] });
    await using dir = await tempDir();
    const configFor = (password: string, port: number) =>
      dir
        .write(
          'config.yaml',
          `data_dir: ./data\nmemory: {consolidate: []}\nllms:\n  default: {base_url: "${model.url}", model: fake-model}\nintegrations:\n  - {type: email, name: personal, imap_server: ${dovecot.host}, port: ${port}, tls: false, username: ${dovecot.user}, password: !secret imap_password, connect_timeout: 2s}\n`,
        )
        .then(() => dir.write('secrets.yaml', `imap_password: ${JSON.stringify(password)}\n`, 0o600));
    await configFor(dovecot.password, dovecot.port);
    const good = await runCli(['doctor'], { cwd: dir.path });
    expect(good.stdout).toMatch(
      new RegExp(
        `^ok {3}email personal: logged in to 127\\.0\\.0\\.1:${dovecot.port} as ${dovecot.user}; INBOX has 2 messages$`,
        'm',
      ),
    );
    await configFor('wrong', dovecot.port);
    const wrong = await runCli(['doctor'], { cwd: dir.path });
    expect(wrong.stdout).toMatch(/^FAIL email personal: IMAP login to .* failed/m);
    expect(wrong.stdout).toMatch(/hint: check `username` and the password/);
    expect(wrong.code).toBe(1);
    await dovecot.stop();
    await configFor(dovecot.password, dovecot.port);
    const closed = await runCli(['doctor'], { cwd: dir.path });
    expect(closed.stdout).toMatch(/^FAIL email personal: cannot reach the IMAP server 127\.0\.0\.1:\d+: ECONNREFUSED/m);
  });
});

import { access } from 'node:fs/promises';
import net from 'node:net';
import { simpleParser } from 'mailparser';
import { describe, it } from 'vitest';
import { dovecotInstallCommand, startDovecot } from './helpers/dovecot.ts';
import { appendMessages, listMailbox, mailboxNames, readMailFixtures, withImapClient } from './helpers/imap-client.ts';
import { tempDir } from './helpers/temp-dir.ts';

/** Alice's draft answer to Maria (fixture 01), as a mail client would save it. */
const draft = [
  'From: Alice Lindqvist <alice@example.test>',
  'To: Maria Keller <maria.keller@keller-family.example>',
  'Subject: Re: Lisbon apartment - do you still have the address?',
  'Date: Sun, 22 Nov 2026 18:02:00 +0100',
  'Message-ID: <draft-1d0c6f@example.test>',
  'In-Reply-To: <20261120071244.4f2a9c@keller-family.example>',
  'References: <20261120071244.4f2a9c@keller-family.example>',
  'MIME-Version: 1.0',
  'Content-Type: text/plain; charset=UTF-8',
  '',
  'Hi Maria, the flat is at Rua dos Remedios 12. The stairs are steep but fine with children.',
  '',
].join('\r\n');

/** Resolves true when nothing listens on the port any more. */
function connectionRefused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

// Each test has its own server, so they run side by side: most of a test's time is Dovecot's shutdown (about 2 s
// of waiting inside `doveadm stop`), not work.
describe.concurrent('startDovecot', () => {
  it('serves INBOX and the special-use mailboxes on loopback', async ({ expect }) => {
    await using dovecot = await startDovecot();
    expect(dovecot.host).toBe('127.0.0.1');
    expect(await mailboxNames(dovecot)).toEqual(['Archive', 'Drafts', 'INBOX', 'Junk', 'Sent']);
    const specialUse = await withImapClient(dovecot, async (client) =>
      Object.fromEntries((await client.list()).map((mailbox) => [mailbox.path, mailbox.specialUse ?? null])),
    );
    expect(specialUse).toEqual({
      INBOX: '\\Inbox',
      Archive: '\\Archive',
      Drafts: '\\Drafts',
      Sent: '\\Sent',
      Junk: '\\Junk',
    });
  });

  it('stores the 20 fixtures in INBOX and lists them back with decoded subjects', async ({ expect }) => {
    const fixtures = await readMailFixtures();
    expect(fixtures).toHaveLength(20);
    const expected = await Promise.all(
      fixtures.map(async (fixture) => {
        const parsed = await simpleParser(fixture.text);
        return { subject: parsed.subject ?? '', messageId: parsed.messageId ?? '' };
      }),
    );
    // Unique Message-IDs are what the email integration will key its notes on.
    expect(new Set(expected.map((message) => message.messageId)).size).toBe(20);

    await using dovecot = await startDovecot();
    const uids = await appendMessages(
      dovecot,
      'INBOX',
      fixtures.map((fixture) => fixture.text),
    );
    const listed = await listMailbox(dovecot, 'INBOX');

    expect(listed.map((message) => message.uid)).toEqual(uids);
    expect(listed.map(({ subject, messageId }) => ({ subject, messageId }))).toEqual(expected);
    expect(listed.every((message) => message.flags.length === 0)).toBe(true);
    const subjects = listed.map((message) => message.subject);
    expect(subjects).toContain('Wohnungsübergabe am Dienstag – passt Ihnen 10 Uhr?');
    expect(subjects).toContain('会議の議事録をお送りします（11月19日）');
  });

  it('moves a message to Archive', async ({ expect }) => {
    const fixtures = (await readMailFixtures()).slice(0, 3);
    await using dovecot = await startDovecot();
    const [, secondUid] = await appendMessages(
      dovecot,
      'INBOX',
      fixtures.map((fixture) => fixture.text),
      ['\\Seen'],
    );
    if (secondUid === undefined) throw new Error('expected three UIDs');

    const moved = await withImapClient(dovecot, async (client) => {
      const lock = await client.getMailboxLock('INBOX');
      try {
        return await client.messageMove(String(secondUid), 'Archive', { uid: true });
      } finally {
        lock.release();
      }
    });

    expect(moved !== false && moved.uidMap?.has(secondUid)).toBe(true);
    const inbox = await listMailbox(dovecot, 'INBOX');
    const archive = await listMailbox(dovecot, 'Archive');
    expect(inbox.map((message) => message.subject)).toEqual([
      'Lisbon apartment - do you still have the address?',
      'Photos from the cabin weekend',
    ]);
    expect(archive).toEqual([
      expect.objectContaining({
        subject: 'Lunch on Tuesday?',
        flags: ['\\Seen'],
        messageId: '<CAF7tb2N4x-lunch-0920@mail.beckerdesign.example>',
      }),
    ]);
  });

  it('appends a draft to Drafts with its flags', async ({ expect }) => {
    await using dovecot = await startDovecot();
    await appendMessages(dovecot, 'Drafts', [draft], ['\\Draft', '\\Seen']);

    expect(await listMailbox(dovecot, 'Drafts')).toEqual([
      {
        uid: 1,
        flags: ['\\Draft', '\\Seen'],
        subject: 'Re: Lisbon apartment - do you still have the address?',
        messageId: '<draft-1d0c6f@example.test>',
      },
    ]);
    expect(await listMailbox(dovecot, 'INBOX')).toEqual([]);
  });

  it('keeps the mail when the server is killed and restarted on the same port', async ({ expect }) => {
    const fixtures = await readMailFixtures();
    await using dovecot = await startDovecot();
    const port = dovecot.port;
    await appendMessages(
      dovecot,
      'INBOX',
      fixtures.map((fixture) => fixture.text),
    );
    const before = await listMailbox(dovecot, 'INBOX');

    await dovecot.kill();
    expect(await connectionRefused(port)).toBe(true);
    await expect(listMailbox(dovecot, 'INBOX')).rejects.toThrow();

    await dovecot.restart();
    expect(dovecot.port).toBe(port);
    expect(await listMailbox(dovecot, 'INBOX')).toEqual(before);
    expect(before).toHaveLength(20);
  });

  it('stops gracefully, restarts with the same mail and removes its directory when disposed', async ({ expect }) => {
    const dovecot = await startDovecot();
    try {
      await appendMessages(dovecot, 'Sent', [draft], ['\\Seen']);
      await dovecot.stop();
      // Stopping twice is harmless: cleanup code may not know whether a test already stopped the server.
      await dovecot.stop();
      expect(await connectionRefused(dovecot.port)).toBe(true);

      await dovecot.restart();
      expect((await listMailbox(dovecot, 'Sent')).map((message) => message.messageId)).toEqual([
        '<draft-1d0c6f@example.test>',
      ]);
    } finally {
      await dovecot[Symbol.asyncDispose]();
    }
    expect(await connectionRefused(dovecot.port)).toBe(true);
    await expect(access(dovecot.directory)).rejects.toThrow(/ENOENT/);
  });

  it('accepts several users, each with their own mail', async ({ expect }) => {
    await using dovecot = await startDovecot({
      users: [
        { name: 'alice@example.test', password: 'alice-secret' },
        { name: 'bob@example.test', password: 'bob-secret' },
      ],
    });
    const bob = { ...dovecot, user: 'bob@example.test', password: 'bob-secret' };
    await appendMessages(bob, 'INBOX', [draft]);

    expect(dovecot.user).toBe('alice@example.test');
    expect(await listMailbox(dovecot, 'INBOX')).toEqual([]);
    expect(await listMailbox(bob, 'INBOX')).toHaveLength(1);
    await expect(listMailbox({ ...dovecot, password: 'wrong' }, 'INBOX')).rejects.toThrow();
  });

  it('says how to install Dovecot when it is not installed', async ({ expect }) => {
    await using empty = await tempDir();
    await expect(startDovecot({ binaryDirectories: [empty.path] })).rejects.toThrow(
      `install Dovecot: ${dovecotInstallCommand}`,
    );
    expect(dovecotInstallCommand).toBe('apt-get install -y --no-install-recommends dovecot-imapd');
  });
});

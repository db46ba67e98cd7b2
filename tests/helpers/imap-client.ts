import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ImapFlow } from 'imapflow';
import { simpleParser } from 'mailparser';
import type { Dovecot } from './dovecot.ts';

/** Where and as whom to log in: a `Dovecot` from `startDovecot`, or the same fields for another of its users. */
export type ImapLogin = Pick<Dovecot, 'host' | 'port' | 'user' | 'password'>;

/** One message as `listMailbox` reports it. */
export interface ListedMessage {
  uid: number;
  /** IMAP flags such as `\Seen`, sorted so tests can compare them with `toEqual`; never the per-session `\Recent`. */
  flags: string[];
  /** Decoded by mailparser, so `=?UTF-8?B?…?=` arrives as the text it encodes; `''` when there is none. */
  subject: string;
  /** With its angle brackets, as in the header: `<id@host>`; `''` when there is none. */
  messageId: string;
}

/** The 20 test messages described in tests/fixtures/mail/README.md. */
export const mailFixtureDirectory = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/mail');

/** Every `.eml` fixture, by file name, in name order (which is also the order of the README's table). */
export async function readMailFixtures(): Promise<{ file: string; text: string }[]> {
  const files = (await readdir(mailFixtureDirectory)).filter((file) => file.endsWith('.eml')).sort();
  return Promise.all(
    files.map(async (file) => ({ file, text: await readFile(path.join(mailFixtureDirectory, file), 'utf8') })),
  );
}

/**
 * Logs in, runs `use` and logs out again, also when `use` throws. Each helper opens its own connection so that a
 * test can kill and restart the server between calls without holding a dead session.
 */
export async function withImapClient<Result>(
  login: ImapLogin,
  use: (client: ImapFlow) => Promise<Result>,
): Promise<Result> {
  const client = new ImapFlow({
    host: login.host,
    port: login.port,
    secure: false,
    auth: { user: login.user, pass: login.password },
    logger: false,
  });
  // ImapFlow also reports a failed command as an 'error' event; without a listener Node would throw it out of the
  // event loop. The same failure reaches the caller as the command's rejection, so nothing is lost.
  client.on('error', () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.logout().catch(() => client.close());
  }
}

/**
 * Appends messages (RFC 5322 text, sent as-is) to `mailbox` in order, with the same `flags` on each, and returns
 * their UIDs.
 * @param flags For example `['\\Seen']` or `['\\Draft']`. @default []
 */
export async function appendMessages(
  login: ImapLogin,
  mailbox: string,
  emlTexts: readonly string[],
  flags: readonly string[] = [],
): Promise<number[]> {
  return withImapClient(login, async (client) => {
    const uids: number[] = [];
    for (const text of emlTexts) {
      const result = await client.append(mailbox, Buffer.from(text, 'utf8'), [...flags]);
      if (result === false || result.uid === undefined) {
        throw new Error(`APPEND to ${mailbox} returned no UID (${JSON.stringify(result)})`);
      }
      uids.push(result.uid);
    }
    return uids;
  });
}

/** Every message in `mailbox`, by ascending UID, with its flags and decoded Subject and Message-ID. */
export async function listMailbox(login: ImapLogin, mailbox: string): Promise<ListedMessage[]> {
  return withImapClient(login, async (client) => {
    const lock = await client.getMailboxLock(mailbox, { readOnly: true });
    try {
      // FETCH 1:* on an empty mailbox is an error in IMAP, not an empty answer.
      if (client.mailbox === false || client.mailbox.exists === 0) return [];
      const messages = await client.fetchAll('1:*', { uid: true, flags: true, headers: true });
      const listed = await Promise.all(
        messages.map(async (message) => {
          const parsed = await simpleParser(message.headers ?? Buffer.alloc(0));
          return {
            uid: message.uid,
            // \Recent is per session (the first session to see a message gets it) and IMAP4rev2 dropped it;
            // leaving it out makes the same mailbox list the same way on every call.
            flags: [...(message.flags ?? [])].filter((flag) => flag !== '\\Recent').sort(),
            subject: parsed.subject ?? '',
            messageId: parsed.messageId ?? '',
          };
        }),
      );
      return listed.sort((left, right) => left.uid - right.uid);
    } finally {
      lock.release();
    }
  });
}

/** The path of every mailbox the user sees, sorted: `['Archive', 'Drafts', 'INBOX', 'Junk', 'Sent']` on a fresh server. */
export async function mailboxNames(login: ImapLogin): Promise<string[]> {
  return withImapClient(login, async (client) => (await client.list()).map((mailbox) => mailbox.path).sort());
}

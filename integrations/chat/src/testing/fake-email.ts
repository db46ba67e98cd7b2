import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { ImapFlow } from 'imapflow';
import { simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { SMTPServer } from 'smtp-server';

/**
 * The IMAP server the fake delivers into: a real one (the tests' private Dovecot, tests/helpers/dovecot.ts), whose
 * mailbox is the assistant's. The channel reaches it through the fake's proxy ({@link FakeEmail.imapAddress}).
 */
export interface FakeEmailImap {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Where its `dovecot.log` is: refused logins are counted from it. */
  directory: string;
}

/** A mail the assistant sent, as the SMTP sink received it. */
export interface FakeSentMail {
  to: string[];
  messageId: string;
  subject: string;
  inReplyTo: string | undefined;
  references: string[];
  text: string;
}

/**
 * Email's local platform for the channel's tests and bench: mail is delivered by IMAP APPEND into the assistant's
 * mailbox on a real IMAP server (with the Authentication-Results header its receiving server would write), and what
 * the assistant sends is received by an SMTP sink on a free loopback port. Deliveries are appended in order.
 */
export class FakeEmail {
  readonly imap: FakeEmailImap;
  /** The assistant's address (mail is To it). */
  readonly address: string;
  /** The authserv-id of the "receiving server": the channel's `authserv_ids`. */
  readonly authservId = 'mx.fake.test';
  readonly sent: FakeSentMail[] = [];
  readonly #server: SMTPServer;
  readonly #smtpPort: number;
  /** The IMAP server as the channel reaches it: a loopback proxy the fake can take down at once. */
  readonly #proxy: net.Server;
  readonly #connections = new Set<net.Socket>();
  #down = false;
  readonly #raw = new Map<string, string>();
  /** Each peer's mail thread: its subject, its latest mail and that mail's References. */
  readonly #threads = new Map<string, { subject: string; last: string; references: string[] }>();
  #chain: Promise<void> = Promise.resolve();
  #failure: unknown;

  private constructor(options: { imap: FakeEmailImap; address: string; server: SMTPServer; port: number }) {
    this.imap = options.imap;
    this.address = options.address;
    this.#server = options.server;
    this.#smtpPort = options.port;
    this.#proxy = net.createServer((socket) => {
      if (this.#down) {
        socket.destroy();
        return;
      }
      const upstream = net.connect(this.imap.port, this.imap.host);
      const end = () => {
        socket.destroy();
        upstream.destroy();
        this.#connections.delete(socket);
        this.#connections.delete(upstream);
      };
      for (const side of [socket, upstream]) {
        this.#connections.add(side);
        side.on('error', end);
        side.on('close', end);
      }
      socket.pipe(upstream);
      upstream.pipe(socket);
    });
  }

  static async start(options: { imap: FakeEmailImap; address?: string }): Promise<FakeEmail> {
    let fake: FakeEmail | undefined;
    const server = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      // Loopback only: no reverse DNS lookup of the client (it can take as long as the resolver's timeout).
      disableReverseLookup: true,
      logger: false,
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const to = session.envelope.rcptTo.map((recipient) => recipient.address.toLowerCase());
          simpleParser(Buffer.concat(chunks)).then(
            (parsed) => {
              const references = parsed.references;
              const mail: FakeSentMail = {
                to,
                messageId: parsed.messageId ?? '',
                subject: parsed.subject ?? '',
                inReplyTo: parsed.inReplyTo,
                references: references === undefined ? [] : Array.isArray(references) ? references : [references],
                // The body's last line break is the mail's, not the text's (the adapter adds one).
                text: (parsed.text ?? '').replace(/\n$/, ''),
              };
              fake?.sent.push(mail);
              if (fake) for (const peer of to) fake.#answered(peer, mail);
              callback();
            },
            (error: Error) => callback(error),
          );
        });
      },
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.server.address() as AddressInfo).port;
    fake = new FakeEmail({ imap: options.imap, address: options.address ?? options.imap.user, server, port });
    const proxy = fake.#proxy;
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    return fake;
  }

  /** The IMAP server's address as the channel reaches it (`imap_server`, `port`). */
  get imapAddress(): { host: string; port: number } {
    return { host: '127.0.0.1', port: (this.#proxy.address() as AddressInfo).port };
  }

  /** The SMTP sink's address: the channel's `smtp`. */
  get smtp(): { host: string; port: number } {
    return { host: '127.0.0.1', port: this.#smtpPort };
  }

  /**
   * Delivers a mail from `from` to the assistant (appended after the ones before); returns its Message-ID. By default
   * it passed authentication; `authentication: 'fail'` is a forged From, `'none'` has no verdict of the server.
   */
  deliver(options: {
    from: string;
    text: string;
    /** Starts a new mail thread; otherwise the mail answers the latest of the thread with `from` (as "Reply" does). */
    newThread?: boolean;
    authentication?: 'pass' | 'fail' | 'none';
  }): string {
    const messageId = `<${randomUUID()}@${options.from.slice(options.from.indexOf('@') + 1)}>`;
    const peer = options.from.toLowerCase();
    const thread = options.newThread ? undefined : this.#threads.get(peer);
    const references = thread ? shortened([...thread.references, thread.last]) : undefined;
    this.#threads.set(peer, {
      subject: thread?.subject ?? 'Hello',
      last: messageId,
      references: references ?? [],
    });
    const verdict = options.authentication ?? 'pass';
    const header =
      verdict === 'none'
        ? ''
        : `Authentication-Results: ${this.authservId}; dkim=${verdict} header.d=fake.test; spf=${verdict}; dmarc=${verdict}\r\n`;
    const build = async () =>
      header +
      (
        await new MailComposer({
          from: options.from,
          to: this.address,
          subject: thread ? `Re: ${thread.subject}` : 'Hello',
          text: options.text,
          messageId,
          ...(thread && references ? { inReplyTo: thread.last, references: references.join(' ') } : {}),
        })
          .compile()
          .build()
      ).toString();
    this.#enqueue(async () => {
      const raw = await build();
      this.#raw.set(messageId, raw);
      await this.#append(raw);
    });
    return messageId;
  }

  /** Delivers a mail again, as a server that retried its delivery would: the same Message-ID under a new UID. */
  redeliver(messageId: string): void {
    this.#enqueue(async () => {
      const raw = this.#raw.get(messageId);
      if (raw === undefined) throw new Error(`no mail ${messageId} was delivered`);
      await this.#append(raw);
    });
  }

  /** Resolves when every delivery so far is in the mailbox; throws the first that failed. */
  async delivered(): Promise<void> {
    await this.#chain;
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** The mails sent to `address`, in order. */
  mailsTo(address: string): FakeSentMail[] {
    return this.sent.filter((mail) => mail.to.includes(address.toLowerCase()));
  }

  /** How many logins the IMAP server refused (its log's `auth failed` lines). */
  refusedLogins(): number {
    let log = '';
    try {
      log = readFileSync(path.join(this.imap.directory, 'dovecot.log'), 'utf8');
    } catch {
      // No log yet: nothing refused.
    }
    return log.split('\n').filter((line) => /auth failed/i.test(line)).length;
  }

  /**
   * Takes the IMAP server down for the channel at once (its connections cut, new ones closed on connect) or brings it
   * back. Deliveries still reach the mailbox, as mail reaches a provider whose IMAP is down.
   */
  setDown(down: boolean): void {
    this.#down = down;
    if (down) for (const socket of this.#connections) socket.destroy();
  }

  async close(): Promise<void> {
    await this.#chain;
    for (const socket of this.#connections) socket.destroy();
    await new Promise<void>((resolve) => this.#proxy.close(() => resolve()));
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** The assistant answered `peer`: the peer's next mail answers that one. */
  #answered(peer: string, mail: FakeSentMail): void {
    const thread = this.#threads.get(peer);
    if (!thread || !mail.references.includes(thread.references[0] ?? thread.last)) return;
    this.#threads.set(peer, { ...thread, last: mail.messageId, references: shortened(mail.references) });
  }

  #enqueue(work: () => Promise<void>): void {
    this.#chain = this.#chain.then(work).catch((error: unknown) => {
      this.#failure ??= error;
    });
  }

  async #append(raw: string): Promise<void> {
    const client = new ImapFlow({
      host: this.imap.host,
      port: this.imap.port,
      secure: false,
      auth: { user: this.imap.user, pass: this.imap.password },
      logger: false,
    });
    client.on('error', () => {});
    await client.connect();
    try {
      await client.append('INBOX', raw);
    } finally {
      await client.logout().catch(() => client.close());
    }
  }
}

/** References as a mail program keeps them: the thread's root and the 19 last. */
function shortened(references: string[]): string[] {
  return references.length <= 20 ? references : [references[0] ?? '', ...references.slice(-19)];
}

import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { imapClient, isPlainAddress, sendSmtp, trustedAuthentication, withoutQuotedHistory } from '@assistant/mail';
import { fenceUntrusted, type ListenerContext } from '@assistant/sdk';
import type { ImapFlow } from 'imapflow';
import { type ParsedMail, simpleParser } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { ChannelAdapter, ChannelDelivery, ChannelFailure, ChannelSent } from '../channels/adapter.ts';

/** Where the email channel reads and sends: one mailbox over IMAP, one SMTP server. */
export interface EmailChatAccount {
  imap: { host: string; port: number; tls: boolean; username: string; password: string; folder: string };
  smtp: { host: string; port: number; tls: boolean; username?: string; password?: string };
  /** The assistant's address: mail must be To or Cc it, and replies are From it. */
  address: string;
  /** The owners' addresses, lower case: only their mail is a chat message (the channel's allowed users). */
  owners: readonly string[];
  /** The authserv-ids whose Authentication-Results count (the email integration's `authserv_ids`). */
  authservIds: readonly string[];
  /** How often the folder is looked at when no new mail was announced. */
  pollIntervalMs: number;
  connectTimeoutMs: number;
}

/** What the adapter keeps next to the runner's state: the mailbox's identity and the threads it answers in. */
interface MailboxState {
  version: 1;
  /** The folder's UIDVALIDITY when last read; a new one starts a new generation of cursors. */
  uidValidity?: string;
  /** How often UIDVALIDITY changed: the high part of every cursor, so cursors only grow. */
  generation: number;
  /** When the channel first read the folder: older mail is not a chat message (a grace of 10 minutes before). */
  since: string;
  /** Per thread (its root Message-ID): who wrote it, its subject, and the last Message-IDs to answer under. */
  threads: Record<string, MailThread>;
}

interface MailThread {
  peer: string;
  subject: string;
  /** The owner's latest mail in the thread: the reply's In-Reply-To. */
  last: string;
  /** Its References plus itself: the reply's References (the root and the 19 last). */
  references: string[];
  at: string;
}

/** Mail older than the first read by this much still counts (it came while the channel started). */
const sinceGraceMs = 10 * 60_000;
/** A UID cursor is `generation * 2^32 + uid`: UIDs are 32-bit, so a new UIDVALIDITY only makes cursors grow. */
const generationSpan = 2 ** 32;
/** The most mails handed out by one receive. */
const batchSize = 50;
/** The most threads remembered; the oldest go first (a thread that old gets a new mail, not a threaded reply). */
const maxThreads = 2000;
/** Email has no hard limit; a reply longer than this is split into numbered mails. */
const maxMailChars = 20_000;
/** A well-formed Message-ID (compose-reply.ts in the email integration: linear-time, no `@` on the left). */
const messageIdPattern = /^<[\x21-\x3b\x3d\x3f\x41-\x7e]+@[\x21-\x3b\x3d\x3f-\x7e]+>$/;
/** Where a forwarded message starts: from there the text is a stranger's, fenced as untrusted. */
const forwardedPattern = /^(?:-{5,}\s*Forwarded message\s*-{5,}|Begin forwarded message:)\s*$/im;
/** Where Outlook-style history starts (no `>` quoting): `-----Original Message-----`, or a rule and `From:`. */
const historyPattern = /^(?:-{3,}\s*Original Message\s*-{3,}\s*$|_{20,}\s*\n\s*From:)/im;

/** A failure the adapter names itself: how the runner takes it is in `failure`. */
class EmailChannelError extends Error {
  readonly failure: ChannelFailure;
  constructor(message: string, failure: ChannelFailure) {
    super(message);
    this.failure = failure;
  }
}

/**
 * Email as a chat channel (docs/channels.md "Email"): mail From an owner's address To the assistant's address,
 * passing the authentication checks of the owner's own mail server, is a chat message; each mail thread (its root
 * Message-ID, from References or In-Reply-To) is a conversation, answered by mail in the same thread (In-Reply-To,
 * References, `Re:` subject). Receives by polling the folder on one IMAP connection (the UID is the cursor, a new
 * UIDVALIDITY starts a new generation of cursors); sends over SMTP. Email cannot edit: a turn's reply is sent once,
 * final (`streaming: false`).
 */
export class EmailAdapter implements ChannelAdapter {
  readonly name = 'email';
  readonly label = 'Email';
  readonly credentials = 'IMAP password';
  readonly maxMessageChars = maxMailChars;
  readonly editIntervalMs = 0;
  readonly streaming = false;

  readonly #account: EmailChatAccount;
  readonly #logger: ListenerContext['logger'];
  readonly #file: string;
  readonly #state: MailboxState;
  readonly #owners: Set<string>;
  #client: ImapFlow | undefined;
  /** Resolves the wait for new mail early: the server announced some (EXISTS). */
  #wake: (() => void) | undefined;
  /** The server announced new mail since the last fetch began (also while no one waited: during the fetch). */
  #news = false;
  #closesOnAbort = false;
  /** Message-IDs of sends that failed, by thread and text: the runner's retry sends the same Message-ID. */
  readonly #retrying = new Map<string, string>();

  private constructor(options: {
    account: EmailChatAccount;
    logger: ListenerContext['logger'];
    file: string;
    state: MailboxState;
  }) {
    this.#account = options.account;
    this.#logger = options.logger;
    this.#file = options.file;
    this.#state = options.state;
    this.#owners = new Set(options.account.owners.map((owner) => owner.toLowerCase()));
  }

  /** Reads the adapter's state from `file` (none yet: the folder is read from now on). */
  static async open(options: {
    account: EmailChatAccount;
    logger: ListenerContext['logger'];
    file: string;
  }): Promise<EmailAdapter> {
    let state: MailboxState = { version: 1, generation: 0, since: new Date().toISOString(), threads: {} };
    try {
      state = { ...state, ...(JSON.parse(await readFile(options.file, 'utf8')) as Partial<MailboxState>) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const adapter = new EmailAdapter({ ...options, state });
    await adapter.#save();
    return adapter;
  }

  async receive(options: { cursor: number; signal: AbortSignal }): Promise<ChannelDelivery[]> {
    if (!this.#closesOnAbort) {
      // The connection stays open between receives: the runner's signal ends it, whenever it aborts.
      options.signal.addEventListener('abort', () => this.#disconnect(), { once: true });
      this.#closesOnAbort = true;
    }
    const client = await this.#connect(options.signal);
    try {
      if (!client.mailbox) throw new Error(`the folder ${this.#account.imap.folder} is not open`);
      const uidValidity = String(client.mailbox.uidValidity);
      if (this.#state.uidValidity !== uidValidity) {
        if (this.#state.uidValidity !== undefined) {
          this.#state.generation += 1;
          this.#logger.warn(
            `the UIDVALIDITY of ${this.#account.imap.folder} changed (${this.#state.uidValidity} → ${uidValidity}): its mail is read again, and mail answered before is known by its Message-ID`,
          );
        }
        this.#state.uidValidity = uidValidity;
        await this.#save();
      }
      const base = this.#state.generation * generationSpan;
      const fromUid = options.cursor >= base ? options.cursor - base + 1 : 1;
      const deliveries = await this.#read(client, fromUid, base);
      if (deliveries.length > 0) return deliveries;
      await this.#waitForMail(options.signal);
      return [];
    } catch (error) {
      this.#disconnect();
      throw error;
    }
  }

  async #read(client: ImapFlow, fromUid: number, base: number): Promise<ChannelDelivery[]> {
    this.#news = false;
    const uids: number[] = [];
    const dates = new Map<number, number>();
    for await (const message of client.fetch(`${fromUid}:*`, { uid: true, internalDate: true }, { uid: true })) {
      if (message.uid < fromUid) continue;
      uids.push(message.uid);
      const date = message.internalDate;
      dates.set(message.uid, date instanceof Date ? date.getTime() : Date.parse(String(date)));
    }
    uids.sort((a, b) => a - b);
    const batch = uids.slice(0, batchSize);
    if (batch.length === 0) return [];
    const since = Date.parse(this.#state.since) - sinceGraceMs;
    const wanted = batch.filter((uid) => (dates.get(uid) ?? 0) >= since);
    const sources = new Map<number, Buffer>();
    if (wanted.length > 0) {
      for await (const message of client.fetch(wanted.join(','), { uid: true, source: true }, { uid: true })) {
        if (message.source) sources.set(message.uid, message.source);
      }
    }
    const deliveries: ChannelDelivery[] = [];
    for (const uid of batch) {
      const source = sources.get(uid);
      const cursor = base + uid;
      const event = source
        ? await this.#event(uid, source)
        : { kind: 'other' as const, id: `email-${this.#state.uidValidity}-${uid}` };
      deliveries.push({ event, cursor });
    }
    // The threads are known before the runner answers in them (and after a restart).
    await this.#save();
    return deliveries;
  }

  async #event(uid: number, source: Buffer): Promise<ChannelDelivery['event']> {
    const where = `${this.#account.imap.folder} uid ${this.#state.uidValidity}/${uid}`;
    const parsed = await simpleParser(source, { skipHtmlToText: false, skipImageLinks: true, skipTextLinks: true });
    const messageId = wellFormed(parsed.messageId);
    const id = messageId
      ? `email-${createHash('sha256').update(messageId).digest('hex').slice(0, 40)}`
      : `email-${this.#state.uidValidity}-${uid}`;
    const senders = addresses(parsed.from);
    const from = senders.length === 1 ? (senders[0] ?? '') : '';
    if (!isPlainAddress(from)) {
      this.#logger.info(`ignored mail ${where}: not from one plain address`);
      return { kind: 'other', id };
    }
    const recipients = [...addresses(parsed.to), ...addresses(parsed.cc)];
    if (!recipients.includes(this.#account.address.toLowerCase())) {
      // Mail in the folder that is not to the assistant (a copy, a list): not a chat message.
      return { kind: 'other', id };
    }
    if (this.#owners.has(from)) {
      const headers = parsed.headerLines.map((line) => ({ key: line.key, value: unfolded(line.line) }));
      const verdict = trustedAuthentication(headers, this.#account.authservIds).authentication;
      if (verdict !== 'pass') {
        // Anyone can write an owner's address into From: only the owner's own server's verdict makes it theirs.
        this.#logger.warn(
          `ignored mail ${where} From an owner's address: its authentication is ${verdict}, not pass (email.authserv_ids)`,
        );
        return { kind: 'other', id };
      }
    }
    const references = [
      ...referenceIds(parsed.references),
      ...(wellFormed(parsed.inReplyTo) ? [wellFormed(parsed.inReplyTo) ?? ''] : []),
    ];
    const thread = references[0] ?? messageId ?? `<uid-${this.#state.uidValidity}-${uid}@${domainOf(from)}>`;
    if (this.#owners.has(from)) {
      const own = messageId ? [messageId] : [];
      this.#state.threads[thread] = {
        peer: from,
        subject: singleLine(parsed.subject ?? ''),
        last: messageId ?? thread,
        references: shortened([...new Set([...referenceIds(parsed.references), ...own])]),
        at: new Date().toISOString(),
      };
      this.#trimThreads();
    }
    return { kind: 'message', id, peer: from, thread, text: chatText(parsed) };
  }

  acknowledge(): Promise<void> {
    // The UID cursor the runner stores is the acknowledgement; the mail stays in the folder, as the owner sent it.
    return Promise.resolve();
  }

  async send(options: { thread: string; text: string; signal: AbortSignal }): Promise<ChannelSent> {
    const thread = this.#state.threads[options.thread];
    const to = thread?.peer ?? (options.thread.startsWith('direct:') ? options.thread.slice(7) : undefined);
    if (!to || !isPlainAddress(to)) {
      throw new EmailChannelError(`no address to send to for thread ${options.thread.slice(0, 200)}`, {
        kind: 'refused',
      });
    }
    const key = `${options.thread}\u0000${options.text}`;
    const messageId = this.#retrying.get(key) ?? `<chat-${randomUUID()}@${domainOf(this.#account.address)}>`;
    this.#retrying.set(key, messageId);
    const subject = thread ? (/^re:/i.test(thread.subject) ? thread.subject : `Re: ${thread.subject}`) : 'Assistant';
    const raw = await new MailComposer({
      from: { name: 'Assistant', address: this.#account.address },
      to,
      subject,
      // A plain-text body ends with a line break (readers drop a last one): so a text's own last one is kept.
      text: `${options.text}\n`,
      messageId,
      ...(thread ? { inReplyTo: thread.last, references: thread.references.join(' ') } : {}),
    })
      .compile()
      .build();
    // The email integration's sender: a failure says how far the session got (classify reads its code).
    await sendSmtp({
      server: this.#account.smtp,
      connectTimeoutMs: this.#account.connectTimeoutMs,
      from: this.#account.address,
      to,
      raw,
      signal: options.signal,
    });
    this.#retrying.delete(key);
    return { id: messageId };
  }

  /** Email cannot change a mail that was sent: refused, so a runner that tried sends the text as a new mail. */
  edit(): Promise<void> {
    return Promise.reject(new EmailChannelError('email cannot edit a sent mail', { kind: 'refused' }));
  }

  typing(): Promise<void> {
    return Promise.resolve();
  }

  directThread(peer: string): string {
    return `direct:${peer}`;
  }

  /** Markdown is readable as plain text, which is what the reply is sent as. */
  format(markdown: string): string {
    return markdown;
  }

  classify(error: unknown): ChannelFailure {
    if (error instanceof EmailChannelError) return error.failure;
    const { authenticationFailed, code, responseCode } = (typeof error === 'object' && error !== null ? error : {}) as {
      authenticationFailed?: boolean;
      code?: string;
      responseCode?: number;
    };
    if (authenticationFailed === true) {
      return {
        kind: 'bad_credentials',
        message: `the IMAP server ${this.#account.imap.host}:${this.#account.imap.port} refused the login of ${this.#account.imap.username}: check email.password`,
      };
    }
    if (code === 'EAUTH') {
      return {
        kind: 'bad_credentials',
        message: `the SMTP server ${this.#account.smtp.host}:${this.#account.smtp.port} refused the login: check email.smtp.password`,
      };
    }
    if (responseCode !== undefined && responseCode >= 500) return { kind: 'refused' };
    return { kind: 'transient' };
  }

  async #connect(signal: AbortSignal): Promise<ImapFlow> {
    if (this.#client?.usable) return this.#client;
    this.#disconnect();
    const { imap } = this.#account;
    // The email integration's client: bounded timeouts, no automatic IDLE (#waitForMail starts it).
    const client = imapClient({ ...imap, connectTimeoutMs: this.#account.connectTimeoutMs });
    // A dropped connection is found by the next receive (not usable): it connects again.
    client.on('error', () => {});
    client.on('exists', () => {
      this.#news = true;
      this.#wake?.();
    });
    // A connection that dropped (the server went away) ends the wait: the next receive connects again.
    client.on('close', () => this.#wake?.());
    const onAbort = () => client.close();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      await client.connect();
      await client.mailboxOpen(imap.folder);
    } catch (error) {
      client.close();
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
    this.#client = client;
    return client;
  }

  #disconnect(): void {
    this.#client?.close();
    this.#client = undefined;
  }

  /**
   * IDLE until the server announces new mail (EXISTS), the poll interval passes (a server without IDLE, a connection
   * that died quietly) or the signal aborts; then a NOOP, which ends the IDLE and asks for news.
   */
  async #waitForMail(signal: AbortSignal): Promise<void> {
    // Mail announced while the folder was being read: read again at once.
    if (this.#news) return;
    const idling = this.#client?.idle().catch(() => false);
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, this.#account.pollIntervalMs);
      signal.addEventListener('abort', done, { once: true });
      this.#wake = done;
    });
    if (signal.aborted) {
      this.#disconnect();
      return;
    }
    // Asks the server for news (and finds a dead connection before the next fetch).
    await this.#client?.noop();
    await idling;
  }

  #trimThreads(): void {
    const entries = Object.entries(this.#state.threads);
    if (entries.length <= maxThreads) return;
    entries.sort(([, a], [, b]) => a.at.localeCompare(b.at));
    for (const [key] of entries.slice(0, entries.length - maxThreads)) delete this.#state.threads[key];
  }

  async #save(): Promise<void> {
    await mkdir(path.dirname(this.#file), { recursive: true });
    const temporary = `${this.#file}.${process.pid}.tmp`;
    await writeFile(temporary, `${JSON.stringify(this.#state)}\n`);
    await rename(temporary, this.#file);
  }
}

/**
 * What the owner wrote: the plain part (or the HTML's text) without the history it quotes (`>` lines, or Outlook's
 * `-----Original Message-----` and all below) and the signature. A message forwarded in it is a stranger's words: fenced as untrusted, with the fence's instruction, as all mail is before a prompt.
 */
function chatText(parsed: ParsedMail): string | undefined {
  // The signature (after a `-- ` line) and Outlook-style history are not what the owner said: `/approve ID` above
  // them is a command alone.
  let text = (parsed.text ?? '').replace(/\r\n/g, '\n');
  const history = historyPattern.exec(text);
  if (history) text = text.slice(0, history.index);
  const body = withoutQuotedHistory(text.replace(/^-- ?\n[\s\S]*$/m, ''));
  const forwarded = forwardedPattern.exec(body);
  if (!forwarded) return body === '' ? undefined : body;
  const own = body.slice(0, forwarded.index).trim();
  const fenced = fenceUntrusted({ forwarded: body.slice(forwarded.index) }, { maxCharsByField: { forwarded: 20_000 } });
  return `${own}\n\n${fenced.instruction}\n${fenced.text}`.trim();
}

function addresses(field: ParsedMail['from'] | ParsedMail['to']): string[] {
  const list = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return list.flatMap((one) => one.value.map((entry) => (entry.address ?? '').toLowerCase()));
}

function wellFormed(value: string | undefined): string | undefined {
  const trimmed = (value ?? '').trim();
  return trimmed.length <= 998 && messageIdPattern.test(trimmed) ? trimmed : undefined;
}

function referenceIds(value: string | string[] | undefined): string[] {
  const list = value === undefined ? [] : Array.isArray(value) ? value : value.split(/\s+/);
  return list.map((one) => wellFormed(one)).filter((one): one is string => one !== undefined);
}

/**
 * References cut to 20 ids: the first (the thread's root, which names the thread here and in mail programs) and the
 * 19 last, as RFC 5322 §3.6.4 suggests for long threads.
 */
function shortened(references: string[]): string[] {
  return references.length <= 20 ? references : [references[0] ?? '', ...references.slice(-19)];
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1) || 'localhost';
}

/** A raw header line's value, unfolded. */
function unfolded(line: string): string {
  return line
    .slice(line.indexOf(':') + 1)
    .replace(/\r?\n[ \t]+/g, ' ')
    .trim();
}

function singleLine(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed
  return value.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
}

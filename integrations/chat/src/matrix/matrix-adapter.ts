import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import type {
  ChannelAdapter,
  ChannelButton,
  ChannelDelivery,
  ChannelFailure,
  ChannelSent,
} from '../channels/adapter.ts';
import { codeBlockHtml, htmlToText, markdownToHtml, plainHtml, splitHtml } from '../channels/markdown.ts';
import { MatrixApiError, type MatrixClientApi, type MatrixEvent, type MatrixSync } from './client-api.ts';

/** What the adapter keeps on disk next to the runner's state: the /sync position and what it learned of rooms. */
interface MatrixSyncData {
  /** The `next_batch` of the last /sync whose events were all handled (acknowledged); none before the first. */
  since?: string;
  /** Each peer's room with the bot (the last room it wrote in or invited the bot to): where approvals go. */
  rooms: Record<string, string>;
  /** Rooms with `m.room.encryption` state: refused. */
  encrypted: string[];
  /** Encrypted rooms already told they are refused (one notice per room). */
  told: string[];
}

/** The notice an encrypted room gets, once. */
export const encryptedNotice = 'Encrypted rooms are not supported; talk to me in an unencrypted room.';

/**
 * The content key of a message with buttons (an approval request): `[{key, label, data}]`, the reaction key of each
 * button and what a reaction with it hands the runner. Read back from the message when a reaction comes, so it
 * survives a restart; only the bot's own messages are believed.
 */
export const buttonsKey = 'assistant.buttons';

/** How `m.room.message` content says its `formatted_body` is HTML. */
const htmlFormat = 'org.matrix.custom.html';

/** History older than this before the first ever /sync is not answered (it is what the account saw before). */
const historySlackMs = 60_000;

/**
 * Matrix behind the channel contract (docs/channels.md, decisions 0070 and 0075): the Client-Server API's `/sync`
 * long poll, `m.text` messages with an HTML `formatted_body` (its `body` the text it shows) edited for streaming by
 * `m.replace` relations, "typing…" by the typing endpoint, approvals by reactions (✅ / ❌, which the bot puts under
 * the request). One thread per room (the thread is the room id; a user's conversation in each room is its own); a
 * message's id is `mx-<event_id>`, the same on every delivery of the event.
 *
 * The /sync position (`next_batch`) is an opaque string, not the runner's numeric cursor, so the adapter keeps it in
 * its own file and moves it only in {@link acknowledge}, after the runner stored the last event of a batch: a crash
 * before that gets the batch again and the runner's ids make it the same messages.
 *
 * End-to-end encryption is not supported: an encrypted event or a room with `m.room.encryption` gets one plain
 * notice (to an allowed user) and a log line, and nothing it says is read.
 */
export class MatrixAdapter implements ChannelAdapter {
  readonly name = 'matrix';
  readonly label = 'Matrix';
  readonly credentials = 'access token';
  /**
   * Events are at most 65,536 bytes of JSON. An edit carries its text twice (`body` and `m.new_content`), and a
   * character is at most 6 bytes once JSON-escaped: 4000 characters stay well under the limit.
   */
  readonly maxMessageChars = 4000;
  /** Homeservers rate-limit sends (edits are sends). */
  readonly editIntervalMs = 1_500;

  readonly #api: MatrixClientApi;
  readonly #pollTimeoutMs: number;
  readonly #allowed: Set<string>;
  readonly #logger: ListenerContext['logger'];
  readonly #file: string;
  readonly #data: MatrixSyncData;
  readonly #startedAt = Date.now();
  /** Per process: a retried call reuses its transaction id, a new process (whose runner state decides) does not. */
  readonly #session = randomBytes(4).toString('hex');
  readonly #sentCount = new Map<string, number>();
  /** The last delivery of each /sync batch, with the batch's `next_batch`. */
  readonly #batchEnds = new WeakMap<ChannelDelivery, string>();
  #userId: string | undefined;

  private constructor(options: {
    api: MatrixClientApi;
    pollTimeoutMs: number;
    allowedUsers: readonly string[];
    userId: string | undefined;
    logger: ListenerContext['logger'];
    file: string;
    data: MatrixSyncData;
  }) {
    this.#api = options.api;
    this.#pollTimeoutMs = options.pollTimeoutMs;
    this.#allowed = new Set(options.allowedUsers);
    this.#userId = options.userId;
    this.#logger = options.logger;
    this.#file = options.file;
    this.#data = options.data;
  }

  /** Reads the adapter's sync file (`file`; none yet: a first start). */
  static async open(options: {
    api: MatrixClientApi;
    pollTimeoutMs: number;
    allowedUsers: readonly string[];
    userId?: string | undefined;
    logger: ListenerContext['logger'];
    file: string;
  }): Promise<MatrixAdapter> {
    let data: MatrixSyncData = { rooms: {}, encrypted: [], told: [] };
    try {
      const parsed = JSON.parse(await readFile(options.file, 'utf8')) as Partial<MatrixSyncData>;
      data = {
        ...(typeof parsed.since === 'string' ? { since: parsed.since } : {}),
        rooms: parsed.rooms ?? {},
        encrypted: parsed.encrypted ?? [],
        told: parsed.told ?? [],
      };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT') {
        throw new Error(
          `the Matrix sync state ${path.basename(options.file)} is unreadable (${(error as Error).message}); fix or remove it (removing it skips what came while the bot was away)`,
        );
      }
    }
    return new MatrixAdapter({ ...options, userId: options.userId, data });
  }

  async receive(options: { cursor: number; signal: AbortSignal }): Promise<ChannelDelivery[]> {
    const me = await this.#me(options.signal);
    const first = this.#data.since === undefined;
    const sync = await this.#api.sync(
      { since: this.#data.since, timeoutMs: first ? 0 : this.#pollTimeoutMs },
      options.signal,
    );
    await this.#invites(sync, options.signal);
    const deliveries: ChannelDelivery[] = [];
    for (const [room, joined] of Object.entries(sync.rooms?.join ?? {})) {
      const events = [...(joined.state?.events ?? []), ...(joined.timeline?.events ?? [])];
      if (events.some((event) => event.type === 'm.room.encryption') && !this.#data.encrypted.includes(room)) {
        this.#data.encrypted.push(room);
      }
      if (joined.timeline?.limited && !first) {
        this.#logger.warn(
          `the Matrix room ${room} had more new events than one sync hands out: the earlier ones are not read`,
        );
      }
      for (const event of joined.timeline?.events ?? []) {
        deliveries.push({ event: await this.#inbound(room, event, me, first, options.signal) });
      }
    }
    const last = deliveries.at(-1);
    if (last) {
      this.#batchEnds.set(last, sync.next_batch);
    } else {
      // Nothing to hand over: the position moves at once.
      this.#data.since = sync.next_batch;
      await this.#save();
    }
    return deliveries;
  }

  /** The batch's last event is stored by the runner: the next /sync starts after the batch. */
  async acknowledge(delivery: ChannelDelivery): Promise<void> {
    const next = this.#batchEnds.get(delivery);
    if (next === undefined) return;
    this.#data.since = next;
    await this.#save();
  }

  async #inbound(
    room: string,
    event: MatrixEvent,
    me: string,
    first: boolean,
    signal: AbortSignal,
  ): Promise<ChannelDelivery['event']> {
    const id = `mx-${event.event_id ?? `${room}-${event.origin_server_ts ?? 0}`}`;
    const sender = event.sender;
    if (sender === undefined || sender === me) return { kind: 'other', id };
    if (event.type === 'm.room.encrypted' || (event.type === 'm.room.message' && this.#data.encrypted.includes(room))) {
      await this.#refuseEncrypted(room, sender, signal);
      return { kind: 'other', id };
    }
    // What the account saw before its first /sync ever is history, not a question.
    if (first && (event.origin_server_ts ?? 0) < this.#startedAt - historySlackMs) return { kind: 'other', id };
    if (event.type === 'm.reaction') return this.#reaction(room, event, id, me, signal);
    if (event.type !== 'm.room.message') return { kind: 'other', id };
    const content = event.content ?? {};
    const relation = content['m.relates_to'] as { rel_type?: unknown } | undefined;
    // Edits of earlier messages, and notices (other bots' voice), are not new messages.
    if (relation?.rel_type === 'm.replace' || content.msgtype === 'm.notice') return { kind: 'other', id };
    if (this.#allowed.has(sender) && this.#data.rooms[sender] !== room) {
      this.#data.rooms[sender] = room;
      await this.#save();
    }
    const text = content.msgtype === 'm.text' && typeof content.body === 'string' ? content.body : undefined;
    return { kind: 'message', id, peer: sender, thread: room, text };
  }

  /**
   * A reaction is a press when it is on one of the bot's messages with buttons, with one of their keys: the press
   * hands the runner that button's data, read back from the message (the runner checks who pressed and what).
   */
  async #reaction(
    room: string,
    event: MatrixEvent,
    id: string,
    me: string,
    signal: AbortSignal,
  ): Promise<ChannelDelivery['event']> {
    const relation = event.content?.['m.relates_to'] as
      | { rel_type?: unknown; event_id?: unknown; key?: unknown }
      | undefined;
    if (relation?.rel_type !== 'm.annotation' || typeof relation.event_id !== 'string') return { kind: 'other', id };
    if (typeof relation.key !== 'string' || event.sender === undefined) return { kind: 'other', id };
    let target: MatrixEvent;
    try {
      target = await this.#api.event(room, relation.event_id, signal);
    } catch (error) {
      // Gone, or not for the bot to see: no button of its.
      if (this.classify(error).kind === 'refused') return { kind: 'other', id };
      throw error;
    }
    if (target.sender !== me) return { kind: 'other', id };
    const buttons = target.content?.[buttonsKey];
    const key = reactionKey(relation.key);
    const button = Array.isArray(buttons)
      ? (buttons as { key?: unknown; data?: unknown }[]).find((one) => one.key === key && typeof one.data === 'string')
      : undefined;
    if (!button) return { kind: 'other', id };
    return {
      kind: 'press',
      id,
      peer: event.sender,
      thread: room,
      data: String(button.data),
      callback: relation.event_id,
    };
  }

  /** Invites from allowed users are joined; anyone else's are ignored, logged by user id only. */
  async #invites(sync: MatrixSync, signal: AbortSignal): Promise<void> {
    const me = await this.#me(signal);
    for (const [room, invite] of Object.entries(sync.rooms?.invite ?? {})) {
      const events = invite.invite_state?.events ?? [];
      const own = events.find((event) => event.type === 'm.room.member' && event.state_key === me);
      const from = own?.sender ?? 'unknown';
      if (!this.#allowed.has(from)) {
        this.#logger.info(`ignored a Matrix invite from user ${from}: not in matrix.allowed_users`);
        continue;
      }
      if (!(await this.#refusable(() => this.#api.join(room, signal), `join the Matrix room ${room}`))) continue;
      this.#logger.info(`joined the Matrix room ${room} on the invite of ${from}`);
      this.#data.rooms[from] ??= room;
      if (events.some((event) => event.type === 'm.room.encryption') && !this.#data.encrypted.includes(room)) {
        this.#data.encrypted.push(room);
      }
      await this.#save();
    }
  }

  /** One plain notice per encrypted room, to an allowed user only; a log line with ids only. */
  async #refuseEncrypted(room: string, sender: string, signal: AbortSignal): Promise<void> {
    if (!this.#allowed.has(sender)) {
      this.#logger.info(`ignored an encrypted Matrix message from user ${sender}: not in matrix.allowed_users`);
      return;
    }
    if (this.#data.told.includes(room)) return;
    this.#logger.warn(
      `refused the encrypted Matrix room ${room} (a message of user ${sender}): end-to-end encryption is not supported`,
    );
    // A fixed transaction id: told once even if this call is retried.
    await this.#refusable(
      () =>
        this.#api.send(
          room,
          `assistant-e2ee-refused-${hash(room)}`,
          { msgtype: 'm.notice', body: encryptedNotice },
          signal,
        ),
      `tell the Matrix room ${room} it is refused`,
    );
    this.#data.told.push(room);
    await this.#save();
  }

  /**
   * Runs a call made while receiving; one the homeserver refuses (the room is gone, the bot may not join or speak)
   * is logged and skipped — retrying it would hold up every later event. Outages and refused credentials throw.
   */
  async #refusable(call: () => Promise<unknown>, what: string): Promise<boolean> {
    try {
      await call();
      return true;
    } catch (error) {
      if (this.classify(error).kind !== 'refused') throw error;
      this.#logger.warn(`could not ${what}: ${(error as Error).message}`);
      return false;
    }
  }

  async send(options: { thread: string; text: string; signal: AbortSignal }): Promise<ChannelSent> {
    const room = await this.#room(options.thread, options.signal);
    const txn = this.#txn('send', room, options.text);
    const sent = await this.#api.send(room, txn, messageContent(options.text), options.signal);
    this.#sent(txn);
    return { id: sent.event_id };
  }

  /**
   * Matrix has no buttons: the message says which reaction is which button (in its content, {@link buttonsKey}), and
   * the bot reacts with each key itself, so that a press is a click on a reaction already there.
   */
  async sendButtons(options: {
    thread: string;
    text: string;
    buttons: readonly ChannelButton[];
    signal: AbortSignal;
  }): Promise<ChannelSent> {
    const buttons = options.buttons.map((button) => ({
      key: reactionKey(button.label),
      label: button.label,
      data: button.data,
    }));
    const room = await this.#room(options.thread, options.signal);
    const txn = this.#txn('buttons', room, `${options.text}\u0000${JSON.stringify(buttons)}`);
    const sent = await this.#api.send(
      room,
      txn,
      { ...messageContent(options.text), [buttonsKey]: buttons },
      options.signal,
    );
    this.#sent(txn);
    for (const button of buttons) {
      // One transaction id per message and key: a retry (or a restart) reacts once.
      await this.#api.send(
        room,
        `assistant-react-${hash(`${sent.event_id}\u0000${button.key}`)}`,
        { 'm.relates_to': { rel_type: 'm.annotation', event_id: sent.event_id, key: button.key } },
        options.signal,
        'm.reaction',
      );
    }
    return { id: sent.event_id };
  }

  /**
   * An `m.replace` relation: clients show the new content in place of the old one. The fallback for clients without
   * edits is the text only (`* text`), which keeps an edit of a long message under the event size limit.
   */
  async edit(options: { thread: string; message: string; text: string; signal: AbortSignal }): Promise<void> {
    const txn = this.#txn('edit', options.thread, `${options.message}\u0000${options.text}`);
    const content = messageContent(options.text);
    await this.#api.send(
      options.thread,
      txn,
      {
        msgtype: 'm.text',
        body: `* ${content.body}`,
        'm.new_content': content,
        'm.relates_to': { rel_type: 'm.replace', event_id: options.message },
      },
      options.signal,
    );
    this.#sent(txn);
  }

  async typing(options: { thread: string; signal: AbortSignal }): Promise<void> {
    await this.#api.typing(
      await this.#room(options.thread, options.signal),
      await this.#me(options.signal),
      options.signal,
    );
  }

  /**
   * The room the peer last wrote in (or invited the bot to); the user id when there is none yet, which `send` looks
   * up in the account's `m.direct` rooms.
   */
  directThread(peer: string): string {
    return this.#data.rooms[peer] ?? peer;
  }

  /**
   * The room of a thread: a room id as it is; a user id (a peer with no known room yet: an approval pushed before
   * the user wrote) the user's room with the bot, learned since or found in the `m.direct` account data (the newest
   * one). None: refused (404), which the runner logs.
   */
  async #room(thread: string, signal: AbortSignal): Promise<string> {
    if (!thread.startsWith('@')) return thread;
    const known = this.#data.rooms[thread];
    if (known !== undefined) return known;
    let direct: Record<string, string[]> = {};
    try {
      direct = await this.#api.directRooms(await this.#me(signal), signal);
    } catch (error) {
      if (!(error instanceof MatrixApiError && error.status === 404)) throw error;
    }
    const room = direct[thread]?.at(-1);
    if (room === undefined) {
      throw new MatrixApiError({
        endpoint: 'send',
        status: 404,
        errcode: 'M_NOT_FOUND',
        error: `no room with ${thread} yet: they write to the bot or invite it first`,
      });
    }
    this.#data.rooms[thread] = room;
    await this.#save();
    return room;
  }

  /**
   * Markdown as the HTML of `formatted_body` (channels/markdown.ts): bold, italic, strikethrough, code, code blocks
   * with their language, http(s) links, lists, quotes, `<br>` line breaks; everything else escaped. `send` and `edit`
   * derive the plain `body` from it.
   */
  format(markdown: string): string {
    return markdownToHtml(markdown, 'matrix');
  }

  escape(text: string): string {
    return plainHtml(text, 'matrix');
  }

  codeBlock(text: string): string {
    return codeBlockHtml(text, 'matrix');
  }

  /**
   * At most {@link maxMessageChars} characters of text and 16,000 of HTML each (an edit carries the text twice and
   * the HTML once: under the 65,536 bytes of an event), the elements open at a cut closed and opened again.
   */
  split(text: string): string[] {
    return splitHtml(text, { maxChars: this.maxMessageChars, flavour: 'matrix', maxMarkupChars: 16_000 });
  }

  classify(error: unknown): ChannelFailure {
    if (!(error instanceof MatrixApiError)) return { kind: 'transient' };
    if (error.badToken) {
      return {
        kind: 'bad_credentials',
        message: `Matrix refused the access token (${error.status} ${error.errcode}): check matrix.access_token`,
      };
    }
    if (!error.transient) return { kind: 'refused' };
    return error.retryAfterMs === undefined
      ? { kind: 'transient' }
      : { kind: 'transient', retryAfterMs: error.retryAfterMs };
  }

  /**
   * The transaction id of a logical message: the same for every retry of a call that failed (the homeserver keeps
   * one event per id), a new one once it went through (the same text sent again later is a new message).
   */
  #txn(kind: string, room: string, text: string): string {
    const key = `${kind}-${hash(`${room}\u0000${text}`)}`;
    return `assistant-${this.#session}-${key}-${this.#sentCount.get(key) ?? 0}`;
  }

  #sent(txn: string): void {
    const key = txn.split('-').slice(2, 4).join('-');
    this.#sentCount.set(key, (this.#sentCount.get(key) ?? 0) + 1);
  }

  async #me(signal: AbortSignal): Promise<string> {
    this.#userId ??= (await this.#api.whoami(signal)).user_id;
    return this.#userId;
  }

  async #save(): Promise<void> {
    const directory = path.dirname(this.#file);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const temporary = `${this.#file}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(this.#data, null, 1)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.#file);
  }
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 20);
}

/**
 * The content of an `m.text` message from the adapter's HTML: `body` the text it shows; with `format` and
 * `formatted_body` only when it has markup beyond line breaks.
 */
function messageContent(html: string): { msgtype: 'm.text'; body: string; format?: string; formatted_body?: string } {
  const body = htmlToText(html);
  if (plainHtml(body, 'matrix') === html) return { msgtype: 'm.text', body };
  return { msgtype: 'm.text', body, format: htmlFormat, formatted_body: html };
}

/** A button's reaction key: its label's first symbol (✅ of "✅ Approve"), without emoji variation selectors. */
function reactionKey(label: string): string {
  const first = label.trim().split(/\s+/)[0] ?? label;
  return first.replace(/\uFE0F/g, '');
}

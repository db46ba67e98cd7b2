import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** A message the bot sent to a room, with every text it was edited to (`texts[0]` as sent, the last one current). */
export interface FakeMatrixSent {
  event_id: string;
  room: string;
  msgtype: string;
  /** Each `body`. */
  texts: string[];
  /** For each of `texts`, its `formatted_body` (`org.matrix.custom.html`); undefined when it had none. */
  formatted: (string | undefined)[];
  /** The message's content as sent (before any edit). */
  content: Record<string, unknown>;
  /** The reactions on it (`m.annotation`), in order: who reacted with which key. */
  reactions: { sender: string; key: string; event_id: string }[];
}

interface TimelineEvent {
  position: number;
  room: string;
  event: Record<string, unknown>;
}

interface Invite {
  position: number;
  room: string;
  from: string;
  encrypted: boolean;
}

/** The largest event the fake takes, in bytes of JSON content (the Matrix limit is 65,536 for the whole event). */
const maxContentBytes = 65_000;

/**
 * A local fake Matrix homeserver for tests only (never a product default), on 127.0.0.1: `/sync` long polling
 * (`since` / `next_batch`), sending with transaction-id dedupe (`m.replace` edits recorded on the edited message,
 * `m.reaction` annotations on the message they annotate), reading an event, `join`, `typing`, `whoami`. A
 * `formatted_body` is checked as a client's sanitiser would take it (the allowed tags and attributes, http(s) links
 * only, closed in order): one that is not is refused 400, which a homeserver would not do, so tests see it. A wrong access token is 401 `M_UNKNOWN_TOKEN`; {@link down} makes every call 502.
 * Each user has a direct room with the bot (`!dm-<localpart>:fake.test`), joined already.
 */
export class FakeMatrix {
  /** The `homeserver` setting to give the listener, e.g. `http://127.0.0.1:43123`. */
  readonly homeserver: string;
  readonly token: string;
  readonly userId = '@assistant:fake.test';
  /** Every message event the bot sent (edits are recorded on their message), in order. */
  readonly sent: FakeMatrixSent[] = [];
  /** Rooms the bot joined by the join endpoint, in order. */
  readonly joined: string[] = [];
  /** Rooms whose join is refused (403 `M_FORBIDDEN`, as for a room that is gone or invite-only). */
  readonly refusedJoins = new Set<string>();
  /**
   * The bot account's `m.direct` account data: each user's direct room (none at first; {@link direct} adds one, as
   * a client marks a room direct).
   */
  readonly directs = new Map<string, string>();
  /** How many typing notifications the bot sent. */
  typings = 0;
  /** How many calls were refused for a wrong token. */
  unauthorized = 0;
  /** While true, every call is 502. */
  down = false;
  /**
   * How many of the next sends are carried out but answered 502, as if the answer was lost on the way back (the
   * client retries; the transaction id makes the retry the same event).
   */
  loseSendAnswers = 0;

  readonly #app: FastifyInstance;
  readonly #timeline: TimelineEvent[] = [];
  readonly #invites: Invite[] = [];
  readonly #redelivered: TimelineEvent[] = [];
  readonly #encrypted = new Set<string>();
  readonly #transactions = new Map<string, string>();
  readonly #waiters = new Set<() => void>();
  readonly #closing = new AbortController();
  #position = 0;
  #nextEvent = 1;
  #closed: Promise<void> | undefined;

  private constructor(app: FastifyInstance, homeserver: string, token: string) {
    this.#app = app;
    this.homeserver = homeserver;
    this.token = token;
  }

  static async start(options: { token?: string } = {}): Promise<FakeMatrix> {
    const token = options.token ?? 'syt_fake_matrix_access_token';
    const app = Fastify({ logger: false, forceCloseConnections: true });
    let fake: FakeMatrix | undefined;
    const handle = async (request: FastifyRequest, reply: FastifyReply) => {
      if (fake === undefined) throw new Error('The fake Matrix answered before it finished starting.');
      return fake.#handle(request, reply);
    };
    app.route({ method: ['GET', 'POST', 'PUT'], url: '/_matrix/client/v3/*', handler: handle });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') {
      await app.close();
      throw new Error(`The fake Matrix expected a TCP address, got ${String(address)}.`);
    }
    fake = new FakeMatrix(app, `http://127.0.0.1:${address.port}`, token);
    return fake;
  }

  /** A user's direct room with the bot. */
  dmRoom(user: string): string {
    return `!dm-${user.replace(/^@/, '').split(':')[0]}:fake.test`;
  }

  /** A text message from `from` in `room` (default: its direct room); returns its event id. */
  send(options: { from: string; text?: string; room?: string; msgtype?: string }): string {
    const room = options.room ?? this.dmRoom(options.from);
    const encrypted = this.#encrypted.has(room);
    return this.#append(room, {
      type: encrypted ? 'm.room.encrypted' : 'm.room.message',
      sender: options.from,
      content: encrypted
        ? { algorithm: 'm.megolm.v1.aes-sha2', ciphertext: 'c2VjcmV0', session_id: 's1' }
        : { msgtype: options.msgtype ?? 'm.text', body: options.text ?? '' },
    });
  }

  /** Turns encryption on in a room (an `m.room.encryption` state event): its messages come encrypted from then on. */
  encrypt(room: string, by: string): void {
    this.#encrypted.add(room);
    this.#append(room, {
      type: 'm.room.encryption',
      sender: by,
      state_key: '',
      content: { algorithm: 'm.megolm.v1.aes-sha2' },
    });
  }

  /** `from` invites the bot to `room`. */
  invite(options: { from: string; room: string; encrypted?: boolean }): void {
    this.#invites.push({
      position: ++this.#position,
      room: options.room,
      from: options.from,
      encrypted: options.encrypted ?? false,
    });
    if (options.encrypted) this.#encrypted.add(options.room);
    this.#wake();
  }

  /** Marks a user's direct room (default {@link dmRoom}) in the bot's `m.direct` account data. */
  direct(user: string, room = this.dmRoom(user)): void {
    this.directs.set(user, room);
  }

  /** `from` reacts to an event with `key` (an `m.annotation`); returns the reaction's event id. */
  react(options: { from: string; room: string; event: string; key: string }): string {
    const eventId = this.#append(options.room, {
      type: 'm.reaction',
      sender: options.from,
      content: { 'm.relates_to': { rel_type: 'm.annotation', event_id: options.event, key: options.key } },
    });
    const target = this.sent.find((one) => one.event_id === options.event);
    target?.reactions.push({ sender: options.from, key: options.key, event_id: eventId });
    return eventId;
  }

  /** Hands an event out again in the next /sync, whatever its `since` (a redelivery). */
  redeliver(eventId: string): void {
    const entry = this.#timeline.find((one) => one.event.event_id === eventId);
    if (!entry) throw new Error(`no event ${eventId} was sent`);
    this.#redelivered.push(entry);
    this.#wake();
  }

  /** The messages the bot sent to a room, in order. */
  messagesIn(room: string): FakeMatrixSent[] {
    return this.sent.filter((message) => message.room === room);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort();
      this.#wake();
      await this.#app.close();
    })();
    return this.#closed;
  }

  #append(room: string, event: Record<string, unknown>): string {
    const eventId = `$ev${this.#nextEvent++}`;
    this.#timeline.push({
      position: ++this.#position,
      room,
      event: { ...event, event_id: eventId, origin_server_ts: Date.now() },
    });
    this.#wake();
    return eventId;
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }

  async #handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    if (this.down) return reply.code(502).send({ errcode: 'M_UNKNOWN', error: 'Bad Gateway' });
    if (request.headers.authorization !== `Bearer ${this.token}`) {
      this.unauthorized += 1;
      return reply.code(401).send({ errcode: 'M_UNKNOWN_TOKEN', error: 'Invalid access token passed.' });
    }
    const url = new URL(request.url, 'http://fake');
    const parts = url.pathname.replace('/_matrix/client/v3/', '').split('/').map(decodeURIComponent);
    const body = (request.body ?? {}) as Record<string, unknown>;
    if (parts[0] === 'sync' && request.method === 'GET') return this.#sync(url, request);
    if (parts[0] === 'account' && parts[1] === 'whoami') return { user_id: this.userId };
    if (parts[0] === 'user' && parts[2] === 'account_data' && parts[3] === 'm.direct' && request.method === 'GET') {
      if (parts[1] !== this.userId) return reply.code(403).send({ errcode: 'M_FORBIDDEN', error: 'not your account' });
      if (this.directs.size === 0) return reply.code(404).send({ errcode: 'M_NOT_FOUND', error: 'no m.direct' });
      return Object.fromEntries([...this.directs].map(([user, room]) => [user, [room]]));
    }
    if (parts[0] === 'rooms' && parts[1] !== undefined) {
      const room = parts[1];
      if (parts[2] === 'join' && request.method === 'POST') {
        if (this.refusedJoins.has(room)) {
          return reply.code(403).send({ errcode: 'M_FORBIDDEN', error: 'You are not invited to this room.' });
        }
        this.joined.push(room);
        return { room_id: room };
      }
      if (parts[2] === 'typing' && request.method === 'PUT') {
        if (parts[3] !== this.userId || body.typing !== true || typeof body.timeout !== 'number') {
          return reply
            .code(400)
            .send({ errcode: 'M_BAD_JSON', error: 'typing needs the own user id, typing, timeout' });
        }
        this.typings += 1;
        return {};
      }
      if (parts[2] === 'event' && parts[3] && request.method === 'GET') {
        const found = this.#timeline.find((one) => one.room === room && one.event.event_id === parts[3]);
        if (!found) return reply.code(404).send({ errcode: 'M_NOT_FOUND', error: 'Event not found.' });
        return { ...found.event, room_id: room };
      }
      if (parts[2] === 'send' && parts[3] === 'm.reaction' && parts[4] && request.method === 'PUT') {
        return this.#react(room, parts[4], body, reply);
      }
      if (parts[2] === 'send' && parts[3] === 'm.room.message' && parts[4] && request.method === 'PUT') {
        const answer = this.#send(room, parts[4], body, reply);
        if (this.loseSendAnswers > 0 && !reply.sent) {
          this.loseSendAnswers -= 1;
          return reply.code(502).send({ errcode: 'M_UNKNOWN', error: 'Bad Gateway' });
        }
        return answer;
      }
    }
    return reply.code(404).send({ errcode: 'M_UNRECOGNIZED', error: 'Unrecognized request' });
  }

  #react(room: string, txn: string, content: Record<string, unknown>, reply: FastifyReply): unknown {
    const known = this.#transactions.get(txn);
    if (known !== undefined) return { event_id: known };
    const relation = content['m.relates_to'] as { rel_type?: unknown; event_id?: unknown; key?: unknown } | undefined;
    const target = this.sent.find((one) => one.event_id === relation?.event_id && one.room === room);
    if (relation?.rel_type !== 'm.annotation' || typeof relation.key !== 'string' || relation.key === '' || !target) {
      return reply
        .code(400)
        .send({ errcode: 'M_BAD_JSON', error: 'a reaction needs an m.annotation of a known event' });
    }
    const eventId = this.#append(room, { type: 'm.reaction', sender: this.userId, content });
    this.#transactions.set(txn, eventId);
    target.reactions.push({ sender: this.userId, key: relation.key, event_id: eventId });
    return { event_id: eventId };
  }

  #send(room: string, txn: string, content: Record<string, unknown>, reply: FastifyReply): unknown {
    const known = this.#transactions.get(txn);
    if (known !== undefined) return { event_id: known };
    if (Buffer.byteLength(JSON.stringify(content)) > maxContentBytes) {
      return reply.code(413).send({ errcode: 'M_TOO_LARGE', error: 'event too large' });
    }
    if (typeof content.body !== 'string' || content.body === '') {
      return reply.code(400).send({ errcode: 'M_BAD_JSON', error: 'body missing' });
    }
    for (const shown of [content, content['m.new_content'] as Record<string, unknown> | undefined]) {
      const problem = shown === undefined ? undefined : checkFormatted(shown);
      if (problem) return reply.code(400).send({ errcode: 'M_BAD_JSON', error: problem });
    }
    const eventId = this.#append(room, { type: 'm.room.message', sender: this.userId, content });
    this.#transactions.set(txn, eventId);
    const relation = content['m.relates_to'] as { rel_type?: string; event_id?: string } | undefined;
    const replacement = content['m.new_content'] as { body?: string; formatted_body?: string } | undefined;
    if (relation?.rel_type === 'm.replace') {
      const original = this.sent.find((one) => one.event_id === relation.event_id && one.room === room);
      if (!original || typeof replacement?.body !== 'string') {
        return reply.code(400).send({ errcode: 'M_BAD_JSON', error: 'edit of an unknown event' });
      }
      original.texts.push(replacement.body);
      original.formatted.push(replacement.formatted_body);
    } else {
      this.sent.push({
        event_id: eventId,
        room,
        msgtype: String(content.msgtype),
        texts: [content.body],
        formatted: [typeof content.formatted_body === 'string' ? content.formatted_body : undefined],
        content,
        reactions: [],
      });
    }
    return { event_id: eventId };
  }

  async #sync(url: URL, request: FastifyRequest): Promise<unknown> {
    const sinceText = url.searchParams.get('since');
    const since = sinceText === null ? 0 : Number(sinceText.replace(/^s/, ''));
    const timeoutMs = Math.max(0, Number(url.searchParams.get('timeout') ?? 0));
    const available = () => ({
      events: [...this.#redelivered, ...this.#timeline.filter((one) => one.position > since)],
      invites: this.#invites.filter((one) => one.position > since),
    });
    const deadline = Date.now() + timeoutMs;
    let found = available();
    while (found.events.length + found.invites.length === 0 && Date.now() < deadline && !this.#closing.signal.aborted) {
      if (request.raw.destroyed) break;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          request.raw.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        this.#waiters.add(done);
        request.raw.once('close', done);
      });
      found = available();
    }
    this.#redelivered.length = 0;
    // Like Synapse: at most `filter.room.timeline.limit` events of a room (10 without a filter), the latest ones,
    // and `limited` when some were left out.
    let limit = 10;
    const filter = url.searchParams.get('filter');
    if (filter?.startsWith('{')) {
      const asked = (JSON.parse(filter) as { room?: { timeline?: { limit?: unknown } } }).room?.timeline?.limit;
      if (typeof asked === 'number') limit = asked;
    }
    const join: Record<string, { timeline: { events: unknown[]; limited: boolean } }> = {};
    for (const entry of found.events) {
      join[entry.room] ??= { timeline: { events: [], limited: false } };
      join[entry.room]?.timeline.events.push(entry.event);
    }
    for (const room of Object.values(join)) {
      if (room.timeline.events.length > limit) {
        room.timeline.events = room.timeline.events.slice(-limit);
        room.timeline.limited = true;
      }
    }
    const invite: Record<string, unknown> = {};
    for (const one of found.invites) {
      invite[one.room] = {
        invite_state: {
          events: [
            { type: 'm.room.member', sender: one.from, state_key: this.userId, content: { membership: 'invite' } },
            ...(one.encrypted
              ? [
                  {
                    type: 'm.room.encryption',
                    sender: one.from,
                    state_key: '',
                    content: { algorithm: 'm.megolm.v1.aes-sha2' },
                  },
                ]
              : []),
          ],
        },
      };
    }
    return { next_batch: `s${this.#position}`, rooms: { join, invite } };
  }
}

/** The tags a client's sanitiser keeps in `formatted_body` (a subset of the spec's list), and their attributes. */
const matrixTags: Record<string, RegExp> = {
  b: /^$/,
  strong: /^$/,
  i: /^$/,
  em: /^$/,
  s: /^$/,
  del: /^$/,
  u: /^$/,
  code: /^(?:class="language-[^"\s]+")?$/,
  pre: /^$/,
  a: /^href="https?:\/\/[^"]*"$/,
  ul: /^$/,
  ol: /^(?:start="\d+")?$/,
  li: /^$/,
  br: /^$/,
  p: /^$/,
  blockquote: /^$/,
};

/**
 * A message content's HTML as a sanitiser takes it: `format: org.matrix.custom.html` with a `formatted_body` of the
 * allowed tags and attributes only (links http(s) only), closed in order, `&` `<` `>` escaped. The problem, if any.
 */
export function checkFormatted(content: Record<string, unknown>): string | undefined {
  const html = content.formatted_body;
  if (html === undefined) return content.format === undefined ? undefined : 'format without formatted_body';
  if (typeof html !== 'string' || content.format !== 'org.matrix.custom.html')
    return 'formatted_body needs format org.matrix.custom.html';
  const open: string[] = [];
  const token = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[^<>]*)?)>|&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);|[^<&>]+|[<&>]/g;
  for (const match of html.matchAll(token)) {
    const [whole, closing, rawName, rawAttributes, entity] = match;
    if (rawName === undefined) {
      if (entity === undefined && (whole === '<' || whole === '&' || whole === '>')) return `unescaped "${whole}"`;
      continue;
    }
    const name = rawName.toLowerCase();
    const allowed = matrixTags[name];
    if (!allowed) return `tag <${name}> is not allowed`;
    if (!closing && !allowed.test((rawAttributes ?? '').trim())) return `attributes of <${name}> are not allowed`;
    if (name === 'br') continue;
    if (closing) {
      const top = open.pop();
      if (top !== name) return `</${name}> closes <${top ?? 'nothing'}>`;
    } else {
      open.push(name);
    }
  }
  return open.length > 0 ? `<${open.at(-1)}> is not closed` : undefined;
}

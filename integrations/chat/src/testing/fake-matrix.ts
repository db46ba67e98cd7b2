import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** A message the bot sent to a room, with every text it was edited to (`texts[0]` as sent, the last one current). */
export interface FakeMatrixSent {
  event_id: string;
  room: string;
  msgtype: string;
  texts: string[];
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
 * (`since` / `next_batch`), sending with transaction-id dedupe (`m.replace` edits recorded on the edited message),
 * `join`, `typing`, `whoami`. A wrong access token is 401 `M_UNKNOWN_TOKEN`; {@link down} makes every call 502.
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

  #send(room: string, txn: string, content: Record<string, unknown>, reply: FastifyReply): unknown {
    const known = this.#transactions.get(txn);
    if (known !== undefined) return { event_id: known };
    if (Buffer.byteLength(JSON.stringify(content)) > maxContentBytes) {
      return reply.code(413).send({ errcode: 'M_TOO_LARGE', error: 'event too large' });
    }
    if (typeof content.body !== 'string' || content.body === '') {
      return reply.code(400).send({ errcode: 'M_BAD_JSON', error: 'body missing' });
    }
    const eventId = this.#append(room, { type: 'm.room.message', sender: this.userId, content });
    this.#transactions.set(txn, eventId);
    const relation = content['m.relates_to'] as { rel_type?: string; event_id?: string } | undefined;
    const replacement = content['m.new_content'] as { body?: string } | undefined;
    if (relation?.rel_type === 'm.replace') {
      const original = this.sent.find((one) => one.event_id === relation.event_id && one.room === room);
      if (!original || typeof replacement?.body !== 'string') {
        return reply.code(400).send({ errcode: 'M_BAD_JSON', error: 'edit of an unknown event' });
      }
      original.texts.push(replacement.body);
    } else {
      this.sent.push({ event_id: eventId, room, msgtype: String(content.msgtype), texts: [content.body] });
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

import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ChatSettings } from '../settings.generated.ts';

/** A message the bot sent, with every text it was edited to (`texts[0]` as sent, the last one current). */
export interface FakeDiscordSent {
  id: string;
  channel_id: string;
  texts: string[];
  /** The buttons of its action rows, in order. */
  buttons: { label: string; custom_id: string; style: number }[];
  /** Its `allowed_mentions`, as sent. */
  allowed_mentions: unknown;
}

/** A message someone (a user, or the bot) wrote, as the REST API and MESSAGE_CREATE show it. */
interface StoredMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  author: { id: string; username: string; bot?: boolean };
  content: string;
  type: number;
  timestamp: string;
  components?: unknown[];
}

/** One gateway dispatch as sent (`op` 0), kept per session for RESUME. */
interface Dispatch {
  s: number;
  t: string;
  d: unknown;
}

interface Session {
  id: string;
  seq: number;
  log: Dispatch[];
  socket: WebSocket | undefined;
  intents: number;
}

/** An interaction answered by the bot (`POST /interactions/{id}/{token}/callback`). */
export interface FakeDiscordCallback {
  interaction: string;
  type: number;
  content: string | undefined;
  flags: number | undefined;
}

/** A Discord message may hold at most 2000 characters. */
const maxContentChars = 2000;

/**
 * A local fake Discord for tests only (never a product default), on 127.0.0.1: the REST API's few routes the bot uses
 * under `<apiRoot>/v10` (`GET /gateway/bot`, `GET /users/@me`, creating, editing and listing messages, typing, DM
 * channels, interaction callbacks) and the Gateway WebSocket behind the URL `GET /gateway/bot` names: HELLO,
 * IDENTIFY → READY, heartbeats with their ACKs, RESUME (the session's missed dispatches replayed, then RESUMED),
 * MESSAGE_CREATE and INTERACTION_CREATE dispatches with sequence numbers. A wrong token is REST 401 and gateway close
 * 4004 "Authentication failed"; {@link down} makes REST calls 502 and the gateway refuse connections. Ids are
 * snowflake-like decimal strings that grow with time, as Discord's do.
 */
export class FakeDiscord {
  /** The `api_root` setting to give the listener, e.g. `http://127.0.0.1:43123/api`. */
  readonly apiRoot: string;
  readonly gatewayUrl: string;
  readonly token: string;
  readonly botId = '1000000000000000001';
  readonly applicationId = '1000000000000000002';
  readonly guildId = '1000000000000000100';
  /** The guild channel the bot is configured for, and another one it is not. */
  readonly guildChannel = '1000000000000000101';
  readonly otherGuildChannel = '1000000000000000102';
  /** Every message the bot sent (edits recorded on their message), in order. */
  readonly sent: FakeDiscordSent[] = [];
  /** The interaction callbacks the bot made, in order. */
  readonly callbacks: FakeDiscordCallback[] = [];
  /** How many typing indicators the bot triggered. */
  typings = 0;
  /** How many heartbeats the gateway got (each answered with an ACK). */
  heartbeats = 0;
  /** How many IDENTIFYs and RESUMEs the gateway got with the right token. */
  identifies = 0;
  resumes = 0;
  /** The intents of the last IDENTIFY. */
  intents: number | undefined;
  /** While true, the gateway refuses every IDENTIFY (close 4004) even with the right token: a token REST takes. */
  refuseIdentify = false;
  /** How many times the bot listed a channel's messages (`GET /channels/{id}/messages`). */
  listings = 0;
  /** How many REST calls and gateway logins were refused for a wrong token. */
  unauthorized = 0;
  /** While true, REST calls are 502 and the gateway refuses connections (and drops the open ones). */
  #down = false;

  readonly #server: Server;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #messages: StoredMessage[] = [];
  readonly #sessions = new Map<string, Session>();
  readonly #interactions = new Map<string, { token: string; payload: unknown }>();
  readonly #dmChannels = new Map<string, string>();
  readonly #early: { t: string; d: unknown }[] = [];
  #listingGate: Promise<void> | undefined;
  #heartbeatIntervalMs: number;
  #nextId = 2000000000000000000n;

  private constructor(server: Server, port: number, token: string, heartbeatIntervalMs: number) {
    this.#server = server;
    this.apiRoot = `http://127.0.0.1:${port}/api`;
    this.gatewayUrl = `ws://127.0.0.1:${port}/gateway`;
    this.token = token;
    this.#heartbeatIntervalMs = heartbeatIntervalMs;
  }

  /** `heartbeatIntervalMs` is what HELLO asks for (Discord's is about 41 s). */
  static async start(options: { token?: string; heartbeatIntervalMs?: number } = {}): Promise<FakeDiscord> {
    const token = options.token ?? 'MTAwMDAwMDAwMDAwMDAwMDAwMQ.fake.discord-bot-token';
    let fake: FakeDiscord | undefined;
    const server = createServer((request, response) => {
      if (!fake) return void response.writeHead(503).end();
      fake.#rest(request, response).catch((error: unknown) => {
        if (!response.headersSent) response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ message: String(error), code: 0 }));
      });
    });
    server.on('upgrade', (request, socket, head) => {
      if (fake) fake.#upgrade(request, socket, head);
      else socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') {
      server.close();
      throw new Error(`The fake Discord expected a TCP address, got ${String(address)}.`);
    }
    fake = new FakeDiscord(server, address.port, token, options.heartbeatIntervalMs ?? 41_250);
    return fake;
  }

  get down(): boolean {
    return this.#down;
  }

  set down(down: boolean) {
    this.#down = down;
    if (down) for (const socket of this.#wss.clients) socket.terminate();
  }

  /** A user's DM channel with the bot (created on first use, as `POST /users/@me/channels` does). */
  dmChannel(user: string): string {
    let channel = this.#dmChannels.get(user);
    if (channel === undefined) {
      channel = this.#id();
      this.#dmChannels.set(user, channel);
    }
    return channel;
  }

  /**
   * A message from `from` (a user id) in a channel (default: its DM with the bot), stored (REST lists it) and
   * dispatched as MESSAGE_CREATE; returns its id.
   */
  send(options: { from: string; text: string; channel?: string; bot?: boolean }): string {
    const channel = options.channel ?? this.dmChannel(options.from);
    const guild = channel === this.guildChannel || channel === this.otherGuildChannel;
    const message: StoredMessage = {
      id: this.#id(),
      channel_id: channel,
      ...(guild ? { guild_id: this.guildId } : {}),
      author: { id: options.from, username: `user${options.from.slice(-4)}`, ...(options.bot ? { bot: true } : {}) },
      content: options.text,
      type: 0,
      timestamp: new Date().toISOString(),
    };
    this.#messages.push(message);
    this.#dispatch('MESSAGE_CREATE', guild ? { ...message, member: { roles: [] } } : message);
    return message.id;
  }

  /**
   * Stores a message without dispatching it: one written while the bot was away, that only a catch-up by REST finds.
   */
  sendUnseen(options: { from: string; text: string; channel?: string }): string {
    const channel = options.channel ?? this.dmChannel(options.from);
    const message: StoredMessage = {
      id: this.#id(),
      channel_id: channel,
      author: { id: options.from, username: `user${options.from.slice(-4)}` },
      content: options.text,
      type: 0,
      timestamp: new Date().toISOString(),
    };
    this.#messages.push(message);
    return message.id;
  }

  /** `from` presses a button (by label or custom_id) of a message the bot sent: an INTERACTION_CREATE; its id. */
  press(options: { from: string; message: FakeDiscordSent; button: string }): string {
    const button = options.message.buttons.find(
      (one) => one.label === options.button || one.custom_id === options.button,
    );
    if (!button) throw new Error(`message ${options.message.id} has no button ${options.button}`);
    const id = this.#id();
    const token = `interaction-token-${randomBytes(6).toString('hex')}`;
    const guild = options.message.channel_id === this.guildChannel;
    const user = { id: options.from, username: `user${options.from.slice(-4)}` };
    const payload = {
      id,
      application_id: this.applicationId,
      type: 3,
      token,
      version: 1,
      channel_id: options.message.channel_id,
      ...(guild ? { guild_id: this.guildId, member: { user, roles: [] } } : { user }),
      message: {
        id: options.message.id,
        channel_id: options.message.channel_id,
        content: options.message.texts.at(-1),
      },
      data: { custom_id: button.custom_id, component_type: 2 },
    };
    this.#interactions.set(id, { token, payload });
    this.#dispatch('INTERACTION_CREATE', payload);
    return id;
  }

  /** Dispatches a message or an interaction again (a new sequence number, the same payload). */
  redeliver(id: string): void {
    const interaction = this.#interactions.get(id);
    if (interaction) {
      this.#dispatch('INTERACTION_CREATE', interaction.payload);
      return;
    }
    const message = this.#messages.find((one) => one.id === id);
    if (!message) throw new Error(`no message or interaction ${id}`);
    this.#dispatch('MESSAGE_CREATE', message);
  }

  /** Holds the answers to message listings until the returned function is called. */
  holdListings(): () => void {
    let release = () => {};
    this.#listingGate = new Promise((resolve) => {
      release = () => {
        this.#listingGate = undefined;
        resolve();
      };
    });
    return release;
  }

  /** Drops the gateway connections (as a network failure does: no close frame); the sessions stay resumable. */
  dropConnections(): void {
    for (const socket of this.#wss.clients) socket.terminate();
  }

  /** The messages the bot sent to a channel, in order. */
  messagesIn(channel: string): FakeDiscordSent[] {
    return this.sent.filter((message) => message.channel_id === channel);
  }

  /** The gateway connections open now. */
  get connections(): number {
    return this.#wss.clients.size;
  }

  async close(): Promise<void> {
    for (const socket of this.#wss.clients) socket.terminate();
    this.#wss.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #id(): string {
    this.#nextId += 1n;
    return String(this.#nextId);
  }

  // ---- REST ----

  async #rest(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const reply = (status: number, body?: unknown) => {
      if (body === undefined) return void response.writeHead(status).end();
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (this.#down) return reply(502, { message: 'Bad Gateway', code: 0 });
    const url = new URL(request.url ?? '/', 'http://fake');
    const parts = url.pathname.replace(/^\/api\/v10\//, '').split('/');
    const body = (chunks.length > 0 ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {}) as Record<
      string,
      unknown
    >;
    const method = request.method ?? 'GET';
    // Interaction callbacks are authorized by the interaction's token in the path, not the bot token.
    if (parts[0] === 'interactions' && parts[3] === 'callback' && method === 'POST') {
      const interaction = this.#interactions.get(parts[1] ?? '');
      if (!interaction || interaction.token !== parts[2])
        return reply(404, { message: 'Unknown interaction', code: 10062 });
      if (this.callbacks.some((one) => one.interaction === parts[1])) {
        return reply(400, { message: 'Interaction has already been acknowledged.', code: 40060 });
      }
      const data = (body.data ?? {}) as { content?: unknown; flags?: unknown };
      this.callbacks.push({
        interaction: parts[1] ?? '',
        type: Number(body.type),
        content: typeof data.content === 'string' ? data.content : undefined,
        flags: typeof data.flags === 'number' ? data.flags : undefined,
      });
      return reply(204);
    }
    if (request.headers.authorization !== `Bot ${this.token}`) {
      this.unauthorized += 1;
      return reply(401, { message: '401: Unauthorized', code: 0 });
    }
    if (parts[0] === 'gateway' && parts[1] === 'bot' && method === 'GET') {
      return reply(200, {
        url: this.gatewayUrl,
        shards: 1,
        session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 },
      });
    }
    if (parts[0] === 'users' && parts[1] === '@me') {
      if (parts[2] === undefined && method === 'GET') {
        return reply(200, { id: this.botId, username: 'assistant', bot: true });
      }
      if (parts[2] === 'channels' && method === 'POST') {
        const recipient = String(body.recipient_id ?? '');
        if (!/^\d+$/.test(recipient)) return reply(400, { message: 'Invalid Form Body', code: 50035 });
        return reply(200, { id: this.dmChannel(recipient), type: 1, recipients: [{ id: recipient }] });
      }
    }
    if (parts[0] === 'channels' && parts[1] !== undefined) {
      const channel = parts[1];
      if (parts[2] === 'typing' && method === 'POST') {
        this.typings += 1;
        return reply(204);
      }
      if (parts[2] === 'messages' && parts[3] === undefined && method === 'GET') {
        this.listings += 1;
        if (this.#listingGate) await this.#listingGate;
        const after = BigInt(url.searchParams.get('after') ?? '0');
        const limit = Math.min(100, Number(url.searchParams.get('limit') ?? 50));
        // Like Discord: the oldest `limit` after `after`, newest first.
        const found = this.#messages
          .filter((one) => one.channel_id === channel && BigInt(one.id) > after)
          .slice(0, limit)
          .reverse();
        return reply(200, found);
      }
      if (parts[2] === 'messages' && parts[3] === undefined && method === 'POST') {
        const content = typeof body.content === 'string' ? body.content : '';
        if (content === '' || Array.from(content).length > maxContentChars) {
          return reply(400, {
            message: 'Invalid Form Body',
            code: 50035,
            errors: {
              content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] },
            },
          });
        }
        const buttons = buttonsOf(body.components);
        if (buttons.some((button) => button.custom_id.length > 100)) {
          return reply(400, { message: 'Invalid Form Body', code: 50035 });
        }
        const message: StoredMessage = {
          id: this.#id(),
          channel_id: channel,
          ...(channel === this.guildChannel || channel === this.otherGuildChannel ? { guild_id: this.guildId } : {}),
          author: { id: this.botId, username: 'assistant', bot: true },
          content,
          type: 0,
          timestamp: new Date().toISOString(),
          ...(Array.isArray(body.components) ? { components: body.components } : {}),
        };
        this.#messages.push(message);
        this.sent.push({
          id: message.id,
          channel_id: channel,
          texts: [content],
          buttons,
          allowed_mentions: body.allowed_mentions,
        });
        // Discord dispatches the bot's own messages to it too.
        this.#dispatch('MESSAGE_CREATE', message);
        return reply(200, message);
      }
      if (parts[2] === 'messages' && parts[3] !== undefined && method === 'PATCH') {
        const sent = this.sent.find((one) => one.id === parts[3] && one.channel_id === channel);
        if (!sent) return reply(404, { message: 'Unknown Message', code: 10008 });
        const content = typeof body.content === 'string' ? body.content : '';
        if (Array.from(content).length > maxContentChars)
          return reply(400, { message: 'Invalid Form Body', code: 50035 });
        sent.texts.push(content);
        const stored = this.#messages.find((one) => one.id === sent.id);
        if (stored) stored.content = content;
        return reply(200, { ...stored, content });
      }
    }
    return reply(404, { message: '404: Not Found', code: 0 });
  }

  // ---- the gateway ----

  #upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    if (this.#down || !(request.url ?? '').startsWith('/gateway')) {
      socket.end('HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(request, socket, head, (ws) => this.#connected(ws));
  }

  #connected(ws: WebSocket): void {
    let session: Session | undefined;
    const send = (payload: unknown) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(payload));
    };
    send({ op: 10, d: { heartbeat_interval: this.#heartbeatIntervalMs }, s: null, t: null });
    ws.on('message', (raw) => {
      let payload: { op?: unknown; d?: Record<string, unknown> | number | null };
      try {
        payload = JSON.parse(String(raw));
      } catch {
        ws.close(4002, 'Error while decoding payload.');
        return;
      }
      const data = (payload.d ?? {}) as Record<string, unknown>;
      switch (payload.op) {
        case 1:
          this.heartbeats += 1;
          send({ op: 11, d: null, s: null, t: null });
          return;
        case 2: {
          if (data.token !== this.token || this.refuseIdentify) {
            this.unauthorized += 1;
            ws.close(4004, 'Authentication failed.');
            return;
          }
          this.identifies += 1;
          this.intents = Number(data.intents);
          session = { id: randomBytes(8).toString('hex'), seq: 0, log: [], socket: ws, intents: this.intents };
          this.#sessions.set(session.id, session);
          this.#send(session, 'READY', {
            v: 10,
            user: { id: this.botId, username: 'assistant', bot: true },
            guilds: [{ id: this.guildId, unavailable: true }],
            session_id: session.id,
            resume_gateway_url: this.gatewayUrl,
            shard: [0, 1],
            application: { id: this.applicationId, flags: 0 },
          });
          for (const early of this.#early.splice(0)) this.#send(session, early.t, early.d);
          return;
        }
        case 6: {
          if (data.token !== this.token) {
            this.unauthorized += 1;
            ws.close(4004, 'Authentication failed.');
            return;
          }
          const known = this.#sessions.get(String(data.session_id));
          if (!known) {
            send({ op: 9, d: false, s: null, t: null });
            return;
          }
          this.resumes += 1;
          session = known;
          known.socket = ws;
          const seq = Number(data.seq ?? 0);
          for (const dispatch of known.log.filter((one) => one.s > seq)) send({ op: 0, ...dispatch });
          this.#send(known, 'RESUMED', null);
          return;
        }
        default:
          ws.close(4001, 'Unknown opcode.');
      }
    });
    ws.on('close', (code) => {
      if (session?.socket !== ws) return;
      session.socket = undefined;
      // A client's normal close ends its session, as on Discord: it cannot be resumed.
      if (code === 1000 || code === 1001) this.#sessions.delete(session.id);
    });
  }

  /**
   * Dispatches to every session (live ones get it now, the others on RESUME). Before the bot's first IDENTIFY there
   * is none: kept for the first session, so that a test may deliver right after starting the listener (Discord would
   * not dispatch it; the bot would read it only by a catch-up of a channel it knew).
   */
  #dispatch(type: string, data: unknown): void {
    if (this.#sessions.size === 0) {
      this.#early.push({ t: type, d: data });
      return;
    }
    for (const session of this.#sessions.values()) this.#send(session, type, data);
  }

  #send(session: Session, type: string, data: unknown): void {
    session.seq += 1;
    const dispatch = { s: session.seq, t: type, d: data };
    session.log.push(dispatch);
    const socket = session.socket;
    if (socket && socket.readyState === socket.OPEN) socket.send(JSON.stringify({ op: 0, ...dispatch }));
  }
}

function buttonsOf(components: unknown): FakeDiscordSent['buttons'] {
  if (!Array.isArray(components)) return [];
  const buttons: FakeDiscordSent['buttons'] = [];
  for (const row of components as { type?: unknown; components?: unknown }[]) {
    if (row.type !== 1 || !Array.isArray(row.components)) continue;
    for (const button of row.components as {
      type?: unknown;
      label?: unknown;
      custom_id?: unknown;
      style?: unknown;
    }[]) {
      if (button.type !== 2) continue;
      buttons.push({
        label: String(button.label ?? ''),
        custom_id: String(button.custom_id ?? ''),
        style: Number(button.style),
      });
    }
  }
  return buttons;
}

/** The chat settings of a listener under test: the given Discord part, the other channels off. */
export function discordSettings(discord: ChatSettings['discord']): ChatSettings {
  return {
    mode: 'followup',
    retention: {
      events_max_bytes: 1_048_576,
      events_max_age: 604_800_000,
      events_idle: 600_000,
      answered_inbox: 604_800_000,
    },
    collect_window: 1000,
    collect_max: 20,
    max_steps: 20,
    mcp_servers: [],
    persona: 'assistant',
    telegram: { allowed_users: [], api_root: 'https://api.telegram.org', poll_timeout: 30_000 },
    matrix: { homeserver: 'https://matrix.org', allowed_users: [], poll_timeout: 30_000 },
    discord,
  };
}

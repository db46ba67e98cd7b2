import { createHmac, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { type WebSocket, WebSocketServer } from 'ws';

/** A message the bot sent, with every text it was updated to (`texts[0]` as sent, the last one current). */
export interface FakeSlackMessage {
  channel: string;
  ts: string;
  thread_ts?: string;
  texts: string[];
  /** The buttons of its actions blocks: label, `value`, `action_id`. */
  buttons: { text: string; value: string; action_id: string }[];
  /** Its Block Kit blocks as sent (none for plain text). */
  blocks: unknown[];
}

/** One Web API call as the fake received it (the method and its parameters; never a token). */
export interface FakeSlackCall {
  method: string;
  params: Record<string, unknown>;
}

/** An answer a test scripts for the next call of a method: a Slack error, or an HTTP status (429 with Retry-After). */
export interface FakeSlackFailure {
  error?: string;
  status?: number;
  retryAfter?: number;
}

interface Delivery {
  handle: string;
  type: 'events_api' | 'interactive';
  payload: Record<string, unknown>;
  attempts: number;
  acked: boolean;
}

const maxTextLength = 40_000;

/**
 * A local fake of Slack for tests only (never a product default), on 127.0.0.1 at a free port: the Web API
 * (`auth.test`, `apps.connections.open`, `chat.postMessage`, `chat.update`) at `<apiUrl><method>`, Socket Mode's
 * WebSocket (the URL `apps.connections.open` hands out: `hello`, envelopes, acknowledgements by `envelope_id`, and
 * every unacknowledged envelope delivered again to a new connection, as Slack does), and the Events API's side: with
 * {@link eventsUrl} set, deliveries are POSTed there signed with the signing secret (`x-slack-signature`,
 * `x-slack-request-timestamp`, `x-slack-retry-num` on a retry), presses as `payload=` forms. Wrong tokens get
 * `invalid_auth`; {@link setDown} answers 503 and drops the sockets.
 */
export class FakeSlack {
  /** The Web API root to give the listener (`slack.api_url`), ending in `/api/`. */
  readonly apiUrl: string;
  readonly botToken = 'xoxb-fake-slack-bot-token';
  readonly appToken = 'xapp-fake-slack-app-token';
  readonly signingSecret = 'fake-slack-signing-secret';
  /** The bot's own user id (`auth.test`). */
  readonly botUserId = 'UBOTFAKE';
  /** Where the Events API deliveries go; unset, they go over Socket Mode. */
  eventsUrl: string | undefined;
  readonly calls: FakeSlackCall[] = [];
  readonly sent: FakeSlackMessage[] = [];
  /** The answers of the Events API requests, in order (status and body). */
  readonly eventsAnswers: { status: number; body: string }[] = [];
  unauthorized = 0;
  /** While true, a new Socket Mode connection opens but is never said `hello` (a stuck handshake). */
  withholdHello = false;
  /** Socket Mode connections opened. */
  connections = 0;

  readonly #app: FastifyInstance;
  readonly #wss = new WebSocketServer({ noServer: true });
  readonly #sockets = new Set<WebSocket>();
  readonly #deliveries = new Map<string, Delivery>();
  /** Envelope id → delivery handle. */
  readonly #envelopes = new Map<string, string>();
  readonly #failures = new Map<string, FakeSlackFailure[]>();
  readonly #port: number;
  readonly #ping: NodeJS.Timeout;
  #down = false;
  #ts = 1_700_000_000;
  #sequence = 0;
  #closed: Promise<void> | undefined;
  #posting: Promise<void> = Promise.resolve();

  private constructor(app: FastifyInstance, port: number) {
    this.#app = app;
    this.#port = port;
    this.apiUrl = `http://127.0.0.1:${port}/api/`;
    // Slack pings its Socket Mode connections.
    this.#ping = setInterval(() => {
      for (const socket of this.#sockets) socket.ping();
    }, 5_000);
    this.#ping.unref();
  }

  static async start(): Promise<FakeSlack> {
    const app = Fastify({ logger: false, forceCloseConnections: true });
    app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    let fake: FakeSlack | undefined;
    app.post('/api/:method', async (request, reply) => {
      if (!fake) throw new Error('The fake Slack answered before it finished starting.');
      return fake.#handle(request, reply);
    });
    app.server.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (!fake || fake.#down || !request.url?.startsWith('/socket')) {
        socket.destroy();
        return;
      }
      fake.#upgrade(request, socket, head);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') {
      await app.close();
      throw new Error(`The fake Slack expected a TCP address, got ${String(address)}.`);
    }
    fake = new FakeSlack(app, address.port);
    return fake;
  }

  /** The direct conversation of the app with a user. */
  dmChannel(user: string): string {
    return `D${user}`;
  }

  /**
   * A message from `from`: in the user's direct conversation with the app (`message.im`), or in `channel` (a
   * `message` event, or `app_mention` with `mention`). Returns a handle for {@link redeliver}.
   */
  deliver(options: { from: string; text: string; channel?: string; mention?: boolean; threadTs?: string }): string {
    const channel = options.channel ?? this.dmChannel(options.from);
    const ts = this.#nextTs();
    const text = `${options.mention ? `<@${this.botUserId}> ` : ''}${escapeSlack(options.text)}`;
    const event = {
      type: options.mention ? 'app_mention' : 'message',
      user: options.from,
      text,
      ts,
      channel,
      event_ts: ts,
      ...(options.channel === undefined ? { channel_type: 'im' } : options.mention ? {} : { channel_type: 'channel' }),
      ...(options.threadTs ? { thread_ts: options.threadTs } : {}),
    };
    return this.#push('events_api', this.#callback(event));
  }

  /** Any Events API event (an edit, a bot's message…), as Slack wraps it. */
  deliverEvent(event: Record<string, unknown>): string {
    return this.#push('events_api', this.#callback(event));
  }

  /** `from` presses a button (by label or value) of a message the bot sent: a `block_actions` interaction. */
  press(options: { from: string; message: FakeSlackMessage; button: string }): string {
    const button = options.message.buttons.find((one) => one.text === options.button || one.value === options.button);
    if (!button) throw new Error(`message ${options.message.ts} has no button ${options.button}`);
    const actionTs = `${this.#nextTs()}`;
    return this.#push('interactive', {
      type: 'block_actions',
      user: { id: options.from },
      api_app_id: 'AFAKE',
      trigger_id: `trigger-${actionTs}`,
      container: { type: 'message', message_ts: options.message.ts, channel_id: options.message.channel },
      channel: { id: options.message.channel },
      message: { ts: options.message.ts, text: options.message.texts.at(-1) },
      response_url: `http://127.0.0.1:${this.#port}/response/${actionTs}`,
      actions: [{ type: 'button', action_id: button.action_id, value: button.value, action_ts: actionTs }],
    });
  }

  /** Slack delivers it again: a new envelope (or an Events API retry, `x-slack-retry-num`) of the same event. */
  redeliver(handle: string): void {
    const delivery = this.#deliveries.get(handle);
    if (!delivery) throw new Error(`no delivery ${handle}`);
    this.#send(delivery);
  }

  /** The payload Slack delivers for a handle (an event callback's `event` is in `payload.event`). */
  payloadOf(handle: string): Record<string, unknown> {
    const delivery = this.#deliveries.get(handle);
    if (!delivery) throw new Error(`no delivery ${handle}`);
    return delivery.payload;
  }

  /** Whether an envelope of the delivery was acknowledged (Socket Mode) or answered 2xx (Events API). */
  acknowledged(handle: string): boolean {
    return this.#deliveries.get(handle)?.acked ?? false;
  }

  /** The messages the bot sent to a channel, in order. */
  messagesIn(channel: string): FakeSlackMessage[] {
    return this.sent.filter((message) => message.channel === channel);
  }

  callsOf(method: string): FakeSlackCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  fail(method: string, ...failures: FakeSlackFailure[]): void {
    this.#failures.set(method, [...(this.#failures.get(method) ?? []), ...failures]);
  }

  /** Down: every call answers 503, the sockets close and new ones are refused. */
  setDown(down: boolean): void {
    this.#down = down;
    if (down) for (const socket of this.#sockets) socket.terminate();
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      clearInterval(this.#ping);
      for (const socket of this.#sockets) socket.terminate();
      this.#wss.close();
      await this.#app.close();
    })();
    return this.#closed;
  }

  #nextTs(): string {
    this.#sequence += 1;
    return `${this.#ts + this.#sequence}.${String(this.#sequence).padStart(6, '0')}`;
  }

  #callback(event: Record<string, unknown>): Record<string, unknown> {
    return {
      token: 'verification-token-unused',
      team_id: 'TFAKE',
      api_app_id: 'AFAKE',
      event,
      type: 'event_callback',
      event_id: `Ev${randomUUID().replaceAll('-', '').slice(0, 10).toUpperCase()}`,
      event_time: Math.floor(Date.now() / 1000),
    };
  }

  #push(type: Delivery['type'], payload: Record<string, unknown>): string {
    const handle = `d${this.#deliveries.size + 1}`;
    const delivery: Delivery = { handle, type, payload, attempts: 0, acked: false };
    this.#deliveries.set(handle, delivery);
    this.#send(delivery);
    return handle;
  }

  #send(delivery: Delivery): void {
    const attempt = delivery.attempts;
    delivery.attempts += 1;
    if (this.eventsUrl !== undefined) {
      // One request at a time, in order, as a test expects of one sender.
      this.#posting = this.#posting.then(() => this.#post(delivery, attempt));
      return;
    }
    const envelopeId = randomUUID();
    this.#envelopes.set(envelopeId, delivery.handle);
    const envelope = {
      envelope_id: envelopeId,
      type: delivery.type,
      payload: delivery.payload,
      accepts_response_payload: false,
      ...(delivery.type === 'events_api' ? { retry_attempt: attempt, retry_reason: attempt > 0 ? 'timeout' : '' } : {}),
    };
    for (const socket of this.#sockets) socket.send(JSON.stringify(envelope));
  }

  /** The Events API: a signed POST (JSON, or a `payload=` form for an interaction). */
  async #post(delivery: Delivery, attempt: number): Promise<void> {
    const body =
      delivery.type === 'interactive'
        ? new URLSearchParams({ payload: JSON.stringify(delivery.payload) }).toString()
        : JSON.stringify(delivery.payload);
    const timestamp = String(Math.floor(Date.now() / 1000));
    const signature = `v0=${createHmac('sha256', this.signingSecret).update(`v0:${timestamp}:${body}`).digest('hex')}`;
    try {
      const response = await fetch(this.eventsUrl ?? '', {
        method: 'POST',
        headers: {
          'content-type': delivery.type === 'interactive' ? 'application/x-www-form-urlencoded' : 'application/json',
          'x-slack-request-timestamp': timestamp,
          'x-slack-signature': signature,
          ...(attempt > 0 ? { 'x-slack-retry-num': String(attempt), 'x-slack-retry-reason': 'http_timeout' } : {}),
        },
        body,
      });
      const text = await response.text();
      this.eventsAnswers.push({ status: response.status, body: text });
      if (response.ok) delivery.acked = true;
    } catch (error) {
      this.eventsAnswers.push({ status: 0, body: (error as Error).message });
    }
  }

  #upgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#wss.handleUpgrade(request, socket, head, (ws) => {
      this.connections += 1;
      this.#sockets.add(ws);
      ws.on('close', () => this.#sockets.delete(ws));
      ws.on('message', (data) => {
        try {
          const message = JSON.parse(String(data)) as { envelope_id?: string };
          const handle = message.envelope_id ? this.#envelopes.get(message.envelope_id) : undefined;
          const delivery = handle ? this.#deliveries.get(handle) : undefined;
          if (delivery) delivery.acked = true;
        } catch {
          // Not JSON: Slack ignores it too.
        }
      });
      if (this.withholdHello) return;
      ws.send(JSON.stringify({ type: 'hello', num_connections: this.#sockets.size }));
      // Slack retries what was not acknowledged on the connection it has.
      for (const delivery of this.#deliveries.values()) {
        if (!delivery.acked) this.#sendTo(ws, delivery);
      }
    });
  }

  #sendTo(ws: WebSocket, delivery: Delivery): void {
    const attempt = delivery.attempts;
    delivery.attempts += 1;
    const envelopeId = randomUUID();
    this.#envelopes.set(envelopeId, delivery.handle);
    ws.send(
      JSON.stringify({
        envelope_id: envelopeId,
        type: delivery.type,
        payload: delivery.payload,
        accepts_response_payload: false,
        ...(delivery.type === 'events_api' ? { retry_attempt: attempt, retry_reason: 'timeout' } : {}),
      }),
    );
  }

  async #handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const { method } = request.params as { method: string };
    if (this.#down) return reply.code(503).send('upstream unavailable');
    const params = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
    const token =
      /^Bearer (.+)$/.exec(String(request.headers.authorization ?? ''))?.[1] ??
      (typeof params.token === 'string' ? params.token : '');
    const wanted = method === 'apps.connections.open' ? this.appToken : this.botToken;
    if (token !== wanted) {
      this.unauthorized += 1;
      return { ok: false, error: token === '' ? 'not_authed' : 'invalid_auth' };
    }
    const { token: _token, ...visible } = params;
    this.calls.push({ method, params: visible });
    const failure = this.#failures.get(method)?.shift();
    if (failure) {
      if (failure.status !== undefined) {
        if (failure.retryAfter !== undefined) reply.header('retry-after', String(failure.retryAfter));
        return reply.code(failure.status).send({ ok: false, error: failure.error ?? 'ratelimited' });
      }
      return { ok: false, error: failure.error ?? 'internal_error' };
    }
    switch (method) {
      case 'auth.test':
        return { ok: true, user_id: this.botUserId, bot_id: 'BFAKE', team_id: 'TFAKE', user: 'assistant' };
      case 'apps.connections.open':
        return { ok: true, url: `ws://127.0.0.1:${this.#port}/socket?ticket=${randomUUID()}` };
      case 'chat.postMessage':
        return this.#postMessage(params);
      case 'chat.update':
        return this.#update(params);
      default:
        return { ok: false, error: 'unknown_method' };
    }
  }

  #postMessage(params: Record<string, unknown>): unknown {
    let channel = String(params.channel ?? '');
    if (channel === '') return { ok: false, error: 'channel_not_found' };
    if (channel.startsWith('U')) channel = this.dmChannel(channel);
    const text = String(params.text ?? '');
    if (text.length > maxTextLength) return { ok: false, error: 'msg_too_long' };
    const blocks = parseBlocks(params.blocks);
    const message: FakeSlackMessage = {
      channel,
      ts: this.#nextTs(),
      ...(typeof params.thread_ts === 'string' ? { thread_ts: params.thread_ts } : {}),
      texts: [text],
      buttons: buttonsOf(blocks),
      blocks,
    };
    this.sent.push(message);
    return { ok: true, channel, ts: message.ts, message: { text, ts: message.ts } };
  }

  #update(params: Record<string, unknown>): unknown {
    const message = this.sent.find((one) => one.channel === params.channel && one.ts === params.ts);
    if (!message) return { ok: false, error: 'message_not_found' };
    const text = String(params.text ?? '');
    if (text.length > maxTextLength) return { ok: false, error: 'msg_too_long' };
    message.texts.push(text);
    return { ok: true, channel: message.channel, ts: message.ts, text };
  }
}

function parseBlocks(value: unknown): unknown[] {
  if (typeof value !== 'string') return Array.isArray(value) ? value : [];
  try {
    const parsed = JSON.parse(value) as unknown;
    return Array.isArray(parsed) ? parsed : [];
  } catch {
    return [];
  }
}

function buttonsOf(blocks: unknown[]): FakeSlackMessage['buttons'] {
  const buttons: FakeSlackMessage['buttons'] = [];
  for (const block of blocks as { type?: string; elements?: Record<string, unknown>[] }[]) {
    if (block.type !== 'actions') continue;
    for (const element of block.elements ?? []) {
      if (element.type !== 'button') continue;
      const text = (element.text as { text?: string } | undefined)?.text ?? '';
      buttons.push({ text, value: String(element.value ?? ''), action_id: String(element.action_id ?? '') });
    }
  }
  return buttons;
}

/** As Slack escapes message text. */
function escapeSlack(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

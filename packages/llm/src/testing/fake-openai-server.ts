import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { z } from 'zod';

/**
 * One scripted answer of the {@link FakeOpenAiServer}. Every variant may wait `delayMs` milliseconds before it is
 * sent, so tests can abort a request that is still in flight.
 */
export type FakeReply =
  | ({
      /** The assistant's message content. */
      text: string;
      /** Token counts to report. @default about one token per four characters of the request and the reply */
      usage?: { prompt: number; completion: number };
      /** Wait this long before answering. @default 0 */
      delayMs?: number;
    } & StreamingShape)
  | ({
      /**
       * The tool calls the assistant asks for. An object `arguments` is sent as its JSON text; a string is sent as
       * is, so a test can script arguments that are not valid JSON.
       */
      toolCalls: { name: string; arguments: unknown; id?: string }[];
      /** Content sent alongside the tool calls. @default null content */
      text?: string;
      /** Wait this long before answering. @default 0 */
      delayMs?: number;
    } & StreamingShape)
  | ({
      /** A value whose JSON text becomes the message content, for structured-output tests. */
      json: unknown;
      /** Wait this long before answering. @default 0 */
      delayMs?: number;
    } & StreamingShape)
  | {
      /**
       * An HTTP error: `status` 429 with `retryAfterSeconds` sends a `retry-after` header; the body is the OpenAI
       * error shape `{error: {message, type}}`.
       */
      error: { status: number; message?: string; retryAfterSeconds?: number };
      /** Wait this long before answering. @default 0 */
      delayMs?: number;
    }
  | {
      /** HTTP 200 with a body that is not JSON (or, when streaming, an event whose data is not JSON). */
      malformed: true;
      /** Wait this long before answering. @default 0 */
      delayMs?: number;
    };

/** How a reply with content or tool calls is streamed, when the request asks for a stream. */
interface StreamingShape {
  /**
   * Wait this long between the chunks of a streamed reply, so a test or bench sees tokens arrive over time.
   * Ignored for a reply that is not streamed. @default 0
   */
  chunkDelayMs?: number;
  /**
   * Cut the connection after sending this many chunks of a streamed reply (the first carries the role and the first
   * word),
   * to script a stream that breaks mid-way. Ignored for a reply that is not streamed.
   */
  breakAfterChunks?: number;
}

/** A chat completion request as the fake server received it. */
export interface FakeChatRequest {
  /** The parsed JSON body. */
  body: Record<string, unknown>;
  /** The request headers; repeated headers are joined with `, `. */
  headers: Record<string, string | undefined>;
  /** When it arrived, in milliseconds since the epoch. */
  receivedAt: number;
}

export interface FakeOpenAiServerOptions {
  /**
   * Replies in order, one per chat request. When they run out, the server answers 500 "no scripted reply left"
   * (and still records the request), so a test that makes one call too many fails loudly.
   * @default []
   */
  replies?: FakeReply[];
  /**
   * Compute each reply from the request and its zero-based index among chat requests. Takes precedence over
   * `replies` when given.
   */
  respond?: (request: FakeChatRequest, index: number) => FakeReply | Promise<FakeReply>;
  /**
   * The model ids `GET /models` lists.
   * @default ['fake-model']
   */
  models?: string[];
  /**
   * Every chat request takes this long to be served before its reply, on top of any reply's own `delayMs`, as a
   * model takes time to answer. The time counts once the request is being served (see `concurrency`).
   * @default 0
   */
  latencyMs?: number;
  /**
   * At most this many chat requests are served at once; further ones wait, first come first served, until one
   * finishes, as a local model server (Ollama, llama.cpp, vLLM) queues what it cannot run in parallel. A client that
   * goes away while waiting leaves the queue.
   * @default unlimited
   */
  concurrency?: number;
}

// The body is outside data even in a test tool: anything but a JSON object is a 400, like a real endpoint.
const chatBodySchema = z.record(z.string(), z.unknown());
const streamOptionsSchema = z.looseObject({ include_usage: z.boolean().optional() });

interface CompletionParts {
  content: string | null;
  toolCalls: { id: string; name: string; arguments: string }[];
  finishReason: 'stop' | 'tool_calls';
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/**
 * A fake OpenAI-compatible chat endpoint on loopback, for tests only (never a product default): scripted or computed
 * replies, streaming and non-streaming, HTTP errors, malformed bodies and slow answers, with every request recorded.
 *
 * @example
 * await using server = await FakeOpenAiServer.start({ replies: [{ text: 'hello' }] });
 * const client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 });
 */
export class FakeOpenAiServer {
  /** The base URL to configure a client with, e.g. `http://127.0.0.1:43123/v1`. */
  readonly url: string;
  /** Every chat request, in the order received, including those answered with an error. */
  readonly requests: FakeChatRequest[] = [];
  /**
   * One entry per chat request that began to be served (after waiting for a `concurrency` slot), in the order
   * served: `index` among `requests`, `startedAt` and, once its reply is sent or it is given up, `endedAt`, in
   * milliseconds since the epoch. {@link FakeOpenAiServer.busyMs} computes the model's busy time from it.
   */
  get served(): readonly Readonly<{ index: number; startedAt: number; endedAt?: number }>[] {
    return this.#served;
  }

  readonly #app: FastifyInstance;
  readonly #replies: FakeReply[];
  readonly #respond: FakeOpenAiServerOptions['respond'];
  readonly #served: { index: number; startedAt: number; endedAt?: number }[] = [];
  readonly #latencyMs: number;
  readonly #concurrency: number;
  // Requests waiting for a slot, first come first served; each is woken with its slot or told to give up.
  readonly #waiting: { admit: () => void }[] = [];
  #inFlight = 0;
  #peakInFlight = 0;
  // Chat requests received and not yet answered: waiting for a slot or being served.
  #open = 0;
  #peakOpen = 0;
  // Per response being prepared: counts its request as answered. Called as the reply is handed to the socket (the
  // `onSend` hook), not once it has drained: a client in the same process may read the answer and send its next
  // request before the server hears that the write completed, and that request is no more open than this one.
  readonly #onAnswer = new WeakMap<object, () => void>();
  // While set, every chat request is answered with this error at once (no latency, no slot).
  #outage: { status: number; message?: string; retryAfterSeconds?: number } | undefined;
  readonly #sockets = new Set<Socket>();
  readonly #delivered = new Set<number>();
  #port = 0;
  #down = false;
  // Aborted by close(), so replies still waiting out their delay give up instead of holding the server open.
  readonly #closing = new AbortController();
  #closed: Promise<void> | undefined;

  private constructor(app: FastifyInstance, url: string, options: FakeOpenAiServerOptions) {
    this.#app = app;
    this.url = url;
    this.#replies = [...(options.replies ?? [])];
    this.#respond = options.respond;
    this.#latencyMs = options.latencyMs ?? 0;
    this.#concurrency = options.concurrency ?? Number.POSITIVE_INFINITY;
  }

  /** How many chat requests are being served now (not counting those waiting for a slot). */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** The most chat requests ever served at once. */
  get peakInFlight(): number {
    return this.#peakInFlight;
  }

  /**
   * The most chat requests ever open at once: received and not yet answered, whether served or waiting for a slot.
   * What a client keeps in flight, as opposed to {@link peakInFlight}, which the server's `concurrency` caps.
   */
  get peakOpenRequests(): number {
    return this.#peakOpen;
  }

  /**
   * The indexes (among {@link requests}) of the chat requests whose successful reply was sent in full. A request cut
   * off by {@link refuseConnections} or by the client was computed but never delivered: it is not here.
   */
  get delivered(): ReadonlySet<number> {
    return this.#delivered;
  }

  /**
   * Until {@link recover}, answer every chat request at once with this HTTP error: `{status: 429,
   * retryAfterSeconds: 10}` for an overloaded model, 503 for one reloading.
   */
  failWith(error: { status: number; message?: string; retryAfterSeconds?: number }): void {
    this.#outage = { ...error };
  }

  /**
   * Stop listening and cut every open connection, so new requests get "connection refused" (the model server is
   * down, the laptop asleep) until {@link recover} listens again on the same port.
   */
  async refuseConnections(): Promise<void> {
    if (this.#down) return;
    this.#down = true;
    const server = this.#app.server;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  /** Ends {@link failWith} and {@link refuseConnections}: requests are answered normally again. */
  async recover(): Promise<void> {
    this.#outage = undefined;
    if (!this.#down) return;
    const server = this.#app.server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: this.#port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.#down = false;
  }

  /** How many chat requests are waiting for a slot now. */
  get queued(): number {
    return this.#waiting.length;
  }

  /**
   * The total milliseconds during which at least `level` requests were being served, within `[fromMs, toMs]`
   * (epoch milliseconds; default from the first served request until now). With `level` equal to `concurrency`, this
   * over the elapsed time is the fraction of time the model was fully busy.
   */
  busyMs(level: number, window: { fromMs?: number; toMs?: number } = {}): number {
    const now = Date.now();
    const fromMs = window.fromMs ?? this.served[0]?.startedAt ?? now;
    const toMs = window.toMs ?? now;
    // A sweep over starts (+1) and ends (-1); an end sorts before a start at the same instant, so back-to-back
    // requests on one slot do not count as two at once.
    const events: [number, number][] = [];
    for (const entry of this.served) {
      events.push([entry.startedAt, 1], [entry.endedAt ?? now, -1]);
    }
    events.sort((left, right) => left[0] - right[0] || left[1] - right[1]);
    let busy = 0;
    let depth = 0;
    let previous = fromMs;
    for (const [at, change] of events) {
      const clamped = Math.min(Math.max(at, fromMs), toMs);
      if (depth >= level) busy += clamped - previous;
      previous = clamped;
      depth += change;
    }
    if (depth >= level) busy += toMs - previous;
    return busy;
  }

  /** Start a server on 127.0.0.1 on a free port. */
  static async start(options: FakeOpenAiServerOptions = {}): Promise<FakeOpenAiServer> {
    // Checked before listening, so a wrong option leaves no server behind.
    if (options.latencyMs !== undefined && !(options.latencyMs >= 0)) {
      throw new Error(`Expected latencyMs to be 0 or more, got ${options.latencyMs}.`);
    }
    if (options.concurrency !== undefined && !(options.concurrency >= 1)) {
      throw new Error(`Expected concurrency to be 1 or more, got ${options.concurrency}.`);
    }
    const models = options.models ?? ['fake-model'];
    // Closing must not wait for a client that keeps a connection open, so force connections shut.
    const app = Fastify({ logger: false, forceCloseConnections: true, bodyLimit: 64 * 1024 * 1024 });
    let server: FakeOpenAiServer | undefined;
    app.get('/v1/models', async () => ({
      object: 'list',
      data: models.map((id) => ({ id, object: 'model', created: 0, owned_by: 'fake' })),
    }));
    app.addHook('onSend', async (_request, reply, payload) => {
      if (server !== undefined) server.#onAnswer.get(reply.raw)?.();
      return payload;
    });
    app.post('/v1/chat/completions', async (request, reply) => {
      if (server === undefined) throw new Error('The fake server answered before it finished starting.');
      return server.#handleChat(request.body, request.headers, reply);
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') {
      await app.close();
      throw new Error(`The fake OpenAI server expected a TCP address, got ${String(address)}.`);
    }
    server = new FakeOpenAiServer(app, `http://127.0.0.1:${address.port}/v1`, options);
    server.#port = address.port;
    const sockets = server.#sockets;
    app.server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    });
    return server;
  }

  /** Append scripted replies, answered after those already queued. */
  reply(...replies: FakeReply[]): void {
    this.#replies.push(...replies);
  }

  /** Stop the server. Idempotent: later calls return the first call's promise. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort();
      // Listening again first, so Fastify's close finds the server it expects.
      if (this.#down) await this.recover().catch(() => {});
      await this.#app.close();
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  async #handleChat(
    rawBody: unknown,
    rawHeaders: Record<string, string | string[] | undefined>,
    reply: FastifyReply,
  ): Promise<unknown> {
    const parsed = chatBodySchema.safeParse(rawBody);
    if (!parsed.success) {
      return reply.code(400).send(errorBody('Expected a JSON object body.', 'invalid_request_error'));
    }
    const request: FakeChatRequest = { body: parsed.data, headers: flattenHeaders(rawHeaders), receivedAt: Date.now() };
    const index = this.requests.length;
    this.requests.push(request);

    if (this.#outage !== undefined) {
      const { status, message, retryAfterSeconds } = this.#outage;
      if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
      return reply.code(status).send(errorBody(message ?? `the model is unavailable (${status})`, errorType(status)));
    }
    this.#open++;
    this.#peakOpen = Math.max(this.#peakOpen, this.#open);
    let open = true;
    const answered = (): void => {
      if (!open) return;
      open = false;
      this.#open--;
    };
    this.#onAnswer.set(reply.raw, answered);
    reply.raw.once('finish', () => {
      if (reply.raw.statusCode < 400) this.#delivered.add(index);
    });
    const disconnected = new AbortController();
    const onClose = (): void => {
      // 'close' also fires after a response is sent; only a close before that means the client went away.
      if (!reply.raw.writableFinished) disconnected.abort();
    };
    reply.raw.once('close', onClose);
    const gone = AbortSignal.any([disconnected.signal, this.#closing.signal]);
    let entry: { index: number; startedAt: number; endedAt?: number } | undefined;
    try {
      await this.#takeSlot(gone);
      entry = { index, startedAt: Date.now() };
      this.#served.push(entry);
      return await this.#serve(request, index, reply, gone);
    } catch (error) {
      if (!gone.aborted) throw error;
      // The client disconnected or the server is closing while the request waited: nobody is listening, so stop
      // without an error. Hijacking tells Fastify the response is handled so it does not try to send one.
      reply.hijack();
      reply.raw.destroy();
      return undefined;
    } finally {
      answered();
      reply.raw.off('close', onClose);
      if (entry !== undefined) {
        entry.endedAt = Date.now();
        this.#releaseSlot();
      }
    }
  }

  // Resolves once this request may be served; rejects, leaving the queue, when `signal` aborts first.
  async #takeSlot(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.#inFlight >= this.#concurrency) {
      await new Promise<void>((resolve, reject) => {
        const waiter = {
          admit: () => {
            signal.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        const onAbort = (): void => {
          const position = this.#waiting.indexOf(waiter);
          if (position >= 0) this.#waiting.splice(position, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        this.#waiting.push(waiter);
      });
    }
    // A released slot passes straight to the next waiter, so the count is taken here, not by the releaser.
    this.#inFlight++;
    this.#peakInFlight = Math.max(this.#peakInFlight, this.#inFlight);
  }

  #releaseSlot(): void {
    this.#inFlight--;
    this.#waiting.shift()?.admit();
  }

  async #serve(request: FakeChatRequest, index: number, reply: FastifyReply, gone: AbortSignal): Promise<unknown> {
    let scripted: FakeReply | undefined;
    try {
      scripted = this.#respond === undefined ? this.#replies.shift() : await this.#respond(request, index);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return reply.code(500).send(errorBody(`respond() threw: ${message}`, 'server_error'));
    }
    if (scripted === undefined) {
      return reply.code(500).send(errorBody('no scripted reply left', 'server_error'));
    }

    // A rejection (the client went away, the server is closing) is handled by the caller.
    const waitMs = this.#latencyMs + (scripted.delayMs ?? 0);
    if (waitMs > 0) await delay(waitMs, undefined, { signal: gone });

    if ('error' in scripted) {
      const { status, message, retryAfterSeconds } = scripted.error;
      if (retryAfterSeconds !== undefined) reply.header('retry-after', String(retryAfterSeconds));
      return reply.code(status).send(errorBody(message ?? `fake error ${status}`, errorType(status)));
    }

    const streaming = request.body.stream === true;
    if ('malformed' in scripted) {
      return streaming
        ? reply.type('text/event-stream').send('data: {this is not json\n\n')
        : reply.type('application/json').send('{"id": "chatcmpl-malformed", this is not json');
    }

    const model = typeof request.body.model === 'string' ? request.body.model : 'fake-model';
    const parts = completionParts(scripted, request.body, index);
    const id = `chatcmpl-fake-${index}`;
    const created = Math.floor(request.receivedAt / 1000);
    if (!streaming) {
      return reply.type('application/json').send(completionObject(parts, { id, created, model }));
    }
    const streamOptions = streamOptionsSchema.safeParse(request.body.stream_options);
    const includeUsage = streamOptions.success && streamOptions.data.include_usage === true;
    const events = serverSentEvents(parts, { id, created, model, includeUsage });
    const chunkDelayMs = scripted.chunkDelayMs ?? 0;
    if (chunkDelayMs <= 0 && scripted.breakAfterChunks === undefined) {
      return reply.type('text/event-stream').header('cache-control', 'no-cache').send(events.join(''));
    }
    // Written by hand, chunk by chunk, so the client sees each one arrive (and the break, when scripted).
    reply.hijack();
    await this.#writeSlowly(reply, events, chunkDelayMs, scripted.breakAfterChunks);
    return undefined;
  }

  async #writeSlowly(
    reply: FastifyReply,
    events: string[],
    chunkDelayMs: number,
    breakAfterChunks: number | undefined,
  ): Promise<void> {
    const raw = reply.raw;
    const disconnected = new AbortController();
    const onClose = (): void => {
      if (!raw.writableFinished) disconnected.abort();
    };
    raw.once('close', onClose);
    const signal = AbortSignal.any([disconnected.signal, this.#closing.signal]);
    try {
      raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const [position, event] of events.entries()) {
        if (breakAfterChunks !== undefined && position >= breakAfterChunks) {
          raw.destroy();
          return;
        }
        if (position > 0 && chunkDelayMs > 0) await delay(chunkDelayMs, undefined, { signal });
        // Wait until the chunk is handed to the socket, so a break after it does not discard it.
        await new Promise<void>((resolve, reject) => raw.write(event, (error) => (error ? reject(error) : resolve())));
      }
      raw.end();
    } catch {
      // The client went away or the server is closing: nobody is listening.
      raw.destroy();
    } finally {
      raw.off('close', onClose);
    }
  }
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | undefined> {
  const flat: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

function errorBody(message: string, type: string): { error: { message: string; type: string } } {
  return { error: { message, type } };
}

function errorType(status: number): string {
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

// A rough token count, about four characters a token, good enough for usage bookkeeping in tests.
function roughTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

function completionParts(
  reply: Exclude<FakeReply, { error: unknown } | { malformed: true }>,
  body: Record<string, unknown>,
  index: number,
): CompletionParts {
  let content: string | null;
  let toolCalls: CompletionParts['toolCalls'] = [];
  let explicitUsage: { prompt: number; completion: number } | undefined;
  if ('toolCalls' in reply) {
    content = reply.text ?? null;
    toolCalls = reply.toolCalls.map((call, callIndex) => ({
      id: call.id ?? `call_fake_${index}_${callIndex}`,
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    }));
  } else if ('json' in reply) {
    content = JSON.stringify(reply.json);
  } else {
    content = reply.text;
    explicitUsage = reply.usage;
  }
  const prompt = explicitUsage?.prompt ?? roughTokens(JSON.stringify(body.messages ?? []));
  const completion =
    explicitUsage?.completion ??
    roughTokens((content ?? '') + toolCalls.map((call) => call.name + call.arguments).join(''));
  return {
    content,
    toolCalls,
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

interface CompletionIdentity {
  id: string;
  created: number;
  model: string;
}

function completionObject(parts: CompletionParts, identity: CompletionIdentity): Record<string, unknown> {
  const message: Record<string, unknown> = { role: 'assistant', content: parts.content };
  if (parts.toolCalls.length > 0) {
    message.tool_calls = parts.toolCalls.map((call) => ({
      id: call.id,
      type: 'function',
      function: { name: call.name, arguments: call.arguments },
    }));
  }
  return {
    id: identity.id,
    object: 'chat.completion',
    created: identity.created,
    model: identity.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: parts.finishReason }],
    usage: parts.usage,
  };
}

// Split into a few pieces by code point, so a streaming client has to join deltas and never sees half a character.
function splitIntoPieces(text: string, count = 3): string[] {
  const characters = Array.from(text);
  if (characters.length === 0) return [];
  const size = Math.ceil(characters.length / count);
  const pieces: string[] = [];
  for (let start = 0; start < characters.length; start += size) {
    pieces.push(characters.slice(start, start + size).join(''));
  }
  return pieces;
}

// Content goes out a word at a time (each with the whitespace after it), as a model streams tokens.
function splitIntoWords(text: string): string[] {
  if (text === '') return [];
  return text.match(/\s*\S+\s*/g) ?? [text];
}

/** The server-sent events of a streamed reply, one `data:` event a string, `[DONE]` last. */
function serverSentEvents(parts: CompletionParts, identity: CompletionIdentity & { includeUsage: boolean }): string[] {
  const events: string[] = [];
  const chunk = (delta: Record<string, unknown>, finishReason: string | null): void => {
    const value: Record<string, unknown> = {
      id: identity.id,
      object: 'chat.completion.chunk',
      created: identity.created,
      model: identity.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    };
    // OpenAI sends `usage: null` on every chunk but the last when usage was asked for.
    if (identity.includeUsage) value.usage = null;
    events.push(JSON.stringify(value));
  };

  // The first chunk carries the role and the first word (as Ollama and llama.cpp send it), so a test that waits
  // for the first word does not also wait out a `chunkDelayMs`.
  const [first, ...rest] = splitIntoWords(parts.content ?? '');
  chunk({ role: 'assistant', content: first ?? (parts.content === null ? null : '') }, null);
  for (const piece of rest) chunk({ content: piece }, null);
  parts.toolCalls.forEach((call, callIndex) => {
    chunk(
      {
        tool_calls: [{ index: callIndex, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }],
      },
      null,
    );
    for (const piece of splitIntoPieces(call.arguments)) {
      chunk({ tool_calls: [{ index: callIndex, function: { arguments: piece } }] }, null);
    }
  });
  chunk({}, parts.finishReason);
  if (identity.includeUsage) {
    events.push(
      JSON.stringify({
        id: identity.id,
        object: 'chat.completion.chunk',
        created: identity.created,
        model: identity.model,
        choices: [],
        usage: parts.usage,
      }),
    );
  }
  events.push('[DONE]');
  return events.map((event) => `data: ${event}\n\n`);
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';

/**
 * What every scripted answer of a provider fake ({@link FakeAnthropicServer}, {@link FakeGeminiServer}) may say about
 * its timing and how its stream ends.
 */
export interface FakeReplyTiming {
  /** Wait this long before the first byte of the answer, so a test can abort a request in flight. @default 0 */
  delayMs?: number;
  /** Wait this long between two events of a streamed answer. Ignored when not streaming. @default 0 */
  chunkDelayMs?: number;
  /**
   * Cut the connection after this many server-sent events (counting every event the provider sends, `ping`
   * included), to script a stream that breaks mid-way. Ignored when not streaming.
   */
  cutAfterEvents?: number;
}

/**
 * One scripted answer of a provider fake, in the shape adapter tests want; each fake turns it into its provider's
 * wire format, streamed or not as the request asks.
 */
/** An HTTP error a fake answers with, in its provider's shape unless `body` is given. */
export interface FakeErrorSpec {
  status: number;
  /** The error message inside the provider's error body. @default the provider's usual message for `status` */
  message?: string;
  /** The whole body, sent as JSON (a string byte for byte), instead of the provider's error body. */
  body?: unknown;
  /** Headers sent as given. */
  headers?: Record<string, string>;
  /** Anthropic: a `retry-after` header (always sent on 429, 1 s when not given); Gemini: a `RetryInfo` detail. */
  retryAfterSeconds?: number;
}

export type FakeProviderReply =
  | (FakeReplyTiming & {
      /** The assistant's text. */
      text?: string;
      /**
       * Tool calls the model asks for. An object `arguments` is sent as the provider sends JSON; a string is sent as
       * is (in pieces when streaming), so a test can script arguments that are not valid JSON. `id` is Anthropic's
       * `tool_use` id (default `toolu_fake_<request>_<n>`); `signature` is Gemini's `thoughtSignature` on that call.
       */
      toolCalls?: { name: string; arguments: unknown; id?: string; signature?: string }[];
      /**
       * A reasoning block sent before the text: Anthropic `thinking` with its `signature` (streamed as
       * `thinking_delta` then `signature_delta`), Gemini a `thought: true` part whose `thoughtSignature` goes on the
       * first function call, or else on the first text part (as Gemini 3 does).
       */
      thinking?: { text: string; signature: string };
      /** Anthropic only: a `redacted_thinking` block with this opaque `data`, sent before any thinking. */
      redactedThinking?: string;
      /** Token counts to report instead of the rough ones computed from the request and the answer. */
      usage?: FakeUsage;
      /** The provider's raw stop reason (`end_turn`, `max_tokens`; Gemini `MAX_TOKENS`, `SAFETY`). */
      stopReason?: string;
      /**
       * Make the tool calls' arguments invalid JSON: a streamed `input_json_delta` (Anthropic) that stops half-way, or
       * arguments sent as a truncated string instead of an object.
       */
      malformedToolJson?: boolean;
      /**
       * Send the provider's mid-stream error event after this many events of the answer (default: right after the
       * first), then end the stream: Anthropic `event: error` with `{type: 'error', error: {type, message}}`, Gemini a
       * `data:` chunk with `{error: {code, message, status}}`. Ignored when not streaming.
       */
      streamError?: { type?: string; message?: string; afterEvents?: number };
    })
  | {
      /**
       * An HTTP error. Without `body`, the provider's own error body for `status` is sent (Anthropic: 529
       * `overloaded_error`, 429 `rate_limit_error`, 500 `api_error`…; Gemini: 429 `RESOURCE_EXHAUSTED`, 503
       * `UNAVAILABLE`…). `retryAfterSeconds` sends a `retry-after` header (Anthropic) or a `RetryInfo` detail
       * (Gemini); `headers` are sent as given.
       */
      error: FakeErrorSpec;
      delayMs?: number;
    }
  | (FakeReplyTiming & {
      /**
       * Raw server-sent event text, written exactly as given, one string a write (so `chunkDelayMs` and
       * `cutAfterEvents` count these strings). For byte-level tests: a split event, a missing blank line.
       */
      chunks: string[];
      /** @default 200 */
      status?: number;
      headers?: Record<string, string>;
    })
  | (FakeReplyTiming & {
      /**
       * A captured stream replayed event by event: each object is sent as its provider sends an event (Anthropic
       * `event: <type>\ndata: <json>\n\n`, Gemini `data: <json>\r\n\r\n`); a string is the event's data text, sent
       * byte for byte. Served whether or not the request asked for a stream.
       */
      rawEvents: (object | string)[];
    })
  | {
      /** A captured non-streaming body, sent as JSON (a string is sent byte for byte). */
      rawBody: object | string;
      /** @default 200 */
      status?: number;
      headers?: Record<string, string>;
      delayMs?: number;
    };

/** Token counts a reply reports; what is not given is computed roughly. */
export interface FakeUsage {
  /** Prompt tokens not read from the cache (Anthropic `input_tokens`; Gemini adds the cached ones to its total). */
  input?: number;
  /** Output tokens (Anthropic `output_tokens`, Gemini `candidatesTokenCount`). */
  output?: number;
  /** Prompt tokens read from the cache (`cache_read_input_tokens`, `cachedContentTokenCount`). @default 0 */
  cacheRead?: number;
  /** Anthropic: prompt tokens written to the cache (`cache_creation_input_tokens`). @default 0 */
  cacheWrite?: number;
  /** Gemini: thinking tokens (`thoughtsTokenCount`). @default 0 */
  thoughts?: number;
}

/** A request as a provider fake received it. */
export interface FakeProviderRequest {
  method: string;
  /** The path without the query, e.g. `/v1/messages` or `/v1beta/models/gemini-2.5-flash:streamGenerateContent`. */
  path: string;
  /** The query parameters (a repeated one keeps its last value). */
  query: Record<string, string>;
  /** The request headers, lower-case names; repeated headers are joined with `, `. */
  headers: Record<string, string | undefined>;
  /** The parsed JSON body, or `undefined` for a body that is empty or not JSON. */
  body: Record<string, unknown> | undefined;
  /** When it arrived, in milliseconds since the epoch. */
  receivedAt: number;
  /**
   * Set when the fake refused the request the way the provider would (bad key, invalid history…): the status and
   * the error message sent. A refused request consumes no scripted reply.
   */
  rejected?: { status: number; message: string };
}

export interface FakeProviderServerOptions {
  /** Replies in order, one per generation request. When they run out, the provider's 500 error is sent. */
  replies?: FakeProviderReply[];
  /** Compute each reply from the request and its index among generation requests; takes precedence over `replies`. */
  respond?: (request: FakeProviderRequest, index: number) => FakeProviderReply | Promise<FakeProviderReply>;
  /** The only API key accepted. @default any non-empty key */
  apiKey?: string;
  /**
   * The model ids the provider knows: the model lookup answers 404 for others, and so does generation. @default any
   */
  models?: string[];
  /**
   * Refuse a prompt longer than this many tokens (counted roughly, four characters a token) with the provider's
   * "too long" error. @default no limit
   */
  maxInputTokens?: number;
}

/** What a subclass answers for one request. */
export type FakeAnswer =
  | { kind: 'json'; status: number; body: unknown; headers?: Record<string, string> }
  | { kind: 'text'; status: number; text: string; contentType: string; headers?: Record<string, string> }
  | { kind: 'stream'; events: string[]; timing: FakeReplyTiming; status?: number; headers?: Record<string, string> };

/**
 * The HTTP side shared by the provider fakes: a real server on 127.0.0.1 on a free port, every request recorded,
 * scripted replies consumed in order, streams written event by event with optional delays and a cut connection.
 */
export abstract class FakeProviderServer {
  /** The server's origin, e.g. `http://127.0.0.1:43123`; each fake documents the base URL its clients take. */
  readonly origin: string;
  /** Every request, in the order received, including those refused. */
  readonly requests: FakeProviderRequest[] = [];

  readonly #server: Server;
  readonly #replies: FakeProviderReply[];
  readonly #respond: FakeProviderServerOptions['respond'];
  readonly #sockets = new Set<Socket>();
  readonly #closing = new AbortController();
  // Aborted when the request's client goes away or the server closes, so a scripted delay gives up.
  readonly #gone = new WeakMap<FakeProviderRequest, AbortSignal>();
  #generations = 0;
  #closed: Promise<void> | undefined;
  // While set, every generation request is answered with this error at once, consuming no reply.
  #outage: FakeErrorSpec | undefined;
  #port = 0;
  #down = false;
  protected readonly options: FakeProviderServerOptions;

  protected constructor(server: Server, origin: string, options: FakeProviderServerOptions) {
    this.#server = server;
    this.origin = origin;
    this.options = options;
    this.#replies = [...(options.replies ?? [])];
    this.#respond = options.respond;
    server.on('connection', (socket: Socket) => {
      this.#sockets.add(socket);
      socket.once('close', () => this.#sockets.delete(socket));
    });
  }

  /** Listen on 127.0.0.1 on a free port and build the fake with its origin. */
  protected static async listen<T extends FakeProviderServer>(
    build: (server: Server, origin: string) => T,
  ): Promise<T> {
    let fake: T | undefined;
    const server = createServer((request, response) => {
      if (fake === undefined) {
        response.writeHead(503).end();
        return;
      }
      void fake.#handle(request, response);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: 0 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    if (address === null || typeof address === 'string') {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      throw new Error(`The fake provider server expected a TCP address, got ${String(address)}.`);
    }
    fake = build(server, `http://127.0.0.1:${address.port}`);
    fake.#port = address.port;
    return fake;
  }

  /** Append scripted replies, answered after those already queued. */
  reply(...replies: FakeProviderReply[]): void {
    this.#replies.push(...replies);
  }

  /** How many scripted replies are still queued (not counting `respond`). */
  get pendingReplies(): number {
    return this.#replies.length;
  }

  /**
   * Until {@link recover}, answer every generation request at once with this error (an outage: `{status: 529}` for
   * an overloaded Anthropic, `{status: 503}` for Gemini), consuming no scripted reply.
   */
  failWith(error: FakeErrorSpec): void {
    this.#outage = { ...error };
  }

  /**
   * Stop listening and cut every open connection, so requests get "connection refused" (the provider unreachable)
   * until {@link recover} listens again on the same port.
   */
  async refuseConnections(): Promise<void> {
    if (this.#down) return;
    this.#down = true;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    for (const socket of this.#sockets) socket.destroy();
    await closed;
  }

  /** Ends {@link failWith} and {@link refuseConnections}: requests are answered normally again. */
  async recover(): Promise<void> {
    this.#outage = undefined;
    if (!this.#down) return;
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen({ host: '127.0.0.1', port: this.#port }, () => {
        this.#server.off('error', reject);
        resolve();
      });
    });
    this.#down = false;
  }

  /** Stop the server, cutting open connections. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort();
      for (const socket of this.#sockets) socket.destroy();
      if (this.#down) return;
      await new Promise<void>((resolve) => this.#server.close(() => resolve()));
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Answer one request: route it, validate it, and build the answer. */
  protected abstract route(request: FakeProviderRequest): Promise<FakeAnswer> | FakeAnswer;

  /** The provider's answer for an HTTP error. */
  protected abstract errorAnswer(error: FakeErrorSpec): FakeAnswer;

  /** Whether a request asks the model for an answer (what `failWith` fails and replies answer). */
  protected abstract isGeneration(request: FakeProviderRequest): boolean;

  get generationRequests(): FakeProviderRequest[] {
    return this.requests.filter((request) => this.isGeneration(request));
  }

  /** The next scripted reply for a generation request, or `undefined` when none is left. */
  protected async nextReply(request: FakeProviderRequest): Promise<FakeProviderReply | undefined> {
    const index = this.#generations++;
    return this.#respond === undefined ? this.#replies.shift() : await this.#respond(request, index);
  }

  /** How many generation requests have taken a reply so far (the index of the next). */
  protected get generationIndex(): number {
    return this.#generations;
  }

  async #handle(raw: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of raw) chunks.push(chunk as Buffer);
    } catch {
      response.destroy();
      return;
    }
    const url = new URL(raw.url ?? '/', this.origin);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: Record<string, unknown> | undefined;
    try {
      const parsed: unknown = text === '' ? undefined : JSON.parse(text);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
        body = parsed as Record<string, unknown>;
      }
    } catch {
      body = undefined;
    }
    const request: FakeProviderRequest = {
      method: raw.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: flattenHeaders(raw.headers),
      body,
      receivedAt: Date.now(),
    };
    this.requests.push(request);
    const gone = AbortSignal.any([this.#closing.signal, clientGone(response)]);
    this.#gone.set(request, gone);
    try {
      const answer =
        this.#outage !== undefined && this.isGeneration(request)
          ? this.errorAnswer(this.#outage)
          : await this.route(request);
      await this.#send(response, answer, gone);
    } catch (error) {
      if (gone.aborted) {
        response.destroy();
        return;
      }
      const message = error instanceof Error ? error.message : String(error);
      if (!response.headersSent) {
        response.writeHead(500, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ fakeServerError: message }));
      } else {
        response.destroy();
      }
    }
  }

  /** Wait `delayMs` before answering `request`; rejects when its client goes away or the server closes. */
  protected async wait(delayMs: number | undefined, request: FakeProviderRequest): Promise<void> {
    const signal = this.#gone.get(request) ?? this.#closing.signal;
    if (delayMs !== undefined && delayMs > 0) await delay(delayMs, undefined, { signal });
  }

  async #send(response: ServerResponse, answer: FakeAnswer, gone: AbortSignal): Promise<void> {
    if (answer.kind === 'json') {
      response.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      response.end(typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body));
      return;
    }
    if (answer.kind === 'text') {
      response.writeHead(answer.status, { 'content-type': answer.contentType, ...answer.headers });
      response.end(answer.text);
      return;
    }
    const { chunkDelayMs = 0, cutAfterEvents } = answer.timing;
    response.writeHead(answer.status ?? 200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      ...answer.headers,
    });
    for (const [position, event] of answer.events.entries()) {
      if (cutAfterEvents !== undefined && position >= cutAfterEvents) {
        // Destroying the socket (not ending the response) is what a dropped connection looks like to the client.
        response.destroy();
        return;
      }
      if (position > 0 && chunkDelayMs > 0) await delay(chunkDelayMs, undefined, { signal: gone });
      // Wait until the event is handed to the socket, so a cut after it does not discard it.
      await new Promise<void>((resolve, reject) =>
        response.write(event, (error) => (error ? reject(error) : resolve())),
      );
    }
    response.end();
  }
}

// Aborts when the client closes the connection before the response is finished.
function clientGone(response: ServerResponse): AbortSignal {
  const controller = new AbortController();
  response.once('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  return controller.signal;
}

function flattenHeaders(headers: IncomingMessage['headers']): Record<string, string | undefined> {
  const flat: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(headers)) {
    flat[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}

/** A rough token count, about four characters a token, good enough for usage bookkeeping in tests. */
export function roughTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Content goes out a word at a time (each with the whitespace after it), as a model streams tokens. */
export function splitIntoWords(text: string): string[] {
  if (text === '') return [];
  return text.match(/\s*\S+\s*/g) ?? [text];
}

/** Split into a few pieces by code point, so a client has to join deltas and never sees half a character. */
export function splitIntoPieces(text: string, count = 3): string[] {
  const characters = Array.from(text);
  if (characters.length === 0) return [];
  const size = Math.ceil(characters.length / count);
  const pieces: string[] = [];
  for (let start = 0; start < characters.length; start += size) {
    pieces.push(characters.slice(start, start + size).join(''));
  }
  return pieces;
}

/** The JSON text of tool-call arguments: a string as is, anything else as JSON. */
export function argumentsText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? {});
}

/** Truncated JSON for `malformedToolJson`: the first half of the arguments, never a complete value. */
export function truncatedJson(text: string): string {
  const cut = text.slice(0, Math.max(1, Math.floor(text.length / 2)));
  return cut.endsWith('}') ? `${cut}"` : cut;
}

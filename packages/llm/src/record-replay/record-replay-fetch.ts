import path from 'node:path';
import { AssistantError, registerSecretValue, scrubSecrets, scrubSecretsDeep } from '@assistant/errors';
import type { ProviderKind } from '../chat-types.ts';
import { completionAsEvents, eventsAsCompletion, isEventStream, splitEvents } from './convert-recording.ts';
import {
  type ClosestFixture,
  closestFixture,
  type Fixture,
  type FixtureResponse,
  type FixtureSource,
  fileLabel,
  findFixture,
  fixtureKey,
  readAllFixtures,
  readLegacyRecording,
  writeFixture,
} from './fixture-files.ts';
import {
  defaultProviderOf,
  isPlainObject,
  type ModelRequest,
  recognizeModelRequest,
  sortedKeys,
  type WireFormat,
} from './wire-formats.ts';

/**
 * How the transport treats model requests:
 * - `live`: every request goes to the network, nothing is read or written. `off` is its older name, still accepted.
 * - `record`: every model request goes to the network and its answer is written, replacing an earlier recording.
 * - `replay`: nothing goes to the network, ever; a model request without a fixture throws {@link ReplayMissError},
 *   and any other request (model listings, embeddings) is refused the same way.
 * - `auto`: a recorded answer is replayed; any other request goes to the network and a model answer is recorded.
 */
export const cacheModes = ['live', 'off', 'record', 'replay', 'auto'] as const;

/** One of {@link cacheModes}. */
export type CacheMode = (typeof cacheModes)[number];

export interface RecordReplayOptions {
  /** See {@link cacheModes}. */
  mode: CacheMode;
  /**
   * The fixture root: each provider's fixtures are in `<directory>/<provider>/`, one file per exchange, created when
   * the first is written. First-version recordings (`<directory>/<key>.json`) are still read for OpenAI requests.
   */
  directory: string;
  /**
   * The provider of the profile this transport serves; it names the fixture folder and is part of every key.
   * @default by wire format: `openai-compatible` for `/chat/completions`, `anthropic` for `/messages`, `google` for
   * Gemini's `:generateContent`
   */
  provider?: ProviderKind;
  /**
   * The profile's API key, removed from everything written (with any token found in the request's `Authorization`,
   * `x-api-key`, `x-goog-api-key` headers or `?key=`, and every value `registerSecretValue` knows).
   */
  apiKey?: string;
  /**
   * Names the fixture files written: a scenario name, or a function asked at each recording (`fixtures:record` sets
   * the running scenario). @default the first words of the request's last user message
   */
  label?: string | (() => string | undefined);
  /**
   * The `source` citation written into each recorded fixture (where its response came from: a sentence, or
   * `{repository, path, commit, edited}`), or a function asked at each recording. Replay ignores it; without one, a
   * re-recording keeps the citation of the fixture it replaces.
   */
  source?: FixtureSource | (() => FixtureSource | undefined);
  /**
   * The fetch that reaches the network.
   * @default globalThis.fetch
   */
  fetch?: typeof fetch;
}

const replayMissHint =
  'To record it, run with llm_cache mode record (or auto) against a reachable endpoint, or `npm run fixtures:record`; or change the test to send the request that was recorded.';

/** Where a missed request was looked for, and what came closest. */
export interface ReplayMissDetails {
  /** The request's key; absent when the request is not a model request at all. */
  key?: string;
  provider: ProviderKind;
  model?: string;
  /** The folder that was searched. */
  directory: string;
  /** The method and URL (query removed) of a request that is not a model request. */
  request?: string;
  closest?: ClosestFixture;
}

/**
 * Thrown in `replay` mode for a request that has no fixture (code `LLM_REPLAY_MISS`), before anything reaches the
 * network. It is final: retrying cannot make a fixture appear. Through the `openai` client it arrives as the `cause`
 * of an `APIConnectionError`; the AI SDK's `postJsonToApi` rethrows it as it is. {@link findReplayMiss} finds it in
 * either.
 */
export class ReplayMissError extends AssistantError {
  /** The request key, see {@link fixtureKey}; absent for a request that is not a model request. */
  readonly key: string | undefined;
  readonly provider: ProviderKind;
  readonly model: string | undefined;
  /** The folder that was searched. */
  readonly directory: string;
  /** The fixture nearest the request (same provider, same model first, fewest differing values), if any. */
  readonly closest: ClosestFixture | undefined;

  constructor(details: ReplayMissDetails) {
    // Everything is in the message too: the openai client's wrapper and most logs show only the message.
    super('LLM_REPLAY_MISS', replayMissMessage(details), { hint: replayMissHint });
    this.key = details.key;
    this.provider = details.provider;
    this.model = details.model;
    this.directory = details.directory;
    this.closest = details.closest;
  }
}

/** The {@link ReplayMissError} in `error` or its `cause` chain, as the `openai` client and the AI SDK wrap it. */
export function findReplayMiss(error: unknown): ReplayMissError | undefined {
  const seen = new Set<unknown>();
  let current = error;
  while (current instanceof Error && !seen.has(current)) {
    if (current instanceof ReplayMissError) return current;
    seen.add(current);
    current = current.cause;
  }
  return undefined;
}

function replayMissMessage(details: ReplayMissDetails): string {
  if (details.key === undefined) {
    return `Replay mode sends nothing to the network, and ${details.request ?? 'this request'} is not a model request that could have a fixture (${details.provider}).`;
  }
  const model = details.model === undefined || details.model === '' ? '' : ` (model ${details.model})`;
  const head = `No recorded LLM response for ${details.provider} request key ${details.key}${model} in ${details.directory}.`;
  const closest = details.closest;
  let near = ' No fixture of this provider to compare with.';
  if (closest !== undefined) {
    const where = closest.difference
      ? ` differs first at ${closest.difference.path}: recorded ${excerpt(closest.difference.recorded)}, requested ${excerpt(closest.difference.requested)}`
      : ' has the same canonical request (its key was computed differently)';
    near = ` Closest fixture: ${closest.file}${closest.model === details.model ? '' : ` (model ${closest.model})`};${where}.`;
  }
  return `${head}${near} ${replayMissHint}`;
}

function excerpt(value: unknown): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > 120 ? `${text.slice(0, 117)}…` : text;
}

/** Request headers kept in a fixture: none carries a credential. */
const safeHeaders = ['content-type', 'anthropic-version', 'anthropic-beta', 'openai-beta'] as const;

/**
 * A fetch that records model answers to readable fixture files and replays them, for tests and development
 * against a model that is slow, costly, or out of reach. It recognises the model requests of every provider's wire
 * format (OpenAI `POST …/chat/completions`, Anthropic `POST …/messages`, Gemini `POST …/models/{model}:generateContent`
 * and `:streamGenerateContent`); other requests pass through in `live`, `record` and `auto` and are refused in
 * `replay`. Only successful (2xx) answers are recorded, so a rate limit or an outage met while recording is not
 * replayed forever (hand-written fixtures may hold any status).
 */
export function createRecordReplayFetch(options: RecordReplayOptions): typeof fetch {
  const underlying = options.fetch ?? globalThis.fetch;
  const mode = options.mode === 'off' ? 'live' : options.mode;
  const { directory } = options;
  if (options.apiKey !== undefined) registerSecretValue(options.apiKey);

  const recordReplayFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (mode === 'live') return underlying(input, init);
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined) ?? undefined;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const url = input instanceof Request ? input.url : String(input);
    const body = await readJsonBody(input, init);
    const request = recognizeModelRequest({ method, url, body });
    if (request === undefined) {
      if (mode !== 'replay') return underlying(input, init);
      throw new ReplayMissError({
        provider: options.provider ?? 'openai-compatible',
        directory,
        request: `${method} ${withoutQuery(url)}`,
      });
    }
    signal?.throwIfAborted();
    const provider = options.provider ?? defaultProviderOf(request.wire);
    const providerDirectory = path.join(directory, provider);
    const key = fixtureKey({ provider, canonical: request.canonical });

    if (mode === 'replay' || mode === 'auto') {
      await writesSettled();
      const stored = await findFixture({ providerDirectory, key, signal });
      if (stored !== undefined) {
        const response = withCurrentMintedValues(
          stored.fixture.response,
          stored.fixture.request.minted,
          request.minted,
        );
        return replayResponse(request.wire, response, request.streaming);
      }
      if (request.wire === 'openai') {
        const legacy = await readLegacyRecording({ directory, body });
        if (legacy !== undefined) return replayResponse('openai', legacy.response, request.streaming);
      }
      if (mode === 'replay') {
        const closest = closestFixture({
          fixtures: await readAllFixtures(providerDirectory),
          model: request.model,
          canonical: request.canonical,
        });
        throw new ReplayMissError({
          key,
          provider,
          model: request.model,
          directory: providerDirectory,
          ...(closest === undefined ? {} : { closest }),
        });
      }
    }

    const response = await underlying(input, init);
    if (!response.ok) return response;
    // Registered, the request's credentials are scrubbed in every encoding `scrubSecrets` knows.
    registerRequestSecrets(input, init, url);
    const scrub = scrubSecrets;
    const record = async (recorded: FixtureResponse): Promise<void> => {
      const source = typeof options.source === 'function' ? options.source() : options.source;
      const fixture: Fixture = {
        key,
        provider,
        model: request.model,
        recorded_at: new Date().toISOString(),
        ...(source === undefined ? {} : { source }),
        request: {
          endpoint: request.endpoint,
          stream: request.streaming,
          headers: keptHeaders(input, init),
          canonical: sortedKeys(scrubSecretsDeep(request.canonical)) as Record<string, unknown>,
          ...(Object.keys(request.minted).length === 0 ? {} : { minted: request.minted }),
        },
        response: recorded,
      };
      await writeFixture({ providerDirectory, key, label: labelOf(options.label, request), fixture });
    };
    const contentType = response.headers.get('content-type');
    // A streamed answer is kept chunk by chunk whatever its type: Gemini without `alt=sse` streams a JSON array.
    if (isEventStream(contentType) || request.streaming) {
      return recordingStream(response, async (chunks) => {
        await record({ status: response.status, content_type: contentType, chunks: scrubChunks(chunks, scrub) });
      });
    }
    // The fetch body read rejects when `signal` aborts, so an abort while reading still reaches the caller.
    const text = await response.text();
    signal?.throwIfAborted();
    const scrubbed = scrub(text);
    const json = isJson(contentType) ? parseJson(scrubbed) : undefined;
    await track(
      record({
        status: response.status,
        content_type: contentType,
        ...(json === undefined ? { body: scrubbed } : { json }),
      }),
    );
    return new Response(text, {
      status: response.status,
      statusText: response.statusText,
      headers: withoutEncodingHeaders(response.headers),
    });
  };
  return recordReplayFetch as typeof fetch;
}

// Recordings still being written, so a lookup in this process (another transport over the same directory, a replay
// right after a recording) sees a stream's fixture that its consumer stopped reading before the end was written.
const pendingWrites = new Set<Promise<void>>();

function track(write: Promise<void>): Promise<void> {
  pendingWrites.add(write);
  return write.finally(() => pendingWrites.delete(write));
}

async function writesSettled(): Promise<void> {
  await Promise.allSettled([...pendingWrites]);
}

/**
 * The caller's stream of `response`, passed on chunk by chunk as it arrives, while the chunks' text is kept; when
 * the stream ends, `onEnd` writes them before the caller sees the end. A client that stops reading once it has the
 * answer (the `openai` client cancels the body at `[DONE]`) has the rest read for it before its cancel resolves, so
 * the recording holds the whole stream; a stream that fails or is aborted is not recorded.
 */
function recordingStream(response: Response, onEnd: (chunks: string[]) => Promise<void>): Response {
  const body = response.body;
  if (body === null) return response;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const chunks: string[] = [];
  let ended: Promise<void> | undefined;
  const end = (): Promise<void> => {
    ended ??= track(
      (async () => {
        const tail = decoder.decode();
        if (tail !== '') chunks.push(tail);
        await onEnd(chunks);
      })(),
    );
    return ended;
  };
  const keep = (value: Uint8Array): void => {
    // `stream: true` holds back a character split across two chunks; it then starts the next chunk's text.
    const text = decoder.decode(value, { stream: true });
    if (text !== '') chunks.push(text);
  };
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        await end();
        controller.close();
        return;
      }
      keep(value);
      controller.enqueue(value);
    },
    async cancel() {
      if (ended !== undefined) {
        await ended;
        return;
      }
      try {
        for (let read = await reader.read(); !read.done; read = await reader.read()) keep(read.value);
      } catch {
        // Aborted or cut: a partial stream is not recorded.
        return;
      }
      await end();
    },
  });
  return new Response(stream, {
    status: response.status,
    statusText: response.statusText,
    headers: withoutEncodingHeaders(response.headers),
  });
}

/**
 * Each chunk scrubbed; when a secret straddles two chunks (so no chunk holds it whole), the chunks are scrubbed as one
 * text and kept as one chunk: a fixture that streams less finely is better than one that leaks.
 */
function scrubChunks(chunks: string[], scrub: (text: string) => string): string[] {
  const scrubbed = chunks.map(scrub);
  const joined = scrubbed.join('');
  const whole = scrub(joined);
  return whole === joined ? scrubbed : [whole];
}

/**
 * The recorded answer with the minted values of the recording replaced by this run's: a model that answered with a
 * sub-agent's id (`wait_agents {ids: ["ag-…"]}`) names the child this run spawned in its place, which the key already
 * matched by placeholder. Values have fixed lengths, so a stream keeps its chunk boundaries.
 */
export function withCurrentMintedValues(
  response: FixtureResponse,
  recorded: Record<string, string> | undefined,
  current: Record<string, string>,
): FixtureResponse {
  const pairs = Object.entries(recorded ?? {}).flatMap(([placeholder, value]) => {
    const now = current[placeholder];
    return now === undefined || now === value ? [] : [[value, now] as const];
  });
  if (pairs.length === 0) return response;
  const replace = (text: string) => pairs.reduce((changed, [value, now]) => changed.replaceAll(value, now), text);
  if (response.chunks !== undefined) {
    const original = response.chunks.join('');
    const joined = withReplacedStreamStrings(original, replace) ?? replace(original);
    const lengths = response.chunks.map((chunk) => chunk.length);
    if (joined.length !== original.length) return { ...response, chunks: [joined] };
    const chunks: string[] = [];
    let at = 0;
    for (const length of lengths) {
      chunks.push(joined.slice(at, at + length));
      at += length;
    }
    return { ...response, chunks };
  }
  if (response.body !== undefined) return { ...response, body: replace(response.body) };
  return { ...response, json: JSON.parse(replace(JSON.stringify(response.json))) as unknown };
}

/**
 * A stream of server-sent events with `replace` applied to the texts its events stream in pieces: the strings at the
 * same place of successive events (an Anthropic block's `partial_json`, an OpenAI tool call's `arguments`, told apart
 * by their `index` fields) are one text, so a value cut across two events is found. Each changed piece is written
 * back in its event, same length; undefined when the text is not a stream of JSON events.
 */
function withReplacedStreamStrings(text: string, replace: (text: string) => string): string | undefined {
  const lines = text.split('\n');
  const pieces = new Map<string, { line: number; path: (string | number)[]; value: string }[]>();
  let events = 0;
  for (const [line, content] of lines.entries()) {
    const data = /^data:\s?(.*?)\r?$/.exec(content)?.[1];
    if (data === undefined || !data.startsWith('{')) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(data);
    } catch {
      continue;
    }
    events++;
    const walk = (node: unknown, path: (string | number)[], signature: string): void => {
      if (typeof node === 'string') {
        const group = pieces.get(signature) ?? [];
        pieces.set(signature, group);
        group.push({ line, path, value: node });
      } else if (Array.isArray(node)) {
        node.forEach((item, position) => {
          const index = isPlainObject(item) && typeof item.index === 'number' ? `#${item.index}` : `[${position}]`;
          walk(item, [...path, position], `${signature}${index}`);
        });
      } else if (isPlainObject(node)) {
        for (const [name, item] of Object.entries(node)) walk(item, [...path, name], `${signature}.${name}`);
      }
    };
    walk(parsed, [], isPlainObject(parsed) && typeof parsed.index === 'number' ? `#${parsed.index}` : '');
  }
  if (events === 0) return undefined;
  const changes = new Map<number, { path: (string | number)[]; from: string; to: string }[]>();
  for (const group of pieces.values()) {
    const joined = group.map((piece) => piece.value).join('');
    const replaced = replace(joined);
    if (replaced === joined || replaced.length !== joined.length) continue;
    let at = 0;
    for (const piece of group) {
      const now = replaced.slice(at, at + piece.value.length);
      at += piece.value.length;
      if (now === piece.value) continue;
      const list = changes.get(piece.line) ?? [];
      changes.set(piece.line, list);
      list.push({ path: piece.path, from: piece.value, to: now });
    }
  }
  for (const [line, list] of changes) {
    let content = lines[line] ?? '';
    for (const change of list) {
      // The piece as JSON writes it; an id's characters need no escaping, so the event keeps its bytes elsewhere.
      const from = JSON.stringify(change.from);
      if (content.includes(from)) content = content.replace(from, JSON.stringify(change.to));
      else {
        const prefix = /^data:\s?/.exec(content)?.[0] ?? 'data: ';
        const parsed = JSON.parse(content.slice(prefix.length)) as unknown;
        setAt(parsed, change.path, change.to);
        content = `${prefix}${JSON.stringify(parsed)}`;
      }
    }
    lines[line] = content;
  }
  return lines.join('\n');
}

function setAt(node: unknown, path: (string | number)[], value: string): void {
  let current = node as Record<string | number, unknown>;
  for (const step of path.slice(0, -1)) current = current[step] as Record<string | number, unknown>;
  const last = path.at(-1);
  if (last !== undefined) current[last] = value;
}

/**
 * The recorded answer as a Response. A stream is replayed chunk by chunk, each chunk its own read. OpenAI requests
 * leave `stream` out of the key, so a completion recorded for a plain request is converted to events for a
 * streaming one and the other way round.
 */
function replayResponse(wire: WireFormat, recorded: FixtureResponse, streaming: boolean): Response {
  const { status, content_type: contentType } = recorded;
  let chunks = recorded.chunks;
  let text = recorded.chunks === undefined ? (recorded.body ?? JSON.stringify(recorded.json)) : undefined;
  let type = contentType;
  const ok = status >= 200 && status < 300;
  if (wire === 'openai' && ok) {
    if (streaming && chunks === undefined && text !== undefined && !isEventStream(contentType)) {
      const converted = completionAsEvents(text);
      if (converted !== undefined) {
        chunks = splitEvents(converted.body);
        text = undefined;
        type = converted.contentType;
      }
    } else if (!streaming && (chunks !== undefined || isEventStream(contentType))) {
      const converted = eventsAsCompletion(chunks?.join('') ?? text ?? '');
      if (converted !== undefined) {
        chunks = undefined;
        text = converted.body;
        type = converted.contentType;
      }
    }
  }
  const headers: Record<string, string> = {};
  if (type !== null) headers['content-type'] = type;
  if (chunks === undefined) return new Response(text ?? '', { status, headers });
  const encoder = new TextEncoder();
  const pending = [...chunks];
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = pending.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(encoder.encode(next));
    },
  });
  return new Response(stream, { status, headers });
}

/** The request's JSON body, or undefined when it has none, it is not JSON, or reading it would consume it. */
async function readJsonBody(input: string | URL | Request, init: RequestInit | undefined): Promise<unknown> {
  let text: string | undefined;
  if (init?.body !== undefined && init.body !== null) {
    text = bodyText(init.body);
  } else if (input instanceof Request && input.body !== null) {
    // Read a clone so the original request can still be sent with its body.
    text = await input.clone().text();
  }
  if (text === undefined) return undefined;
  return parseJson(text);
}

// Streams and form data would be consumed by reading them here, so such requests are not recognised.
function bodyText(body: NonNullable<RequestInit['body']>): string | undefined {
  if (typeof body === 'string') return body;
  if (body instanceof ArrayBuffer) return new TextDecoder().decode(body);
  if (ArrayBuffer.isView(body))
    return new TextDecoder().decode(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
  return undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isJson(contentType: string | null): boolean {
  return /^application\/([\w.+-]*\+)?json/i.test(contentType ?? '');
}

function requestHeaders(input: string | URL | Request, init: RequestInit | undefined): Headers {
  const headers = new Headers(input instanceof Request ? input.headers : undefined);
  for (const [name, value] of new Headers(init?.headers)) headers.set(name, value);
  return headers;
}

function keptHeaders(input: string | URL | Request, init: RequestInit | undefined): Record<string, string> {
  const headers = requestHeaders(input, init);
  const kept: Record<string, string> = {};
  for (const name of safeHeaders) {
    const value = headers.get(name);
    if (value !== null) kept[name] = value;
  }
  return kept;
}

/** Registers the credentials a request carries, so `scrubSecrets` removes them and their encoded forms. */
function registerRequestSecrets(input: string | URL | Request, init: RequestInit | undefined, url: string): void {
  const headers = requestHeaders(input, init);
  const secrets = new Set<string>();
  const authorization = headers.get('authorization');
  if (authorization !== null) secrets.add(authorization.replace(/^(Bearer|Basic)\s+/i, ''));
  for (const name of ['x-api-key', 'x-goog-api-key', 'api-key']) {
    const value = headers.get(name);
    if (value !== null) secrets.add(value);
  }
  try {
    const key = new URL(url).searchParams.get('key');
    if (key !== null) secrets.add(key);
  } catch {
    // Not a URL: nothing in it to take.
  }
  for (const secret of secrets) registerSecretValue(secret);
}

function labelOf(label: RecordReplayOptions['label'], request: ModelRequest): string {
  const given = typeof label === 'function' ? label() : label;
  return fileLabel(given ?? firstWords(request.canonical) ?? 'request');
}

/** The first words of the last user message of a canonical request, whatever the wire format. */
function firstWords(canonical: Record<string, unknown>): string | undefined {
  const messages = Array.isArray(canonical.messages)
    ? canonical.messages
    : Array.isArray(canonical.contents)
      ? canonical.contents
      : [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const message: unknown = messages[index];
    if (!isPlainObject(message) || message.role !== 'user') continue;
    const text = textOf(message.content ?? message.parts);
    if (text !== undefined && text.trim() !== '') return text.split(/\s+/).slice(0, 6).join(' ');
  }
  return undefined;
}

function textOf(content: unknown): string | undefined {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return undefined;
  const texts = content.flatMap((part) => (isPlainObject(part) && typeof part.text === 'string' ? [part.text] : []));
  return texts.length === 0 ? undefined : texts.join(' ');
}

function withoutQuery(url: string): string {
  const index = url.indexOf('?');
  return index === -1 ? url : url.slice(0, index);
}

// The body we hand back is already decoded, so the original encoding and length no longer describe it.
function withoutEncodingHeaders(headers: Headers): Headers {
  const copy = new Headers(headers);
  copy.delete('content-encoding');
  copy.delete('content-length');
  return copy;
}

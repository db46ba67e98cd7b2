import { createHash, randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { z } from 'zod';
import { completionAsEvents, eventsAsCompletion, isEventStream } from './convert-recording.ts';

/**
 * How the record/replay cache treats chat completion requests:
 * - `off`: every request goes to the network, nothing is read or written.
 * - `record`: every request goes to the network and its response is written, overwriting an earlier recording.
 * - `replay`: nothing goes to the network; a request without a recording throws {@link ReplayMissError}.
 * - `auto`: a recorded response is replayed; anything else goes to the network and is recorded.
 */
export const cacheModes = ['off', 'record', 'replay', 'auto'] as const;

/** One of {@link cacheModes}. */
export type CacheMode = (typeof cacheModes)[number];

export interface RecordReplayOptions {
  /** See {@link cacheModes}. */
  mode: CacheMode;
  /** Where recordings live, one `<key>.json` file per request; created when the first recording is written. */
  directory: string;
  /**
   * The fetch that reaches the network.
   * @default globalThis.fetch
   */
  fetch?: typeof fetch;
}

const replayMissHint = 'To record it, set llm cache mode to record (or auto) with a reachable endpoint and run again.';

/**
 * Thrown in `replay` mode for a chat completion request that has no recording (code `LLM_REPLAY_MISS`). Through the
 * `openai` client it arrives as the `cause` of an `APIConnectionError`, because the client wraps whatever its fetch
 * throws.
 */
export class ReplayMissError extends AssistantError {
  /** The request key, see {@link requestKey}. */
  readonly key: string;
  /** The recording file that was looked for. */
  readonly file: string;

  constructor(key: string, file: string) {
    // The hint is in the message too: the openai client's wrapper and most logs show only the message.
    super(
      'LLM_REPLAY_MISS',
      `No recorded LLM response for request key ${key}: ${file} does not exist. ${replayMissHint}`,
      {
        hint: replayMissHint,
      },
    );
    this.key = key;
    this.file = file;
  }
}

// Only the fields that decide what a model answers. The base URL, headers (with their tokens), `stream`,
// `stream_options` and sampling parameters such as `temperature` are deliberately left out, so a recording made
// against one endpoint replays against another and a streaming recording is found by the same conversation.
const keyFields = ['model', 'messages', 'tools', 'response_format'] as const;

/**
 * The cache key of a chat completion request body: the SHA-256 hex digest of the canonical JSON (object keys sorted,
 * recursively) of its `model`, `messages`, `tools` and `response_format`, leaving out those that are absent.
 * Every other field, `temperature` and `stream` included, is not part of the key.
 */
export function requestKey(body: unknown): string {
  const source = isPlainObject(body) ? body : {};
  const selected: Record<string, unknown> = {};
  for (const field of keyFields) {
    if (source[field] !== undefined) selected[field] = source[field];
  }
  return createHash('sha256').update(canonicalJson(selected)).digest('hex');
}

/**
 * A fetch that records chat completion responses to readable JSON files and replays them, for tests and
 * development against a model that is slow, costly or not there. Only POST requests with a JSON body that has
 * `messages` are cached; every other request (model listings, embeddings, …) goes straight to the underlying fetch
 * in every mode. Only successful (2xx) responses are recorded, so a rate limit or an outage met while recording is
 * not replayed forever.
 */
export function createRecordReplayFetch(options: RecordReplayOptions): typeof fetch {
  const underlying = options.fetch ?? globalThis.fetch;
  const { mode, directory } = options;

  const recordReplayFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    if (mode === 'off') return underlying(input, init);
    const chat = await readChatRequest(input, init);
    if (chat === undefined) return underlying(input, init);
    const signal = init?.signal ?? (input instanceof Request ? input.signal : undefined) ?? undefined;
    signal?.throwIfAborted();

    const key = requestKey(chat.body);
    const file = path.join(directory, `${key}.json`);
    if (mode === 'replay' || mode === 'auto') {
      const recording = await readRecording(file, signal);
      if (recording !== undefined) return replayResponse(recording, chat.body.stream === true);
      if (mode === 'replay') throw new ReplayMissError(key, file);
    }

    const response = await underlying(input, init);
    if (!response.ok) return response;
    // Reading the whole body before answering buffers a stream (while recording, its pieces reach the caller all at
    // once at the end), which tests and development can afford; the fetch body read rejects when `signal` aborts,
    // so an abort while reading still reaches the caller.
    const text = await response.text();
    signal?.throwIfAborted();
    const recording: Recording = {
      key,
      recorded_at: new Date().toISOString(),
      request: { url: chat.url, body: chat.body },
      response: { status: response.status, content_type: response.headers.get('content-type'), body: text },
    };
    await writeAtomically(file, `${JSON.stringify(recording, null, 2)}\n`);
    return new Response(text, {
      status: response.status,
      statusText: response.statusText,
      headers: withoutEncodingHeaders(response.headers),
    });
  };
  return recordReplayFetch as typeof fetch;
}

// What a recording file holds; validated on read because people edit these files by hand.
const recordingSchema = z.object({
  key: z.string(),
  recorded_at: z.string(),
  request: z.object({ url: z.string(), body: z.unknown() }),
  response: z.object({
    status: z.int().min(200).max(599),
    content_type: z.string().nullable(),
    body: z.string(),
  }),
});
type Recording = z.infer<typeof recordingSchema>;

const chatBodySchema = z.looseObject({ messages: z.array(z.unknown()) });

interface ChatRequest {
  url: string;
  body: z.infer<typeof chatBodySchema>;
}

/** The URL and parsed body of a chat completion request, or undefined for anything that is not one. */
async function readChatRequest(
  input: string | URL | Request,
  init: RequestInit | undefined,
): Promise<ChatRequest | undefined> {
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  if (method !== 'POST') return undefined;
  const url = input instanceof Request ? input.url : String(input);
  let text: string | undefined;
  if (init?.body !== undefined && init.body !== null) {
    text = bodyText(init.body);
  } else if (input instanceof Request && input.body !== null) {
    // Read a clone so the original request can still be sent with its body.
    text = await input.clone().text();
  }
  if (text === undefined) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = chatBodySchema.safeParse(json);
  return parsed.success ? { url, body: parsed.data } : undefined;
}

// Streams and form data would be consumed by reading them here, so such requests are not cached.
function bodyText(body: NonNullable<RequestInit['body']>): string | undefined {
  if (typeof body === 'string') return body;
  if (body instanceof ArrayBuffer) return new TextDecoder().decode(body);
  if (ArrayBuffer.isView(body))
    return new TextDecoder().decode(new Uint8Array(body.buffer, body.byteOffset, body.byteLength));
  return undefined;
}

async function readRecording(file: string, signal: AbortSignal | undefined): Promise<Recording | undefined> {
  let text: string;
  try {
    text = await readFile(file, signal === undefined ? { encoding: 'utf8' } : { encoding: 'utf8', signal });
  } catch (error) {
    if (isMissingFile(error)) return undefined;
    throw error;
  }
  signal?.throwIfAborted();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`LLM cache recording ${file} is not valid JSON; delete it or record again.`, { cause: error });
  }
  const parsed = recordingSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(
      `LLM cache recording ${file} does not have the expected shape; delete it or record again.\n${z.prettifyError(parsed.error)}`,
      { cause: parsed.error },
    );
  }
  return parsed.data;
}

// A recording made as a stream and replayed to a request that is not one (or the other way round) is converted,
// since `stream` is not part of the key.
function replayResponse(recording: Recording, streaming: boolean): Response {
  const { status, content_type: contentType, body } = recording.response;
  const recordedAsStream = isEventStream(contentType);
  const converted =
    streaming === recordedAsStream || status < 200 || status >= 300
      ? undefined
      : streaming
        ? completionAsEvents(body)
        : eventsAsCompletion(body);
  const headers: Record<string, string> = {};
  const type = converted?.contentType ?? contentType;
  if (type !== null) headers['content-type'] = type;
  return new Response(converted?.body ?? body, { status, headers });
}

// The body we hand back is already decoded text, so the original encoding and length no longer describe it.
function withoutEncodingHeaders(headers: Headers): Headers {
  const copy = new Headers(headers);
  copy.delete('content-encoding');
  copy.delete('content-length');
  return copy;
}

// Write to a temporary file and rename it into place, so a reader never sees half a recording and two writers of
// the same key leave one whole file.
async function writeAtomically(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomUUID()}.tmp`;
  try {
    // 0o600: a recording holds the prompt and the answer, mail and transcripts included.
    await writeFile(temporary, text, { encoding: 'utf8', mode: 0o600 });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

function isMissingFile(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// JSON with object keys sorted at every depth, so two bodies that differ only in key order get the same key.
// Undefined object values are dropped as JSON.stringify drops them.
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (isPlainObject(value)) {
    const entries = Object.keys(value)
      .filter((name) => value[name] !== undefined)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonicalJson(value[name])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

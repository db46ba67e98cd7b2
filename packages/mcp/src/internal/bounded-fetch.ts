import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { RequestId } from '@modelcontextprotocol/sdk/types.js';
import { type ResponseTooLarge, requestIdsOf, responseTooLargeMessage } from './response-too-large.ts';

const encoder = new TextEncoder();
/** The most of a refusal's body (an HTTP error status) read: it becomes an error message. */
const maxRefusalBytes = 2_000;

/**
 * A `fetch` for the SDK's streamable HTTP transport that reads at most `maxMessageBytes` of any one message. The SDK
 * reads a JSON answer whole (`response.json()`: a 400 MB answer took the worker to 1.7 GB, kept afterwards) and an
 * SSE event whole. Here a JSON body is read up to the limit, and an event stream is passed on while each event stays
 * within it. Past the limit the body is cancelled (the connection closes, the rest is never read) and the requests
 * the POST carried get, in place of their answer, an error response the client reads as MCP_RESPONSE_TOO_LARGE. A
 * stream that carried no request (the standalone GET stream) just ends with an error.
 */
export function boundedFetch(options: { maxMessageBytes: number; fetch?: FetchLike }): FetchLike {
  const limitBytes = options.maxMessageBytes;
  const fetchFunction = options.fetch ?? fetch;
  return async (url, init) => {
    const response = await fetchFunction(url, init);
    const body = response.body;
    if (body === null) return response;
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    const rebuilt = (stream: ReadableStream<Uint8Array>) =>
      new Response(stream, { status: response.status, statusText: response.statusText, headers });
    // The SDK reads a refusal's body whole into its error message (`response.text()`), which reaches the model: the
    // first part says enough. A redirect is passed on as it is: the SDK reads its `url` and `type`, which a rebuilt
    // response would lose.
    if (response.status >= 400) return rebuilt(truncated(body, Math.min(limitBytes, maxRefusalBytes)));
    if (!response.ok) return response;
    const ids = typeof init?.body === 'string' ? requestIdsOf(parseJson(init.body)) : [];
    const type = (response.headers.get('content-type') ?? '').split(';')[0]?.trim().toLowerCase();
    if (type === 'text/event-stream') return rebuilt(boundedEvents(body, { limitBytes, ids }));
    if (type !== 'application/json') return response;
    const read = await readUpTo(body, limitBytes);
    if (read.complete) return rebuilt(streamOf([read.bytes]));
    const details: ResponseTooLarge = { limitBytes, receivedBytes: read.receivedBytes, cutShort: true };
    if (ids.length === 0) return rebuilt(erroredStream(tooLargeError(details)));
    const answers = ids.map((id) => responseTooLargeMessage(id, details));
    return rebuilt(streamOf([encoder.encode(JSON.stringify(answers.length === 1 ? answers[0] : answers))]));
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function tooLargeError(details: ResponseTooLarge): Error {
  return new Error(`an MCP server's message is larger than ${details.limitBytes} bytes; reading it stopped`);
}

/** Reads a body to its end, or stops (cancelling it) once it passes `limitBytes`. */
async function readUpTo(
  body: ReadableStream<Uint8Array>,
  limitBytes: number,
): Promise<{ complete: true; bytes: Uint8Array } | { complete: false; receivedBytes: number }> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let receivedBytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { complete: true, bytes: Buffer.concat(chunks) };
      receivedBytes += value.byteLength;
      if (receivedBytes > limitBytes) {
        await reader.cancel().catch(() => {});
        return { complete: false, receivedBytes };
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
}

/** The body's first `limitBytes`, then its end (the rest is cancelled, never read). */
function truncated(source: ReadableStream<Uint8Array>, limitBytes: number): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let passedBytes = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      const room = limitBytes - passedBytes;
      passedBytes += value.byteLength;
      if (value.byteLength <= room) {
        controller.enqueue(value);
        return;
      }
      controller.enqueue(value.subarray(0, room));
      await reader.cancel().catch(() => {});
      controller.close();
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
    },
  });
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

function erroredStream(error: Error): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      controller.error(error);
    },
  });
}

const lineFeed = 0x0a;
const carriageReturn = 0x0d;

/**
 * Passes an event stream on while each event (up to its blank line) stays within `limitBytes`. Past it: the source
 * is cancelled, the event is ended (its half reaches the SDK's parser as data that is not JSON, which it reports and
 * skips), and each request the POST carried gets its error event; then the stream ends.
 */
function boundedEvents(
  source: ReadableStream<Uint8Array>,
  options: { limitBytes: number; ids: readonly RequestId[] },
): ReadableStream<Uint8Array> {
  const reader = source.getReader();
  let eventBytes = 0;
  let lineBytes = 0;
  let afterCarriageReturn = false;
  /** Counts a chunk's bytes per event; returns where the chunk passes the limit, or -1. */
  const count = (chunk: Uint8Array): number => {
    for (let index = 0; index < chunk.length; index++) {
      const byte = chunk[index];
      // A line ends at CR, LF or CRLF; an empty line ends the event.
      if (byte === lineFeed && afterCarriageReturn) {
        afterCarriageReturn = false;
        continue;
      }
      afterCarriageReturn = byte === carriageReturn;
      if (byte === lineFeed || byte === carriageReturn) {
        if (lineBytes === 0) eventBytes = 0;
        lineBytes = 0;
        continue;
      }
      lineBytes += 1;
      eventBytes += 1;
      if (eventBytes > options.limitBytes) return index;
    }
    return -1;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      const past = count(value);
      if (past === -1) {
        controller.enqueue(value);
        return;
      }
      controller.enqueue(value.subarray(0, past));
      await reader.cancel().catch(() => {});
      const details: ResponseTooLarge = { limitBytes: options.limitBytes, receivedBytes: eventBytes, cutShort: true };
      if (options.ids.length === 0) {
        controller.error(tooLargeError(details));
        return;
      }
      const events = options.ids.map(
        (id) => `event: message\ndata: ${JSON.stringify(responseTooLargeMessage(id, details))}\n\n`,
      );
      controller.enqueue(encoder.encode(`\n\n${events.join('')}`));
      controller.close();
    },
    async cancel(reason) {
      await reader.cancel(reason).catch(() => {});
    },
  });
}

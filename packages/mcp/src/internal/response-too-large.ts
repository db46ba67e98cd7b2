import { randomBytes } from 'node:crypto';
import type { JSONRPCMessage, RequestId } from '@modelcontextprotocol/sdk/types.js';

// An answer past `max_response_bytes` is dropped by the transport, which then answers the waiting request itself
// with a JSON-RPC error: the SDK's Client rejects that request (and only that one) as it would a server's error,
// with no private state of the SDK touched. The error carries this process's random nonce, so a server cannot make
// its own error pass for one (it would gain nothing but a different message; still, the code says what happened).

/** In JSON-RPC's range for implementation-defined errors. */
const responseTooLargeCode = -32_090;
const nonce = randomBytes(8).toString('hex');

/** How large the dropped answer was. */
export interface ResponseTooLarge {
  limitBytes: number;
  /** The bytes read before reading stopped (HTTP stops at the limit), or the whole answer's (stdio reads to the end of its line). */
  receivedBytes: number;
  /** Whether reading stopped at the limit, so the answer was larger still. */
  cutShort: boolean;
}

/** The error response a transport hands the client for request `id` in place of an answer too large to read. */
export function responseTooLargeMessage(id: RequestId, details: ResponseTooLarge): JSONRPCMessage {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: responseTooLargeCode,
      message: `the answer is larger than ${details.limitBytes} bytes`,
      data: { responseTooLarge: nonce, ...details },
    },
  };
}

/** The details of an error the SDK made of {@link responseTooLargeMessage}; undefined for any other error. */
export function responseTooLargeOf(error: unknown): ResponseTooLarge | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, data } = error as { code?: unknown; data?: unknown };
  if (code !== responseTooLargeCode || typeof data !== 'object' || data === null) return undefined;
  const fields = data as Record<string, unknown>;
  if (fields.responseTooLarge !== nonce) return undefined;
  const { limitBytes, receivedBytes, cutShort } = fields;
  if (typeof limitBytes !== 'number' || typeof receivedBytes !== 'number') return undefined;
  return { limitBytes, receivedBytes, cutShort: cutShort === true };
}

/** The ids of the requests in a message (or a batch) a client sends. */
export function requestIdsOf(message: unknown): RequestId[] {
  const messages = Array.isArray(message) ? message : [message];
  const ids: RequestId[] = [];
  for (const entry of messages) {
    if (typeof entry !== 'object' || entry === null) continue;
    const { id, method } = entry as { id?: unknown; method?: unknown };
    if (typeof method === 'string' && (typeof id === 'number' || typeof id === 'string')) ids.push(id);
  }
  return ids;
}

/** The id a response message answers; undefined for a request or notification. */
export function answeredIdOf(message: JSONRPCMessage): RequestId | undefined {
  if ('method' in message || !('id' in message)) return undefined;
  return message.id;
}

/**
 * Which request a dropped line answered, read from its ends: the SDK's servers write `"id"` last, others often
 * first. Undefined when neither end says (then every waiting request is failed).
 */
export function sniffResponseId(head: string, tail: string): RequestId | undefined {
  const atEnd = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")\s*\}\s*$/.exec(tail);
  const atStart = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,200}")/.exec(head);
  const written = atEnd?.[1] ?? atStart?.[1];
  if (written === undefined) return undefined;
  try {
    const id: unknown = JSON.parse(written);
    return typeof id === 'number' || typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

import { AssistantError, isErrorCode } from '@assistant/errors';
import type * as z from 'zod';
import { errorFromNoteFailure, storeErrorBodyWire } from './note-wire.ts';

/** How HttpNoteStore and HttpHumanLog reach the server. */
export interface RemoteStoreOptions {
  /** The Assistant server: `http://server.lan:8080` (a path prefix, if any, is kept). */
  serverUrl: string;
  /** The install's API token (data/api-token on the server), sent as `Authorization: Bearer`. */
  token?: string | undefined;
  /** @default the global fetch */
  fetch?: typeof fetch;
  /** A request the server has not answered within this fails, rather than holding a task forever. @default 30000 */
  timeoutMs?: number;
}

/** Sends one store request and returns its checked answer, or throws the error the file store would have thrown. */
export class RemoteStoreClient {
  readonly #base: URL;
  /** The server as errors name it: no user name or password a URL might carry, and never the token. */
  readonly #shown: string;
  readonly #token: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;

  constructor(options: RemoteStoreOptions) {
    let base: URL;
    try {
      base = new URL(options.serverUrl.endsWith('/') ? options.serverUrl : `${options.serverUrl}/`);
    } catch (error) {
      throw new AssistantError('CONFIG_INVALID', `\`${options.serverUrl}\` is not a server URL`, { cause: error });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new AssistantError(
        'CONFIG_INVALID',
        `the server URL must start with http:// or https://, got ${base.protocol}`,
      );
    }
    base.username = '';
    base.password = '';
    base.search = '';
    base.hash = '';
    this.#base = base;
    this.#shown = base.href.replace(/\/$/, '');
    this.#token = options.token;
    this.#fetch = options.fetch ?? fetch;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
  }

  async send<T>(request: {
    method: 'GET' | 'POST';
    route: string;
    query?: Record<string, string | undefined>;
    body?: unknown;
    answer: z.ZodType<T>;
  }): Promise<T> {
    const url = new URL(request.route.replace(/^\//, ''), this.#base);
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, value);
    }
    const what = `${request.method} ${request.route}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#token !== undefined) headers.authorization = `Bearer ${this.#token}`;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await this.#fetch(url, {
        method: request.method,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      const timedOut = (error as Error | undefined)?.name === 'TimeoutError';
      const reason = timedOut ? `no answer within ${this.#timeoutMs} ms` : describeNetworkError(error);
      throw new AssistantError(
        'UNAVAILABLE',
        `cannot reach the Assistant server at ${this.#shown} (${what}): ${reason}`,
        {
          hint: 'check that the server runs and that the worker was given its URL (`--server`)',
          cause: error,
        },
      );
    }
    const json = parseJson(text);
    if (!response.ok) {
      const parsed = storeErrorBodyWire.safeParse(json);
      if (parsed.success && parsed.data.error.failure) {
        throw errorFromNoteFailure(parsed.data.error.failure, parsed.data.error.message);
      }
      const code = parsed.success && isErrorCode(parsed.data.error.code) ? parsed.data.error.code : 'INTERNAL';
      const message = parsed.success ? parsed.data.error.message : `HTTP ${response.status}`;
      const hint =
        response.status === 401
          ? 'give the worker the server’s token (data/api-token on the server; `assistant token` prints it)'
          : undefined;
      throw new AssistantError(
        code,
        `the Assistant server at ${this.#shown} refused ${what} (${response.status}): ${message}`,
        hint === undefined ? {} : { hint },
      );
    }
    const parsed = request.answer.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new AssistantError(
        'INTERNAL',
        `the Assistant server at ${this.#shown} answered ${what} with something unexpected: ${issue?.path.join('.') || '(answer)'}: ${issue?.message ?? 'invalid'}`,
      );
    }
    return parsed.data;
  }
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** `connect ECONNREFUSED 127.0.0.1:8080` from undici's `fetch failed` and its cause. */
function describeNetworkError(error: unknown): string {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  const detail = cause instanceof Error ? cause.message : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return detail ? `${message}: ${detail}` : message;
}

import { scrubSecrets } from '@assistant/errors';
import { z } from 'zod';
import type { Embedder } from '../memory-types.ts';
import { EmbeddingsInvalidError, EmbeddingsUnavailableError } from './embeddings-error.ts';

export interface OpenAiEmbedderOptions {
  /** The API root, as for an LLM profile: `http://127.0.0.1:11434/v1` (Ollama), `https://api.openai.com/v1`. */
  baseUrl: string;
  /** `nomic-embed-text`, `text-embedding-3-small`, … Recorded with every vector. */
  model: string;
  /** Sent as `Authorization: Bearer …`; never written into an error or a log. */
  apiKey?: string | undefined;
  /** For one request (one batch). @default 30_000 */
  timeoutMs?: number;
  /** Texts per request. @default 64 */
  batchSize?: number;
}

const embeddingsAnswer = z.object({
  data: z.array(z.object({ index: z.number().int().nonnegative(), embedding: z.array(z.number()) })),
});

/** How much of a bad answer goes into the error: enough to see what the server said, not a whole page. */
const excerptChars = 300;

/**
 * A client of an OpenAI-compatible `POST /embeddings` (OpenAI, Ollama, llama.cpp, vLLM, LM Studio). Errors are typed:
 * `EmbeddingsUnavailableError` for an outage (no connection, a timeout, 408, 429, 5xx), which the index waits out,
 * and `EmbeddingsInvalidError` for an answer that is not embeddings (another 4xx, a malformed body, the wrong count
 * or size), which retrying is unlikely to fix. Neither error's message holds the key.
 */
export class OpenAiEmbedder implements Embedder {
  readonly model: string;
  readonly #url: string;
  /** The URL as errors show it: without any `user:password@` part. */
  readonly #shownUrl: string;
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #batchSize: number;

  constructor(options: OpenAiEmbedderOptions) {
    let base: URL;
    try {
      base = new URL(options.baseUrl);
    } catch (cause) {
      throw new TypeError(`Expected \`baseUrl\` to be an http(s) URL, got \`${options.baseUrl}\``, { cause });
    }
    if (base.protocol !== 'http:' && base.protocol !== 'https:') {
      throw new TypeError(`Expected \`baseUrl\` to be an http(s) URL, got protocol \`${base.protocol}\``);
    }
    if (options.model.trim() === '') throw new TypeError('Expected `model` to name an embeddings model, got ``');
    this.model = options.model;
    this.#url = `${options.baseUrl.replace(/\/+$/, '')}/embeddings`;
    const shown = new URL(this.#url);
    shown.username = '';
    shown.password = '';
    this.#shownUrl = shown.toString();
    this.#apiKey = options.apiKey === '' ? undefined : options.apiKey;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#batchSize = Math.max(1, options.batchSize ?? 64);
  }

  async embed(options: { texts: readonly string[]; signal?: AbortSignal }): Promise<Float32Array[]> {
    const vectors: Float32Array[] = [];
    for (let start = 0; start < options.texts.length; start += this.#batchSize) {
      const batch = options.texts.slice(start, start + this.#batchSize);
      const found = await this.#embedBatch(batch, options.signal);
      const dimensions = vectors[0]?.length ?? found[0]?.length;
      for (const vector of found) {
        if (vector.length !== dimensions) {
          throw new EmbeddingsInvalidError(
            `${this.#shownUrl} (model \`${this.model}\`) answered vectors of different sizes (${dimensions} and ${vector.length})`,
          );
        }
        vectors.push(vector);
      }
    }
    return vectors;
  }

  async #embedBatch(texts: readonly string[], signal: AbortSignal | undefined): Promise<Float32Array[]> {
    const timeout = AbortSignal.timeout(this.#timeoutMs);
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(this.#url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: this.model, input: texts }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
      text = await response.text();
    } catch (error) {
      // The caller's own abort is not an outage: it goes up as it came.
      if (signal?.aborted) throw signal.reason;
      const timedOut = timeout.aborted;
      throw new EmbeddingsUnavailableError(
        timedOut
          ? `${this.#shownUrl} did not answer within ${this.#timeoutMs} ms`
          : `${this.#shownUrl} could not be reached: ${this.#scrub(describeCause(error))}`,
        { cause: timedOut ? undefined : error },
      );
    }
    if (response.status === 408 || response.status === 429 || response.status >= 500) {
      throw new EmbeddingsUnavailableError(
        `${this.#shownUrl} answered HTTP ${response.status}: ${this.#excerpt(text)}`,
        { status: response.status },
      );
    }
    if (!response.ok) {
      throw new EmbeddingsInvalidError(
        `${this.#shownUrl} answered HTTP ${response.status} for model \`${this.model}\`: ${this.#excerpt(text)}`,
        {
          status: response.status,
          hint:
            response.status === 401 || response.status === 403
              ? 'Check `embeddings.api_key` in config.yaml / secrets.yaml.'
              : 'Check `embeddings.model` and `embeddings.base_url` in config.yaml.',
        },
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new EmbeddingsInvalidError(
        `${this.#shownUrl} answered with a body that is not JSON: ${this.#excerpt(text)}`,
        {
          status: response.status,
        },
      );
    }
    const parsed = embeddingsAnswer.safeParse(body);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new EmbeddingsInvalidError(
        `${this.#shownUrl} answered without \`{data: [{index, embedding}]}\` (${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'invalid'}): ${this.#excerpt(text)}`,
        { status: response.status },
      );
    }
    const vectors: (Float32Array | undefined)[] = new Array(texts.length);
    for (const item of parsed.data.data) {
      if (item.index >= texts.length || vectors[item.index] !== undefined) {
        throw new EmbeddingsInvalidError(
          `${this.#shownUrl} answered an embedding for index ${item.index}, but ${texts.length} texts were sent (each index once)`,
        );
      }
      if (item.embedding.length === 0 || !item.embedding.every(Number.isFinite)) {
        throw new EmbeddingsInvalidError(
          `${this.#shownUrl} answered an empty or non-finite embedding at index ${item.index}`,
        );
      }
      vectors[item.index] = normalise(Float32Array.from(item.embedding));
    }
    // Each index is in range and seen once, so the right count means every text got its vector.
    if (parsed.data.data.length !== texts.length) {
      throw new EmbeddingsInvalidError(
        `${this.#shownUrl} answered ${parsed.data.data.length} embeddings for ${texts.length} texts`,
      );
    }
    return vectors as Float32Array[];
  }

  #excerpt(text: string): string {
    const short = text.length > excerptChars ? `${text.slice(0, excerptChars)}…` : text;
    return this.#scrub(short.replace(/\s+/g, ' ').trim() || '(empty body)');
  }

  /** A server that echoes the request's headers must not put the key into an error: ours, and any registered secret. */
  #scrub(text: string): string {
    const scrubbed = scrubSecrets(text);
    return this.#apiKey === undefined || this.#apiKey.length < 4
      ? scrubbed
      : scrubbed.replaceAll(this.#apiKey, '[secret]');
  }
}

/** Cosine needs unit vectors; endpoints differ on whether they send them, so every vector is normalised here. */
function normalise(vector: Float32Array): Float32Array {
  let norm = 0;
  for (let index = 0; index < vector.length; index++) norm += (vector[index] as number) ** 2;
  if (norm === 0) return vector;
  const scale = 1 / Math.sqrt(norm);
  for (let index = 0; index < vector.length; index++) vector[index] = (vector[index] as number) * scale;
  return vector;
}

function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause as { code?: string; message?: string } | undefined;
  return cause?.code ?? cause?.message ?? error.message;
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isAssistantError } from '@assistant/errors';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddingsInvalidError, EmbeddingsUnavailableError } from './embeddings-error.ts';
import { OpenAiEmbedder } from './openai-embedder.ts';

const apiKey = 'sk-test-very-secret-key-123';

type Handler = (body: { model: string; input: string[] }, request: IncomingMessage, response: ServerResponse) => void;

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A loopback OpenAI-compatible server answering with `handler`; resolves with its base URL. */
async function serve(handler: Handler): Promise<string> {
  const server = createServer((request, response) => {
    let text = '';
    request.on('data', (chunk: Buffer) => {
      text += chunk.toString('utf8');
    });
    request.on('end', () => handler(JSON.parse(text), request, response));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
}

/** A fake model: the vector of a text is [its length, 1, 0]. */
const fakeEmbeddings: Handler = (body, _request, response) => {
  answer(response, 200, {
    object: 'list',
    // Out of order on purpose: `index` says which text each vector belongs to.
    data: body.input.map((text, index) => ({ index, embedding: [text.length, 1, 0] })).reverse(),
    model: body.model,
  });
};

async function failureOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a failure');
}

describe('OpenAiEmbedder', () => {
  it('posts {model, input} to <baseUrl>/embeddings in batches with the key, and returns unit vectors in order', async () => {
    const seen: Array<{ url: string | undefined; authorization: string | undefined; input: string[]; model: string }> =
      [];
    const baseUrl = await serve((body, request, response) => {
      seen.push({
        url: request.url,
        authorization: request.headers.authorization,
        input: body.input,
        model: body.model,
      });
      fakeEmbeddings(body, request, response);
    });
    const embedder = new OpenAiEmbedder({ baseUrl: `${baseUrl}/`, model: 'nomic-embed-text', apiKey, batchSize: 2 });
    const vectors = await embedder.embed({ texts: ['abc', 'a', 'abcd'] });
    expect(seen).toEqual([
      { url: '/v1/embeddings', authorization: `Bearer ${apiKey}`, input: ['abc', 'a'], model: 'nomic-embed-text' },
      { url: '/v1/embeddings', authorization: `Bearer ${apiKey}`, input: ['abcd'], model: 'nomic-embed-text' },
    ]);
    expect(vectors.map((vector) => Array.from(vector).map((value) => Number(value.toFixed(2))))).toEqual([
      [0.95, 0.32, 0],
      [0.71, 0.71, 0],
      [0.97, 0.24, 0],
    ]);
    expect(embedder.model).toBe('nomic-embed-text');
  });

  it('sends no Authorization header without a key', async () => {
    let authorization: string | undefined = 'unset';
    const baseUrl = await serve((body, request, response) => {
      authorization = request.headers.authorization;
      fakeEmbeddings(body, request, response);
    });
    await new OpenAiEmbedder({ baseUrl, model: 'm' }).embed({ texts: ['x'] });
    expect(authorization).toBeUndefined();
  });

  it('calls a refused connection and a 5xx or 429 an outage, without the key in the message', async () => {
    const down = await serve(() => {});
    const port = new URL(down).port;
    await new Promise((resolve) => servers.pop()?.close(resolve));
    const refused = await failureOf(
      new OpenAiEmbedder({ baseUrl: `http://127.0.0.1:${port}/v1`, model: 'm', apiKey }).embed({ texts: ['x'] }),
    );
    expect(refused).toBeInstanceOf(EmbeddingsUnavailableError);
    expect(isAssistantError(refused, 'MEMORY_EMBEDDINGS_UNAVAILABLE')).toBe(true);
    expect(refused.message).toMatch(/could not be reached: ECONNREFUSED/);

    // A server that echoes the request's headers into its error body.
    for (const status of [503, 429]) {
      const baseUrl = await serve((_body, request, response) =>
        answer(response, status, { error: `overloaded; you sent ${request.headers.authorization}` }),
      );
      const error = await failureOf(new OpenAiEmbedder({ baseUrl, model: 'm', apiKey }).embed({ texts: ['x'] }));
      expect(error).toBeInstanceOf(EmbeddingsUnavailableError);
      expect((error as EmbeddingsUnavailableError).status).toBe(status);
      expect(error.message).toContain(`HTTP ${status}`);
      expect(error.message).toContain('Bearer [secret]');
      expect(error.message).not.toContain(apiKey);
    }
  });

  it('calls a timeout an outage', async () => {
    // Never answers; the client gives up after timeoutMs.
    const baseUrl = await serve(() => {});
    const error = await failureOf(new OpenAiEmbedder({ baseUrl, model: 'm', timeoutMs: 50 }).embed({ texts: ['x'] }));
    expect(error).toBeInstanceOf(EmbeddingsUnavailableError);
    expect(error.message).toMatch(/did not answer within 50 ms/);
  });

  it('calls a 4xx, a malformed body and a wrong count a bad answer, naming what came, without the key', async () => {
    const cases: Array<{ handler: Handler; pattern: RegExp; status?: number }> = [
      {
        handler: (_body, request, response) =>
          answer(response, 401, { error: { message: `invalid key ${request.headers.authorization}` } }),
        pattern: /HTTP 401 for model `m`: .*invalid key Bearer \[secret\]/,
        status: 401,
      },
      {
        handler: (_body, _request, response) => answer(response, 200, 'not json at all'),
        pattern: /not JSON: not json at all/,
      },
      {
        handler: (_body, _request, response) => answer(response, 200, { embeddings: [[1, 2]] }),
        pattern: /without `\{data: \[\{index, embedding\}\]\}` \(data: .*\{"embeddings":\[\[1,2\]\]\}/,
      },
      {
        handler: (_body, _request, response) => answer(response, 200, { data: [{ index: 0, embedding: [1, 0] }] }),
        pattern: /answered 1 embeddings for 2 texts/,
      },
      {
        handler: (_body, _request, response) =>
          answer(response, 200, {
            data: [
              { index: 0, embedding: [1, 0] },
              { index: 1, embedding: [1, 0, 0] },
            ],
          }),
        pattern: /vectors of different sizes \(2 and 3\)/,
      },
    ];
    for (const { handler, pattern, status } of cases) {
      const baseUrl = await serve(handler);
      const error = await failureOf(new OpenAiEmbedder({ baseUrl, model: 'm', apiKey }).embed({ texts: ['x', 'y'] }));
      expect(error).toBeInstanceOf(EmbeddingsInvalidError);
      expect(isAssistantError(error, 'MEMORY_EMBEDDINGS_INVALID')).toBe(true);
      expect(error.message).toMatch(pattern);
      expect(error.message).not.toContain(apiKey);
      if (status !== undefined) expect((error as EmbeddingsInvalidError).status).toBe(status);
    }
  });

  it("passes the caller's abort through as it came, not as an outage", async () => {
    const baseUrl = await serve(() => {});
    const controller = new AbortController();
    const pending = new OpenAiEmbedder({ baseUrl, model: 'm' }).embed({ texts: ['x'], signal: controller.signal });
    controller.abort(new Error('stopped by the test'));
    await expect(pending).rejects.toThrow('stopped by the test');
  });

  it('refuses a base URL that is not http(s), naming it', () => {
    expect(() => new OpenAiEmbedder({ baseUrl: 'ftp://example/v1', model: 'm' })).toThrow(/got protocol `ftp:`/);
    expect(() => new OpenAiEmbedder({ baseUrl: 'nowhere', model: 'm' })).toThrow(/got `nowhere`/);
  });
});

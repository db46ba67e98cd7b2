import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { OutboundError } from './outbound-error.ts';
import type { LookupAll, OutboundPolicy } from './outbound-policy.ts';
import { publicWebOnly } from './outbound-policy.ts';
import { safeFetch } from './safe-fetch.ts';

/** A real HTTP server on a loopback address that records the paths it is asked for and answers with `respond`. */
async function startServer(
  host: string,
  respond: (request: http.IncomingMessage, response: http.ServerResponse) => void = (_, response) => response.end('ok'),
) {
  const received: string[] = [];
  const server = http.createServer((request, response) => {
    received.push(request.url ?? '');
    respond(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    received,
    port,
    url: `http://${host}:${port}`,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** Tests only: 127.0.0.2 stands in for the public internet; every other address keeps the product's rule. */
const testPolicy: OutboundPolicy = {
  protocols: ['http:', 'https:'],
  allowsAddress: (address) => address === '127.0.0.2' || publicWebOnly.allowsAddress(address),
};

/** A resolver from a table, recording each question. */
function fakeLookup(table: Record<string, string[]>): { lookup: LookupAll; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    lookup: async (hostname) => {
      asked.push(hostname);
      const answer = table[hostname];
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  };
}

async function refusal(promise: Promise<unknown>): Promise<OutboundError> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!(error instanceof OutboundError)) throw new Error(`expected an OutboundError, got ${String(error)}`);
  return error;
}

describe('safeFetch', () => {
  it('reads a page through a redirect by name, and says where it ended', async () => {
    await using site = await startServer('127.0.0.2', (request, response) => {
      if (request.url === '/old') {
        response.writeHead(301, { location: `http://site.test:${request.socket.localPort}/new` });
        response.end();
      } else {
        response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        response.end('<title>Café</title>');
      }
    });
    const { lookup, asked } = fakeLookup({ 'site.test': ['127.0.0.2'] });
    const result = await safeFetch({ url: `${site.url}/old`, policy: testPolicy, lookup, timeoutMs: 5_000 });
    expect(result).toMatchObject({
      status: 200,
      url: `http://site.test:${site.port}/new`,
      contentType: 'text/html',
      body: '<title>Café</title>',
    });
    expect(asked).toEqual(['site.test']);
    expect(result.hops).toEqual([`${site.url}/old`, `http://site.test:${site.port}/new`]);
    expect(site.received).toEqual(['/old', '/new']);
  });

  it('sends its headers to the first origin only: a redirect elsewhere does not carry an API key', async () => {
    const keys: (string | undefined)[] = [];
    await using site = await startServer('127.0.0.2', (request, response) => {
      keys.push(request.headers['x-token']?.toString());
      if (request.url === '/search') {
        response.writeHead(302, { location: '/moved' });
      } else if (request.url === '/moved') {
        response.writeHead(302, { location: `http://elsewhere.test:${request.socket.localPort}/steal` });
      } else {
        response.writeHead(200, { 'content-type': 'application/json' });
      }
      response.end();
    });
    const { lookup } = fakeLookup({ 'elsewhere.test': ['127.0.0.2'] });
    await safeFetch({
      url: `${site.url}/search`,
      headers: { 'X-Token': 's3cret', accept: 'application/json' },
      policy: testPolicy,
      lookup,
      timeoutMs: 5_000,
    });
    expect(site.received).toEqual(['/search', '/moved', '/steal']);
    expect(keys).toEqual(['s3cret', 's3cret', undefined]);
  });

  it('decodes the body by its charset and gives status, final URL and content type', async () => {
    await using site = await startServer('127.0.0.2', (_, response) => {
      response.writeHead(200, { 'content-type': 'text/plain; charset=iso-8859-1' });
      response.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    });
    const result = await safeFetch({ url: `${site.url}/a`, policy: testPolicy, timeoutMs: 5_000 });
    expect(result).toMatchObject({
      status: 200,
      url: `${site.url}/a`,
      contentType: 'text/plain',
      body: 'café',
      truncated: false,
    });
  });

  it('refuses a redirect to a private or metadata address, by name or literal, and never connects there', async () => {
    await using inside = await startServer('127.0.0.1');
    for (const location of [
      `http://127.0.0.1:${inside.port}/admin`,
      `http://internal.test:${inside.port}/`,
      `http://169.254.169.254:${inside.port}/latest/meta-data/`,
      `http://[::ffff:7f00:1]:${inside.port}/`,
    ]) {
      await using site = await startServer('127.0.0.2', (_, response) => {
        response.writeHead(302, { location });
        response.end();
      });
      const { lookup } = fakeLookup({ 'internal.test': ['10.0.0.1'] });
      const error = await refusal(safeFetch({ url: `${site.url}/r`, policy: testPolicy, lookup, timeoutMs: 5_000 }));
      expect(error.code, location).toBe('OUTBOUND_REFUSED');
      expect(error.refusal, location).toBe('address');
      expect(error.message, location).toMatch(/not a public internet address/);
      expect(site.received).toEqual(['/r']);
    }
    expect(inside.received).toEqual([]);
  });

  it('refuses a name with any private address among its addresses, and schemes the policy does not list', async () => {
    const { lookup } = fakeLookup({ 'mixed.test': ['93.184.216.34', '192.168.1.10'] });
    const mixed = await refusal(safeFetch({ url: 'http://mixed.test/', policy: publicWebOnly, lookup }));
    expect(mixed.message).toBe('refused: the URL mixed.test resolves to 192.168.1.10, not a public internet address');
    for (const url of ['file:///etc/passwd', 'ftp://files.example/x', 'gopher://example.com/']) {
      expect((await refusal(safeFetch({ url, policy: publicWebOnly, lookup }))).refusal, url).toBe('scheme');
    }
    expect((await refusal(safeFetch({ url: 'http://a:b@mixed.test/', policy: publicWebOnly, lookup }))).refusal).toBe(
      'credentials',
    );
    expect((await refusal(safeFetch({ url: 'not a url', policy: publicWebOnly, lookup }))).refusal).toBe('not_url');
  });

  it('refuses an answer larger than maxBytes, declared or streamed, or cuts it when told to', async () => {
    const big = 'x'.repeat(10_000);
    await using declared = await startServer('127.0.0.2', (_, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-length': big.length });
      response.end(big);
    });
    await using streamed = await startServer('127.0.0.2', (_, response) => {
      response.writeHead(200, { 'content-type': 'text/plain' });
      for (let index = 0; index < 10; index++) response.write(big.slice(0, 1_000));
      response.end();
    });
    for (const site of [declared, streamed]) {
      const error = await refusal(safeFetch({ url: site.url, policy: testPolicy, maxBytes: 4_096, timeoutMs: 5_000 }));
      expect(error.refusal).toBe('too_large');
      expect(error.message).toMatch(/more than 4096 bytes/);
    }
    const cut = await safeFetch({
      url: streamed.url,
      policy: testPolicy,
      maxBytes: 4_096,
      oversize: 'truncate',
      timeoutMs: 5_000,
    });
    expect(cut).toMatchObject({ status: 200, truncated: true });
    expect(cut.body).toHaveLength(4_096);
  });

  it('refuses a 2xx answer whose content type is not allowed, but passes an error page through', async () => {
    await using site = await startServer('127.0.0.2', (request, response) => {
      if (request.url === '/missing') {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end('{"error": "not found"}');
        return;
      }
      response.writeHead(200, { 'content-type': 'application/octet-stream' });
      response.end(Buffer.alloc(100));
    });
    const allowedContentTypes = ['text/html', 'text/plain'];
    const error = await refusal(safeFetch({ url: `${site.url}/file.bin`, policy: testPolicy, allowedContentTypes }));
    expect(error).toMatchObject({ code: 'OUTBOUND_REFUSED', refusal: 'content_type', connected: true });
    expect(error.message).toMatch(/application\/octet-stream, not text\/html, text\/plain/);
    const missing = await safeFetch({ url: `${site.url}/missing`, policy: testPolicy, allowedContentTypes });
    expect(missing).toMatchObject({ status: 404, contentType: 'application/json' });
  });

  it('stops after maxRedirects and times out on a silent server or a resolver that never answers', async () => {
    let count = 0;
    await using loop = await startServer('127.0.0.2', (_, response) => {
      count += 1;
      response.writeHead(302, { location: `/again-${count}` });
      response.end();
    });
    const error = await refusal(safeFetch({ url: `${loop.url}/`, policy: testPolicy, maxRedirects: 2 }));
    expect(error.refusal).toBe('redirects');
    expect(loop.received).toHaveLength(3);
    await using silent = await startServer('127.0.0.2', () => undefined);
    const slow = await refusal(safeFetch({ url: silent.url, policy: testPolicy, timeoutMs: 200 }));
    expect(slow).toMatchObject({ code: 'OUTBOUND_FAILED', timedOut: true, connected: true });
    const neverAnswers: LookupAll = () => new Promise(() => {});
    const dns = await refusal(
      safeFetch({ url: 'http://slow.test/', policy: testPolicy, lookup: neverAnswers, timeoutMs: 200 }),
    );
    expect(dns).toMatchObject({ code: 'OUTBOUND_FAILED', timedOut: true, connected: false });
  });

  it('rejects with the reason of an aborted signal', async () => {
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    await expect(
      safeFetch({ url: 'http://example.com/', policy: publicWebOnly, signal: controller.signal }),
    ).rejects.toThrow('shutting down');
  });
});

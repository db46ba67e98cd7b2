import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { ActionNotTakenError, type LookupAll, type OutboundPolicy, RetryableError } from '@assistant/sdk';
import { describe, expect, it } from 'vitest';
import { oneClickUnsubscribe } from './safe-unsubscribe.ts';

interface Received {
  method: string;
  url: string;
  host: string;
  contentType: string;
  body: string;
}

/** A real HTTP server on a loopback address that records what reaches it and answers with `respond`. */
async function startServer(
  host: string,
  respond: (request: http.IncomingMessage, response: http.ServerResponse, index: number) => void = (_, response) =>
    response.end('ok'),
  port = 0,
) {
  const received: Received[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      received.push({
        method: request.method ?? '',
        url: request.url ?? '',
        host: request.headers.host ?? '',
        contentType: request.headers['content-type'] ?? '',
        body,
      });
      respond(request, response, received.length - 1);
    });
  });
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const address = server.address() as AddressInfo;
  return {
    received,
    port: address.port,
    url: `http://${host}:${address.port}`,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Tests only: 127.0.0.2 stands in for a server on the internet, and plain http: is allowed because these servers
 * have no certificates. Mail never reaches this policy: the act handler passes none, so the default applies.
 */
const testPolicy: OutboundPolicy = {
  protocols: ['https:', 'http:'],
  allowsAddress: (address) => address === '127.0.0.2',
};

/** A self-signed certificate for unsubscribe.test (valid until 2126), which no system trusts. */
const selfSigned = {
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg9bKYCDKSK54tOwNI
TZNrKJlrZSOgMa0jAz3UFw2fiVyhRANCAATcEGhKGv5p7KdhMSzBIZaigcoDVKrF
PQSEIwXo/asuGGOLVDopnWwYbyGK80HIFDhLOoxnbzh3NxuYonQpEoka
-----END PRIVATE KEY-----`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBqjCCAVCgAwIBAgIUXJLqF9ntu5HWdZrtTaRoIP3/IY0wCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQdW5zdWJzY3JpYmUudGVzdDAgFw0yNjExMjMxNTUzNDBaGA8y
MTI2MTAzMDE1NTM0MFowGzEZMBcGA1UEAwwQdW5zdWJzY3JpYmUudGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABNwQaEoa/mnsp2ExLMEhlqKBygNUqsU9BIQj
Bej9qy4YY4tUOimdbBhvIYrzQcgUOEs6jGdvOHc3G5iidCkSiRqjcDBuMB0GA1Ud
DgQWBBQurKK4kGjz1bERmf06Ft6wMjKvmzAfBgNVHSMEGDAWgBQurKK4kGjz1bER
mf06Ft6wMjKvmzAPBgNVHRMBAf8EBTADAQH/MBsGA1UdEQQUMBKCEHVuc3Vic2Ny
aWJlLnRlc3QwCgYIKoZIzj0EAwIDSAAwRQIgBe6cJVlLFdMQIEJGERHNCOCBn0dw
mlRpnWX1c+68JQQCIQC4nA7EmYXz/PZx0ndeZV/YrgJk3VlyJIxKke7+1ITxEg==
-----END CERTIFICATE-----`,
};

/** A resolver from a table, recording each question; an answer list is used up one answer per question. */
function fakeLookup(table: Record<string, string[][]>): { lookup: LookupAll; asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    lookup: async (hostname) => {
      asked.push(hostname);
      const answers = table[hostname];
      const answer = answers && answers.length > 1 ? answers.shift() : answers?.[0];
      if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    },
  };
}

describe('oneClickUnsubscribe', () => {
  it('hole 3: posts the one-click body to an allowed server and follows a redirect there', async () => {
    await using target = await startServer('127.0.0.2', (request, response) => {
      if (request.url === '/u/alice') {
        response.writeHead(307, { location: '/done' });
        response.end();
      } else response.end('unsubscribed');
    });
    const result = await oneClickUnsubscribe({ url: `${target.url}/u/alice`, policy: testPolicy, timeoutMs: 5_000 });
    expect(result.status).toBe(200);
    expect(target.received).toEqual([
      expect.objectContaining({ method: 'POST', url: '/u/alice', body: 'List-Unsubscribe=One-Click' }),
      expect.objectContaining({ method: 'POST', url: '/done', body: 'List-Unsubscribe=One-Click' }),
    ]);
    expect(target.received[0]?.contentType).toBe('application/x-www-form-urlencoded');
  });

  it('hole 3: an unsubscribe redirect to loopback is refused', async () => {
    await using internal = await startServer('127.0.0.1');
    await using target = await startServer('127.0.0.2', (_, response) => {
      response.writeHead(302, { location: `${internal.url}/admin/delete-everything` });
      response.end();
    });
    await expect(
      oneClickUnsubscribe({ url: `${target.url}/u/alice`, policy: testPolicy, timeoutMs: 5_000 }),
    ).rejects.toThrow(/refused.*127\.0\.0\.1/);
    expect(target.received).toHaveLength(1);
    expect(internal.received).toEqual([]);
  });

  it('hole 3: a redirect to the metadata address, by name or as an IPv4-mapped IPv6 literal, is refused', async () => {
    await using internal = await startServer('127.0.0.1');
    for (const location of [
      `http://metadata.test:${internal.port}/latest/meta-data/`,
      `http://[::ffff:127.0.0.1]:${internal.port}/`,
      `http://[::ffff:a9fe:a9fe]:${internal.port}/`,
      `http://169.254.169.254:${internal.port}/`,
    ]) {
      await using target = await startServer('127.0.0.2', (_, response) => {
        response.writeHead(301, { location });
        response.end();
      });
      const { lookup } = fakeLookup({ 'metadata.test': [['169.254.169.254']] });
      await expect(
        oneClickUnsubscribe({ url: `${target.url}/u`, policy: testPolicy, lookup, timeoutMs: 5_000 }),
        location,
      ).rejects.toThrow(/refused/);
    }
    expect(internal.received).toEqual([]);
  });

  it('hole 3: connects to the address it checked, without asking DNS again (no rebinding)', async () => {
    await using outside = await startServer('127.0.0.2');
    // The same port on another loopback address: where a second lookup would send the request.
    await using inside = await startServer('127.0.0.1', undefined, outside.port);
    const { lookup, asked } = fakeLookup({ 'rebind.test': [['127.0.0.2'], ['127.0.0.1']] });
    const result = await oneClickUnsubscribe({
      url: `http://rebind.test:${outside.port}/u`,
      policy: testPolicy,
      lookup,
      timeoutMs: 5_000,
    });
    expect(result.status).toBe(200);
    expect(asked).toEqual(['rebind.test']);
    expect(outside.received).toEqual([expect.objectContaining({ host: `rebind.test:${outside.port}` })]);
    expect(inside.received).toEqual([]);
  });

  it('hole 3: an https: request goes to the pinned address and checks the certificate against the name', async () => {
    let connections = 0;
    const server = https.createServer(selfSigned, (_, response) => response.end('ok'));
    server.on('connection', () => {
      connections++;
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    try {
      const port = (server.address() as AddressInfo).port;
      const { lookup, asked } = fakeLookup({ 'unsubscribe.test': [['127.0.0.2']] });
      // The default protocols (https: only); the address stands in for a public one.
      const policy: OutboundPolicy = { protocols: ['https:'], allowsAddress: testPolicy.allowsAddress };
      await expect(
        oneClickUnsubscribe({ url: `https://unsubscribe.test:${port}/u`, policy, lookup, timeoutMs: 5_000 }),
      ).rejects.toThrow(/self-signed certificate/);
      expect(asked).toEqual(['unsubscribe.test']);
      expect(connections).toBe(1);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('hole 3: a name that resolves to a public and a private address is refused', async () => {
    await using inside = await startServer('127.0.0.1');
    const { lookup } = fakeLookup({ 'mixed.test': [['127.0.0.2', '127.0.0.1']] });
    await expect(
      oneClickUnsubscribe({ url: `http://mixed.test:${inside.port}/u`, policy: testPolicy, lookup, timeoutMs: 5_000 }),
    ).rejects.toThrow(/refused.*127\.0\.0\.1/);
    expect(inside.received).toEqual([]);
  });

  it('hole 3: stops after 3 redirects', async () => {
    await using target = await startServer('127.0.0.2', (_, response, index) => {
      response.writeHead(308, { location: `/again-${index}` });
      response.end();
    });
    await expect(oneClickUnsubscribe({ url: `${target.url}/u`, policy: testPolicy, timeoutMs: 5_000 })).rejects.toThrow(
      /more than 3 redirects/,
    );
    expect(target.received.map((request) => request.url)).toEqual(['/u', '/again-0', '/again-1', '/again-2']);
  });

  it('hole 3: by default only https: to public addresses: http:, loopback, private and link-local are refused', async () => {
    await using local = await startServer('127.0.0.2');
    const { lookup, asked } = fakeLookup({
      'loopback.test': [['127.0.0.1']],
      'private.test': [['10.1.2.3']],
      'cgnat.test': [['100.64.0.1']],
      'v6.test': [['fd00::1']],
    });
    const refused = [
      `http://127.0.0.2:${local.port}/u`,
      `https://loopback.test:${local.port}/u`,
      'https://private.test/u',
      'https://cgnat.test/u',
      'https://v6.test/u',
      'https://[fe80::1]/u',
      'https://[::1]/u',
      'https://169.254.169.254/latest/meta-data/',
      'https://0.0.0.0/u',
      'https://2130706433/u',
      'https://0x7f.1/u',
      'https://[::ffff:7f00:1]/u',
      'ftp://files.example/u',
    ];
    for (const url of refused) {
      await expect(oneClickUnsubscribe({ url, lookup, timeoutMs: 5_000 }), url).rejects.toThrow(/refused/);
    }
    expect(asked.sort()).toEqual(['cgnat.test', 'loopback.test', 'private.test', 'v6.test']);
    expect(local.received).toEqual([]);
  });

  it('hole 3: reads at most maxResponseBytes of an endless answer and gives up on a silent server', async () => {
    await using endless = await startServer('127.0.0.2', (_, response) => {
      const chunk = Buffer.alloc(16 * 1024, 'x');
      const write = () => {
        while (response.write(chunk)) {
          /* until the socket's buffer is full */
        }
      };
      response.on('drain', write);
      response.on('error', () => undefined);
      write();
    });
    const result = await oneClickUnsubscribe({
      url: `${endless.url}/u`,
      policy: testPolicy,
      timeoutMs: 5_000,
      maxResponseBytes: 32 * 1024,
    });
    expect(result.status).toBe(200);
    await using silent = await startServer('127.0.0.2', () => undefined);
    await expect(oneClickUnsubscribe({ url: `${silent.url}/u`, policy: testPolicy, timeoutMs: 300 })).rejects.toThrow(
      /timed out after 300 ms/,
    );
    const neverAnswers: LookupAll = () => new Promise(() => {});
    await expect(
      oneClickUnsubscribe({ url: 'https://slow-dns.test/u', lookup: neverAnswers, timeoutMs: 300 }),
    ).rejects.toThrow(/timed out after 300 ms/);
  });
});

describe('oneClickUnsubscribe during an outage', () => {
  it('says the action was not taken when nothing could be reached, or the first server said "try later"', async () => {
    // A port nobody listens on: refused before anything was sent.
    const closed = await startServer('127.0.0.2');
    const closedUrl = `${closed.url}/u`;
    await closed[Symbol.asyncDispose]();
    const refused = oneClickUnsubscribe({ url: closedUrl, policy: testPolicy, timeoutMs: 5_000 });
    await expect(refused).rejects.toBeInstanceOf(ActionNotTakenError);
    // A name that does not resolve (yet).
    const { lookup } = fakeLookup({});
    await expect(
      oneClickUnsubscribe({ url: 'https://lists.example.test/u', lookup, timeoutMs: 5_000 }),
    ).rejects.toBeInstanceOf(ActionNotTakenError);
    await using busy = await startServer('127.0.0.2', (_, response) => {
      response.statusCode = 503;
      response.end('maintenance');
    });
    await expect(
      oneClickUnsubscribe({ url: `${busy.url}/u`, policy: testPolicy, timeoutMs: 5_000 }),
    ).rejects.toBeInstanceOf(ActionNotTakenError);
  });

  it('says it may have happened when the server got the request and failed or went silent', async () => {
    await using broken = await startServer('127.0.0.2', (_, response) => {
      response.statusCode = 500;
      response.end('oops');
    });
    const failed = oneClickUnsubscribe({ url: `${broken.url}/u`, policy: testPolicy, timeoutMs: 5_000 });
    await expect(failed).rejects.toBeInstanceOf(RetryableError);
    await expect(failed).rejects.not.toBeInstanceOf(ActionNotTakenError);
    await using silent = await startServer('127.0.0.2', () => undefined);
    const timedOut = oneClickUnsubscribe({ url: `${silent.url}/u`, policy: testPolicy, timeoutMs: 300 });
    await expect(timedOut).rejects.toThrow(/timed out/);
    await expect(timedOut).rejects.not.toBeInstanceOf(ActionNotTakenError);
  });
});

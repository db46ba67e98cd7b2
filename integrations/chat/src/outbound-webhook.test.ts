import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Secret } from '@assistant/config';
import { verifyWebhook } from '@assistant/outbound';
import { DelayedError, type HandlerContext, RetryableError, UnrecoverableError } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deliverWebhook } from './outbound-webhook.ts';
import type { ChatSettings } from './settings.generated.ts';

const secret = 'whsec_c2VjcmV0LW9mLXRoZS1yZWNlaXZlci0wMTIzNDU2Nzg5';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

let server: http.Server;
let url: string;
let received: Received[];
/** The statuses the receiver answers, in order; the last repeats. */
let statuses: number[];

beforeEach(async () => {
  received = [];
  statuses = [200];
  server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      const status = statuses[Math.min(received.length - 1, statuses.length - 1)] ?? 200;
      if (status === 302) response.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      else response.writeHead(status).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});

afterEach(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const payload = {
  endpoint: 'receiver',
  id: 'n-0123456789abcdef01234567',
  event: { type: 'notification.failure', timestamp: '2026-11-29T01:00:00.000Z', data: { kind: 'failure', task: 't1' } },
};

function context(
  options: {
    payload?: unknown;
    privateNetwork?: boolean;
    endpointUrl?: string;
    secret?: string;
    task?: { attempts: number; maxAttempts?: number; createdAt?: string };
  } = {},
) {
  const logged: string[] = [];
  // Only what the handler uses; the worker's tests cover the real context.
  return {
    logged,
    context: {
      payload: options.payload ?? payload,
      task: options.task ?? { attempts: 0 },
      instance: {
        name: 'chat',
        settings: {
          webhooks: {
            outbound: [
              {
                name: 'receiver',
                url: options.endpointUrl ?? url,
                secret: new Secret('receiver_hook', options.secret ?? secret),
                events: ['failure'],
                private_network: options.privateNetwork ?? true,
              },
            ],
          },
        },
      },
      signal: new AbortController().signal,
      log: { info: (message: string) => void logged.push(message), warn() {}, human: async () => {} },
    } as unknown as HandlerContext<unknown, ChatSettings>,
  };
}

async function failure(run: Promise<unknown>): Promise<Error> {
  try {
    await run;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the delivery to fail');
}

describe('chat.webhook', () => {
  it('POSTs the event as JSON, signed with the endpoint secret, and verifiable by the receiver', async () => {
    const { context: one, logged } = context();
    expect(await deliverWebhook(one)).toEqual({
      endpoint: 'receiver',
      id: payload.id,
      type: 'notification.failure',
      status: 200,
    });
    expect(received).toHaveLength(1);
    const [request] = received;
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request?.body ?? '')).toEqual(payload.event);
    const verified = verifyWebhook({
      secret,
      headers: request?.headers as Record<string, string>,
      body: request?.body ?? '',
    });
    expect(verified.id).toBe(payload.id);
    expect(logged).toEqual([`webhook notification.failure ${payload.id} delivered to receiver`]);
  });

  it('asks for a retry on a non-2xx answer and on a refused connection, with the same webhook-id each time', async () => {
    statuses = [500, 404, 200];
    expect(await failure(deliverWebhook(context().context))).toBeInstanceOf(RetryableError);
    expect(await failure(deliverWebhook(context().context))).toBeInstanceOf(RetryableError);
    expect(await deliverWebhook(context().context)).toMatchObject({ status: 200 });
    expect(received.map((request) => request.headers['webhook-id'])).toEqual([payload.id, payload.id, payload.id]);
    const closed = await failure(deliverWebhook(context({ endpointUrl: 'http://127.0.0.1:1/none' }).context));
    expect(closed).toBeInstanceOf(RetryableError);
  });

  it('waits out an endpoint that is still down at the last attempt, spending no attempt, instead of failing for good', async () => {
    statuses = [503];
    const now = new Date().toISOString();
    const last = await failure(
      deliverWebhook(context({ task: { attempts: 5, maxAttempts: 5, createdAt: now } }).context),
    );
    expect(last).toBeInstanceOf(DelayedError);
    expect(last.message).toMatch(/answered 503 .*waiting for the endpoint/);
    // A day after the event the outage is no longer waited out: the delivery fails the normal way.
    const old = new Date(Date.now() - 25 * 60 * 60_000).toISOString();
    const late = await failure(
      deliverWebhook(context({ task: { attempts: 5, maxAttempts: 5, createdAt: old } }).context),
    );
    expect(late).toBeInstanceOf(RetryableError);
  });

  it('fails for good on what a retry cannot fix: a private address not allowed, a redirect, a removed endpoint, a bad secret or payload', async () => {
    const cases: { what: string; run: () => Promise<unknown>; message: RegExp }[] = [
      {
        what: 'loopback without private_network',
        run: () => deliverWebhook(context({ privateNetwork: false }).context),
        message: /not public|127\.0\.0\.1/,
      },
      {
        what: 'a redirect',
        run: async () => {
          statuses = [302];
          return deliverWebhook(context().context);
        },
        message: /redirect/,
      },
      {
        what: 'an endpoint no longer configured',
        run: () => deliverWebhook(context({ payload: { ...payload, endpoint: 'gone' } }).context),
        message: /no endpoint `gone`/,
      },
      {
        what: 'a secret that is not whsec_ base64',
        run: () => deliverWebhook(context({ secret: 'hunter2?' }).context),
        message: /whsec_/,
      },
      {
        what: 'a payload without an event',
        run: () => deliverWebhook(context({ payload: { endpoint: 'receiver', id: 'x' } }).context),
        message: /expects/,
      },
    ];
    for (const entry of cases) {
      const error = await failure(entry.run());
      expect(error, entry.what).toBeInstanceOf(UnrecoverableError);
      expect(error.message, entry.what).toMatch(entry.message);
      expect(error.message, entry.what).not.toContain('hunter2');
    }
    // Only the redirect reached the receiver; the private address was refused before connecting.
    expect(received).toHaveLength(1);
  });
});

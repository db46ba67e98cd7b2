import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhook, webhookHeaders } from '@assistant/outbound';

/** A signed delivery Assistant POSTed to the fake, as it arrived. */
export interface RemoteDelivery {
  /** Its `webhook-id` (the same on every attempt of one delivery). */
  id: string;
  /** The event's `type` (`chat.reply`, `notification.failure`…) and `data`. */
  type: string;
  data: Record<string, unknown>;
  /** What the fake answered: 200, or 503 while it was down. */
  status: number;
  /** Whether the signature, timestamp and id were valid for the fake's secret. */
  verified: boolean;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * The other side of Assistant's signed webhooks, on loopback at a free port: a remote system (CI, a home automation
 * box) that sends Assistant messages and events signed by the Standard Webhooks scheme ({@link send}), and receives
 * Assistant's signed deliveries (replies, notifications) at {@link url}, verifying each with its secret. It answers
 * 200 to a valid delivery, 401 to one whose signature does not verify, and 503 to everything while it is down
 * ({@link setDown}), as an endpoint in an outage does. What it received is kept in order, every attempt included.
 */
export class FakeWebhookRemote {
  /** Every delivery attempt, in the order they arrived. */
  readonly received: RemoteDelivery[] = [];
  readonly #server: http.Server;
  readonly #secret: string;
  #down = false;

  private constructor(server: http.Server, secret: string) {
    this.#server = server;
    this.#secret = secret;
  }

  /** Starts the fake; `secret` is the `whsec_…` the endpoint's deliveries are signed with. */
  static async start(options: { secret: string }): Promise<FakeWebhookRemote> {
    const server = http.createServer();
    const remote = new FakeWebhookRemote(server, options.secret);
    server.on('request', (request: http.IncomingMessage, response: http.ServerResponse) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => remote.#take(request, response, Buffer.concat(chunks).toString('utf8')));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return remote;
  }

  /** Where Assistant delivers (an endpoint's `url` in `webhooks.outbound`). */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/assistant`;
  }

  #take(request: http.IncomingMessage, response: http.ServerResponse, body: string): void {
    let verified = false;
    try {
      verifyWebhook({ secret: this.#secret, headers: request.headers, body });
      verified = true;
    } catch {
      // Recorded as not verified, and answered 401.
    }
    let event: { type?: unknown; data?: unknown } = {};
    try {
      event = JSON.parse(body) as typeof event;
    } catch {
      // Kept with an empty type: the test sees it.
    }
    const status = this.#down ? 503 : verified ? 200 : 401;
    this.received.push({
      id: String(request.headers['webhook-id'] ?? ''),
      type: typeof event.type === 'string' ? event.type : '',
      data: typeof event.data === 'object' && event.data !== null ? (event.data as Record<string, unknown>) : {},
      status,
      verified,
      headers: request.headers,
      body,
    });
    response.writeHead(status).end();
  }

  /**
   * The deliveries the remote system took (answered 200), one per `webhook-id` as a receiver that drops repeats
   * keeps them, of one type when given.
   */
  handled(type?: string): RemoteDelivery[] {
    const seen = new Set<string>();
    return this.received.filter((delivery) => {
      if (delivery.status !== 200 || (type !== undefined && delivery.type !== type) || seen.has(delivery.id)) {
        return false;
      }
      seen.add(delivery.id);
      return true;
    });
  }

  /** Takes the endpoint down (503 to every delivery) or brings it back. */
  setDown(down: boolean): void {
    this.#down = down;
  }

  /**
   * Sends a signed message or event to Assistant's `/hooks/signed` (`url`), as the remote system does: `id` is its
   * `webhook-id` (the same again for a retry), signed with `secret` at this moment; `signature: false` sends it
   * unsigned. The answer's status and JSON body.
   */
  async send(options: {
    url: string;
    secret: string;
    id: string;
    body: unknown;
    signature?: boolean;
  }): Promise<{ status: number; body: unknown }> {
    const body = JSON.stringify(options.body);
    const headers = options.signature === false ? {} : webhookHeaders({ secret: options.secret, id: options.id, body });
    const response = await fetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: kept as text.
    }
    return { status: response.status, body: parsed };
  }

  async close(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { freePort } from './free-port.ts';
import { cliMain, type NodeProcess, startNode } from './node-process.ts';
import type { TempDir } from './temp-dir.ts';

/** The chat instance's inbound webhook secret: what a sender signs with (`secrets.yaml`'s `inbound_hook`). */
export const inboundSecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** The outbound endpoint's secret: what the assistant signs its deliveries with (`<endpoint>_hook`). */
export const outboundSecret = 'whsec_c2VjcmV0LW9mLXRoZS1yZWNlaXZlci0wMTIzNDU2Nzg5';

export interface WebhookConfigOptions {
  dir: TempDir;
  /** The fake model's base URL (the `default` LLM). */
  modelUrl: string;
  /** The one outbound endpoint; its secret is `!secret <name>_hook` ({@link outboundSecret}). */
  outbound: { name: string; url: string; events: readonly string[]; ledgerEvents?: readonly string[] };
  /** `queue.policies.overrides` entries, each a YAML line such as `chat.notify: {max_attempts: 1}`. */
  queueOverrides?: readonly string[];
  /** A `hooks:` section, appended to the config as written. */
  hooks?: string;
}

/**
 * Writes `secrets.yaml` and `config.yaml` for `assistant start` with the chat instance's signed webhooks: inbound
 * signed with {@link inboundSecret}, one outbound endpoint on loopback signed with {@link outboundSecret}, the fake
 * model, a fast-polling worker, no memory consolidation and a free port for the server. Returns the config's path and
 * the port.
 */
export async function writeWebhookConfig(options: WebhookConfigOptions): Promise<{ configPath: string; port: number }> {
  const { dir, outbound } = options;
  const port = await freePort();
  await dir.write('secrets.yaml', `inbound_hook: ${inboundSecret}\n${outbound.name}_hook: ${outboundSecret}\n`, 0o600);
  const queue = options.queueOverrides
    ? `queue:\n  policies:\n    overrides:\n${options.queueOverrides.map((line) => `      ${line}\n`).join('')}`
    : '';
  const ledgerEvents = outbound.ledgerEvents ? `          ledger_events: [${outbound.ledgerEvents.join(', ')}]\n` : '';
  const configPath = await dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []}
llms:
  default: {base_url: "${options.modelUrl}", model: fake-model}
server: {port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
${queue}integrations:
  - type: chat
    name: chat
    webhooks:
      secret: !secret inbound_hook
      outbound:
        - name: ${outbound.name}
          url: ${outbound.url}
          secret: !secret ${outbound.name}_hook
          events: [${outbound.events.join(', ')}]
${ledgerEvents}          private_network: true
${options.hooks ?? ''}`,
  );
  return { configPath, port };
}

/**
 * Runs `assistant start` on a config and waits until the server listens and the worker is ready; if either does not
 * come, the process is stopped before the error is thrown.
 */
export async function startAssistant(options: { dir: string; configPath: string }): Promise<NodeProcess> {
  const assistant = startNode({ args: [cliMain, 'start', '--config', options.configPath], cwd: options.dir });
  try {
    await assistant.waitForOutput(/listening on/, { timeoutMs: 25_000 });
    await assistant.waitForOutput(/worker ready/, { timeoutMs: 25_000 });
  } catch (error) {
    assistant.child.kill('SIGTERM');
    await assistant.exited;
    throw error;
  }
  return assistant;
}

/** A delivery the receiver took, with the status it answered. */
export interface ReceivedDelivery {
  headers: http.IncomingHttpHeaders;
  body: string;
  status: number;
}

/**
 * A loopback endpoint for outbound webhooks that records every delivery. `status` decides the answer from the
 * deliveries before this one (@default 200 to each).
 */
export async function startWebhookReceiver(
  options: { status?: (headers: http.IncomingHttpHeaders, earlier: readonly ReceivedDelivery[]) => number } = {},
): Promise<{ url: string; received: ReceivedDelivery[]; [Symbol.asyncDispose](): Promise<void> }> {
  const received: ReceivedDelivery[] = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const status = options.status?.(request.headers, received) ?? 200;
      received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), status });
      response.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/assistant`,
    received,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

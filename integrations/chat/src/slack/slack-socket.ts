import { type Logger, LogLevel, SocketModeClient } from '@slack/socket-mode';
import type { SlackEnvelope, SlackInbound, SlackReceived } from './slack-adapter.ts';

/** The Socket Mode events the adapter takes; the rest (`hello`, `disconnect`, slash commands) are not messages. */
const taken = new Set(['events_api', 'interactive']);

/**
 * Socket Mode (no public URL): `apps.connections.open` with the app-level token (`xapp-…`) gives a WebSocket URL,
 * Slack pushes envelopes over it, and each is acknowledged by its `envelope_id` only once the runner stored it —
 * Slack redelivers an envelope it has no acknowledgement for (`retry_attempt`), and the adapter's ids make that the
 * same message. The SDK's own reconnecting is off: a lost connection ends the wait, and the next {@link next}
 * connects again, so a failing connect is the runner's outage (backoff, /health).
 */
export class SlackSocketInbound implements SlackInbound {
  readonly #appToken: string;
  readonly #apiUrl: string;
  readonly #logger: Logger;
  readonly #queue: SlackReceived[] = [];
  #client: SocketModeClient | undefined;
  #wake: (() => void) | undefined;

  constructor(options: { appToken: string; apiUrl: string; logger: Logger }) {
    this.#appToken = options.appToken;
    this.#apiUrl = options.apiUrl;
    this.#logger = options.logger;
  }

  async next(signal: AbortSignal): Promise<SlackReceived[]> {
    if (!this.#client) {
      await this.#connect(signal);
      // Connected again: the runner hears that the platform answers (its condition goes back to ok).
      if (this.#queue.length === 0) return [];
    }
    if (this.#queue.length === 0 && !signal.aborted) {
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.#wake = undefined;
          resolve();
        };
        this.#wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
    return this.#queue.splice(0);
  }

  async #connect(signal: AbortSignal): Promise<void> {
    const client = new SocketModeClient({
      appToken: this.#appToken,
      autoReconnectEnabled: false,
      logger: this.#logger,
      clientOptions: {
        slackApiUrl: this.#apiUrl,
        // Failures are the runner's to retry (and report), not the SDK's.
        retryConfig: { retries: 0 },
        rejectRateLimitedCalls: true,
        timeout: 30_000,
      },
    });
    type Event = { type: string; body: Record<string, unknown>; envelope_id?: string; ack: () => Promise<void> };
    client.on('slack_event', (event: Event) => {
      if (client !== this.#client || !taken.has(event.type) || event.envelope_id === undefined) return;
      const envelope: SlackEnvelope = { type: event.type, payload: event.body };
      this.#queue.push({
        envelope,
        acknowledge: async () => {
          try {
            await event.ack();
          } catch (error) {
            // The connection is gone: Slack hands the envelope out again, and its id finds it stored.
            this.#logger.debug(`could not acknowledge a Slack envelope: ${(error as Error).message}`);
          }
        },
      });
      this.#wake?.();
    });
    client.on('disconnected', () => {
      if (client !== this.#client) return;
      this.#client = undefined;
      this.#wake?.();
    });
    this.#client = client;
    // A connection that opens but never says `hello` must not hold up a shutdown.
    let onAbort = () => {};
    const aborted = new Promise<void>((resolve) => {
      onAbort = () => resolve();
      if (signal.aborted) resolve();
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const started = client.start();
      // Settled after an abort too (the disconnect below rejects it): nobody else waits on it.
      started.catch(() => {});
      await Promise.race([started, aborted]);
      if (signal.aborted) throw new Error('stopped while connecting to Slack');
    } catch (error) {
      this.#client = undefined;
      await client.disconnect().catch(() => {});
      throw error;
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    this.#wake?.();
    await client?.disconnect().catch(() => {});
  }
}

/** The SDKs' log lines, at debug level in ours (they redact tokens; what they say is for debugging). */
export function slackLogger(debug: (message: string) => void): Logger {
  let level = LogLevel.WARN;
  const line =
    (at: string) =>
    (...messages: unknown[]) =>
      debug(`slack sdk ${at}: ${messages.map((one) => (one instanceof Error ? one.message : String(one))).join(' ')}`);
  return {
    debug: () => {},
    info: () => {},
    warn: line('warn'),
    error: line('error'),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => {},
  };
}

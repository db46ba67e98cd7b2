import { DiscordAPIError, HTTPError, RateLimitError, REST } from '@discordjs/rest';

/**
 * The few Discord REST routes the bot uses, over `@discordjs/rest` (its per-route rate-limit buckets, the 429 waits,
 * the retries of 5xx answers). The bot token goes in the `Authorization` header only; errors name the route's method
 * and status, never the token.
 */

/** A message as the REST API and MESSAGE_CREATE show it (the parts the adapter reads). */
export interface DiscordMessage {
  id: string;
  channel_id: string;
  guild_id?: string;
  author?: { id: string; bot?: boolean };
  content?: string;
  type?: number;
  attachments?: unknown[];
  sticker_items?: unknown[];
}

/** A button of an action row (`style` 3: green, 4: red). */
export interface DiscordButton {
  label: string;
  custom_id: string;
  style: 1 | 2 | 3 | 4;
}

/** The gateway could not be used: closed with a code that will not change by itself (4004: the token). */
export class DiscordGatewayError extends Error {
  readonly code: number;
  readonly transient: boolean;

  constructor(code: number, reason: string, transient: boolean) {
    super(`the Discord gateway ${code === 0 ? 'connection failed' : `closed with ${code}`}: ${reason}`);
    this.name = 'DiscordGatewayError';
    this.code = code;
    this.transient = transient;
  }
}

export { DiscordAPIError, HTTPError, RateLimitError };

export interface DiscordApiOptions {
  /** The REST root without the version (`https://discord.com/api`), or a local fake's in tests. */
  apiRoot: string;
  token: string;
  /** A request without an answer after this long fails. @default 15000 */
  requestTimeoutMs?: number;
}

export class DiscordApi {
  /** The REST client; the gateway client fetches `GET /gateway/bot` with it. */
  readonly rest: REST;
  readonly #token: string;

  constructor(options: DiscordApiOptions) {
    this.#token = options.token;
    this.rest = new REST({
      api: options.apiRoot.replace(/\/+$/, ''),
      version: '10',
      // One retry of a 5xx or a network failure; the channel runner backs off beyond that.
      retries: 1,
      timeout: options.requestTimeoutMs ?? 15_000,
      // No sweeper timers: one bot, a handful of routes.
      hashSweepInterval: 0,
      handlerSweepInterval: 0,
    }).setToken(options.token);
  }

  /**
   * The REST client with the token set: `@discordjs/rest` forgets its token after a 401, and the runner tries the
   * same token again later (a token revoked and restored, or a fake platform that refused it).
   */
  client(): REST {
    return this.rest.setToken(this.#token);
  }

  async createMessage(
    channel: string,
    body: { content: string; components?: unknown[] },
    signal: AbortSignal,
  ): Promise<DiscordMessage> {
    // Nobody is pinged by what the model writes (@everyone, roles, users).
    return (await this.client().post(`/channels/${channel}/messages`, {
      body: { ...body, allowed_mentions: { parse: [] } },
      signal,
    })) as DiscordMessage;
  }

  async editMessage(channel: string, message: string, content: string, signal: AbortSignal): Promise<void> {
    await this.client().patch(`/channels/${channel}/messages/${message}`, {
      body: { content, allowed_mentions: { parse: [] } },
      signal,
    });
  }

  async typing(channel: string, signal: AbortSignal): Promise<void> {
    await this.client().post(`/channels/${channel}/typing`, { signal });
  }

  /** The DM channel with a user (Discord returns the existing one). */
  async dmChannel(user: string, signal: AbortSignal): Promise<string> {
    const channel = (await this.client().post('/users/@me/channels', { body: { recipient_id: user }, signal })) as {
      id: string;
    };
    return channel.id;
  }

  /** Up to 100 messages of a channel after `after` (newest first, as Discord lists them). */
  async messagesAfter(channel: string, after: string, signal: AbortSignal): Promise<DiscordMessage[]> {
    return (await this.client().get(`/channels/${channel}/messages`, {
      query: new URLSearchParams({ after, limit: '100' }),
      signal,
    })) as DiscordMessage[];
  }

  /** Answers an interaction (its own token authorizes it, not the bot's). */
  async interactionCallback(
    interaction: string,
    token: string,
    body: { type: number; data?: Record<string, unknown> },
    signal: AbortSignal,
  ): Promise<void> {
    await this.client().post(`/interactions/${interaction}/${token}/callback`, { body, auth: false, signal });
  }
}

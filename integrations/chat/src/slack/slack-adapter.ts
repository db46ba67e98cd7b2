import { ErrorCode, type WebClient } from '@slack/web-api';
import type {
  ChannelAdapter,
  ChannelButton,
  ChannelDelivery,
  ChannelFailure,
  ChannelInbound,
  ChannelSent,
} from '../channels/adapter.ts';
import { splitMrkdwn, toMrkdwn } from './slack-format.ts';

/** What Slack pushes, as Socket Mode hands it over and the Events API webhook spools it: its type and payload. */
export interface SlackEnvelope {
  /** `events_api` (an Events API callback: `payload.event`), `interactive` (a button press: `block_actions`). */
  type: string;
  payload: Record<string, unknown>;
}

/** One envelope received, and how to tell Slack (or the spool) it is handled. */
export interface SlackReceived {
  envelope: SlackEnvelope;
  acknowledge(): Promise<void>;
}

/** Where the adapter's envelopes come from: the Socket Mode connection, or the Events API webhook's spool. */
export interface SlackInbound {
  /** The next envelopes, waiting until some came or `signal` aborts (empty then, or after a reconnect). */
  next(signal: AbortSignal): Promise<SlackReceived[]>;
  close(): Promise<void>;
}

interface SlackMessageEvent {
  type?: string;
  subtype?: string;
  user?: string;
  bot_id?: string;
  text?: string;
  channel?: string;
  channel_type?: string;
  ts?: string;
  thread_ts?: string;
}

interface SlackBlockActions {
  type?: string;
  user?: { id?: string };
  channel?: { id?: string };
  container?: { channel_id?: string; thread_ts?: string };
  message?: { ts?: string; thread_ts?: string };
  response_url?: string;
  actions?: { action_id?: string; value?: string; action_ts?: string }[];
}

/** The thread of a message in a Slack thread: `<channel>/<thread_ts>`; otherwise the channel id alone. */
function threadOf(channel: string, threadTs: string | undefined): string {
  return threadTs ? `${channel}/${threadTs}` : channel;
}

function parseThread(thread: string): { channel: string; threadTs?: string } {
  const [channel = thread, threadTs] = thread.split('/');
  return threadTs ? { channel, threadTs } : { channel };
}

/**
 * Slack behind the channel contract (docs/channels.md, decision 0072): inbound from Socket Mode or the Events API
 * (a {@link SlackInbound}), outbound by the Web API (`chat.postMessage`, `chat.update`), approvals as Block Kit
 * buttons. Direct messages (`message.im`) and the one channel `slack.channel_id` (its messages and `app_mention`s)
 * are read; other channels' messages are `shared` (ignored, logged by user id). A message's id is
 * `sk-<channel>-<ts>`: the same on a Slack retry or a redelivery of its envelope, and the same for the `message` and
 * the `app_mention` event of one post, so a post is one inbox message whichever events the app subscribes to.
 * A sent message's id is `<channel> <ts>` (the channel as Slack resolved it: a DM opened by user id).
 */
export class SlackAdapter implements ChannelAdapter {
  readonly name = 'slack';
  readonly label = 'Slack';
  readonly credentials = 'tokens';
  /**
   * Slack takes 40,000 characters of `text`, but a Block Kit section only 3,000, and long messages are cut behind
   * "show more": every message (the approvals' sections too) is kept to 3,000.
   */
  readonly maxMessageChars = 3000;
  /** `chat.update` is Tier 3 (about 50 a minute per workspace): about one edit a second per stream. */
  readonly editIntervalMs = 1_200;

  readonly #web: WebClient;
  readonly #inbound: SlackInbound;
  readonly #channelId: string | undefined;
  readonly #received = new WeakMap<ChannelDelivery, SlackReceived>();
  #botUserId: string | undefined;

  constructor(options: { web: WebClient; inbound: SlackInbound; channelId?: string | undefined }) {
    this.#web = options.web;
    this.#inbound = options.inbound;
    this.#channelId = options.channelId === '' ? undefined : options.channelId;
  }

  async receive(options: { cursor: number; signal: AbortSignal }): Promise<ChannelDelivery[]> {
    // The bot token is checked (and the bot's own user id learned) before anything is taken in.
    this.#botUserId ??= (await this.#web.auth.test()).user_id ?? '';
    const received = await this.#inbound.next(options.signal);
    return received.map((one) => {
      const delivery: ChannelDelivery = { event: this.#event(one.envelope) };
      this.#received.set(delivery, one);
      return delivery;
    });
  }

  /** The runner stored it: Slack (or the spool) is told, and does not hand it out again. */
  async acknowledge(delivery: ChannelDelivery): Promise<void> {
    await this.#received.get(delivery)?.acknowledge();
  }

  async close(): Promise<void> {
    await this.#inbound.close();
  }

  #event(envelope: SlackEnvelope): ChannelInbound {
    const payload = envelope.payload;
    if (envelope.type === 'interactive') return this.#press(payload as SlackBlockActions);
    const eventId = typeof payload.event_id === 'string' ? payload.event_id : 'unknown';
    const event = (payload.event ?? {}) as SlackMessageEvent;
    if (envelope.type !== 'events_api' || (event.type !== 'message' && event.type !== 'app_mention')) {
      return { kind: 'other', id: `sk-event-${eventId}` };
    }
    const { channel, ts, user } = event;
    if (channel === undefined || ts === undefined) return { kind: 'other', id: `sk-event-${eventId}` };
    const id = `sk-${channel}-${ts}`;
    // Edits, joins, bots (this one included) are not messages to answer.
    if (event.subtype !== undefined || event.bot_id !== undefined || user === undefined || user === this.#botUserId) {
      return { kind: 'other', id };
    }
    const direct = event.channel_type === 'im';
    const configured = channel === this.#channelId;
    let text = event.text;
    if (configured && this.#botUserId) text = text?.replaceAll(`<@${this.#botUserId}>`, '').trim();
    return {
      kind: 'message',
      id,
      peer: user,
      thread: threadOf(channel, event.thread_ts),
      ...(direct || configured ? {} : { shared: event.channel_type ?? 'channel' }),
      text: text === undefined ? undefined : unescapeSlack(text),
    };
  }

  #press(payload: SlackBlockActions): ChannelInbound {
    const action = payload.actions?.[0];
    const user = payload.user?.id;
    const channel = payload.channel?.id ?? payload.container?.channel_id;
    if (payload.type !== 'block_actions' || !action || user === undefined || channel === undefined) {
      return { kind: 'other', id: `sk-interactive-${action?.action_ts ?? 'unknown'}` };
    }
    return {
      kind: 'press',
      // One press is one action_ts of one user: a redelivered envelope carries the same.
      id: `skp-${user}-${action.action_ts ?? ''}`,
      peer: user,
      thread: threadOf(channel, payload.message?.thread_ts ?? payload.container?.thread_ts),
      data: action.value ?? '',
      callback: payload.response_url ?? '',
    };
  }

  async send(options: { thread: string; text: string; signal: AbortSignal }): Promise<ChannelSent> {
    const { channel, threadTs } = parseThread(options.thread);
    const sent = await this.#web.chat.postMessage({
      channel,
      text: options.text,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      unfurl_links: false,
    });
    return { id: `${sent.channel ?? channel} ${sent.ts ?? ''}` };
  }

  /**
   * Block Kit: the text in a plain-text section (it is the canonical rendering of an approval, shown as it is), and
   * an actions block with a button per choice, its `value` the runner's data. `text` is the notification's fallback.
   */
  async sendButtons(options: {
    thread: string;
    text: string;
    buttons: readonly ChannelButton[];
    signal: AbortSignal;
  }): Promise<ChannelSent> {
    const { channel, threadTs } = parseThread(options.thread);
    const sent = await this.#web.chat.postMessage({
      channel,
      text: options.text,
      ...(threadTs ? { thread_ts: threadTs } : {}),
      blocks: [
        { type: 'section', text: { type: 'plain_text', text: options.text, emoji: true } },
        {
          type: 'actions',
          elements: options.buttons.map((button, index) => ({
            type: 'button',
            action_id: `assistant-${index}`,
            text: { type: 'plain_text', text: button.label, emoji: true },
            value: button.data,
            ...(button.data.startsWith('ap:a:') ? { style: 'primary' } : {}),
            ...(button.data.startsWith('ap:r:') ? { style: 'danger' } : {}),
          })),
        },
      ],
    });
    return { id: `${sent.channel ?? channel} ${sent.ts ?? ''}` };
  }

  async edit(options: { thread: string; message: string; text: string; signal: AbortSignal }): Promise<void> {
    const [channel = '', ts = ''] = options.message.split(' ');
    await this.#web.chat.update({ channel, ts, text: options.text });
  }

  /** Slack has no "typing…" for apps outside the legacy RTM API: nothing is shown. */
  async typing(): Promise<void> {}

  /** `chat.postMessage` to a user id posts in the app's direct conversation with them. */
  directThread(peer: string): string {
    return peer;
  }

  format(markdown: string): string {
    return toMrkdwn(markdown);
  }

  split(text: string): string[] {
    return splitMrkdwn(text, this.maxMessageChars);
  }

  classify(error: unknown): ChannelFailure {
    return classifySlackError(error);
  }
}

const badTokens = new Set(['invalid_auth', 'not_authed', 'account_inactive', 'token_revoked', 'token_expired']);

/** How a Web API (or Socket Mode) failure is taken; the message names the error, never a token. */
export function classifySlackError(error: unknown): ChannelFailure {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (code === ErrorCode.PlatformError) {
    const slackError = String((error as { data?: { error?: unknown } }).data?.error ?? '');
    if (badTokens.has(slackError)) {
      return {
        kind: 'bad_credentials',
        message: `Slack refused the tokens (${slackError}): check slack.bot_token and slack.app_token`,
      };
    }
    if (slackError === 'ratelimited') return { kind: 'transient' };
    return { kind: 'refused' };
  }
  if (code === ErrorCode.RateLimitedError) {
    const seconds = Number((error as { retryAfter?: unknown }).retryAfter);
    return Number.isFinite(seconds) ? { kind: 'transient', retryAfterMs: seconds * 1000 } : { kind: 'transient' };
  }
  if (code === ErrorCode.HTTPError) {
    const status = Number((error as { statusCode?: unknown }).statusCode);
    return status >= 500 || status === 408 ? { kind: 'transient' } : { kind: 'refused' };
  }
  // Network failures (RequestError), a socket that closed, anything unforeseen: an outage, retried.
  return { kind: 'transient' };
}

/** Slack escapes `&`, `<` and `>` in message text: the stored message has them as written. */
function unescapeSlack(text: string): string {
  return text.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&amp;', '&');
}

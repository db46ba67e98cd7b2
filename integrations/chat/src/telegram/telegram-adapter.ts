import type {
  ChannelAdapter,
  ChannelButton,
  ChannelDelivery,
  ChannelFailure,
  ChannelPress,
  ChannelSent,
} from '../channels/adapter.ts';
import { TelegramApiError, type TelegramBotApi } from './bot-api.ts';

/**
 * Telegram behind the channel contract (docs/channels.md): the Bot API's long polling (`getUpdates`, the cursor
 * being its `offset`), plain-text messages of at most 4096 characters edited for streaming, "typing…" by
 * `sendChatAction`. A message's id is `tg-<update_id>`, the same on every delivery of the update.
 */
export class TelegramAdapter implements ChannelAdapter {
  readonly name = 'telegram';
  readonly label = 'Telegram';
  readonly credentials = 'bot token';
  readonly maxMessageChars = 4096;
  /** Telegram limits edits of one message to about one a second. */
  readonly editIntervalMs = 1_000;
  readonly #api: TelegramBotApi;
  readonly #pollTimeoutSeconds: number;

  constructor(options: { api: TelegramBotApi; pollTimeoutSeconds: number }) {
    this.#api = options.api;
    this.#pollTimeoutSeconds = options.pollTimeoutSeconds;
  }

  async receive(options: { cursor: number; signal: AbortSignal }): Promise<ChannelDelivery[]> {
    const updates = await this.#api.getUpdates(
      { offset: options.cursor, timeoutSeconds: this.#pollTimeoutSeconds },
      options.signal,
    );
    return updates.map((update): ChannelDelivery => {
      const id = `tg-${update.update_id}`;
      const cursor = update.update_id + 1;
      const press = update.callback_query;
      if (press?.message && press.data !== undefined) {
        return {
          event: {
            kind: 'press',
            id,
            peer: String(press.from.id),
            thread: String(press.message.chat.id),
            data: press.data,
            callback: press.id,
          },
          cursor,
        };
      }
      const message = update.message;
      if (!message?.from) return { event: { kind: 'other', id }, cursor };
      const type = message.chat.type;
      return {
        event: {
          kind: 'message',
          id,
          peer: String(message.from.id),
          thread: String(message.chat.id),
          ...(type !== undefined && type !== 'private' ? { shared: type } : {}),
          text: message.text,
        },
        cursor,
      };
    });
  }

  async send(options: { thread: string; text: string; signal: AbortSignal }): Promise<ChannelSent> {
    const sent = await this.#api.sendMessage(Number(options.thread), options.text, options.signal);
    return { id: String(sent.message_id) };
  }

  /** An inline keyboard of one row. */
  async sendButtons(options: {
    thread: string;
    text: string;
    buttons: readonly ChannelButton[];
    signal: AbortSignal;
  }): Promise<ChannelSent> {
    const buttons = options.buttons.map((button) => ({ text: button.label, callback_data: button.data }));
    const sent = await this.#api.sendMessage(Number(options.thread), options.text, options.signal, buttons);
    return { id: String(sent.message_id) };
  }

  async answerPress(options: { press: ChannelPress; text: string; signal: AbortSignal }): Promise<void> {
    await this.#api.answerCallbackQuery(options.press.callback, options.text, options.signal);
  }

  async edit(options: { thread: string; message: string; text: string; signal: AbortSignal }): Promise<void> {
    try {
      await this.#api.editMessageText(Number(options.thread), Number(options.message), options.text, options.signal);
    } catch (error) {
      // Showing that text already is what was asked.
      if (error instanceof TelegramApiError && /not modified/i.test(error.description)) return;
      throw error;
    }
  }

  async typing(options: { thread: string; signal: AbortSignal }): Promise<void> {
    await this.#api.sendChatAction(Number(options.thread), 'typing', options.signal);
  }

  /** A user's private chat with the bot has the user's id. */
  directThread(peer: string): string {
    return peer;
  }

  /**
   * Plain text, as the model wrote it: messages go without `parse_mode`, so markdown shows as typed and nothing
   * the model writes can break a message's markup. (MarkdownV2 is planned: docs/channels.md.)
   */
  format(markdown: string): string {
    return markdown;
  }

  classify(error: unknown): ChannelFailure {
    if (!(error instanceof TelegramApiError)) return { kind: 'transient' };
    if (error.badToken) {
      return {
        kind: 'bad_credentials',
        message: `Telegram refused the bot token (${error.status} ${error.description}): check telegram.token`,
      };
    }
    if (!error.transient) return { kind: 'refused' };
    return error.retryAfter === undefined
      ? { kind: 'transient' }
      : { kind: 'transient', retryAfterMs: error.retryAfter * 1000 };
  }
}

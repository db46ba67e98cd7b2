import type {
  ChannelAdapter,
  ChannelButton,
  ChannelDelivery,
  ChannelFailure,
  ChannelPress,
  ChannelSent,
} from '../channels/adapter.ts';
import { codeBlockHtml, escapeHtml, htmlToText, markdownToHtml, splitHtml, utf16Length } from '../channels/markdown.ts';
import { TelegramApiError, type TelegramBotApi, type TelegramInlineButton } from './bot-api.ts';

/**
 * Telegram behind the channel contract (docs/channels.md): the Bot API's long polling (`getUpdates`, the cursor
 * being its `offset`), messages in Telegram's HTML (`parse_mode: HTML`) of at most 4096 characters of text edited
 * for streaming, "typing…" by `sendChatAction`. A message's id is `tg-<update_id>`, the same on every delivery of
 * the update. A text Telegram cannot parse ("can't parse entities") goes again as the plain text it shows.
 */
export class TelegramAdapter implements ChannelAdapter {
  readonly name = 'telegram';
  readonly label = 'Telegram';
  readonly credentials = 'bot token';
  /**
   * Telegram counts a message's text after its entities are parsed (the markup does not count), up to 4096; the
   * split counts UTF-16 code units (the unit of entity offsets: an emoji beyond the BMP is two), never more than
   * Telegram's count whichever unit it uses.
   */
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
    const sent = await this.#sendMessage(options.thread, options.text, options.signal);
    return { id: String(sent.message_id) };
  }

  /** Sends HTML; when Telegram cannot parse it, the text it shows, plain: the message is not lost. */
  async #sendMessage(thread: string, text: string, signal: AbortSignal, buttons?: readonly TelegramInlineButton[]) {
    try {
      return await this.#api.sendMessage(Number(thread), text, signal, buttons, { html: true });
    } catch (error) {
      if (!unparsable(error)) throw error;
      return await this.#api.sendMessage(Number(thread), htmlToText(text), signal, buttons);
    }
  }

  /** An inline keyboard of one row. */
  async sendButtons(options: {
    thread: string;
    text: string;
    buttons: readonly ChannelButton[];
    signal: AbortSignal;
  }): Promise<ChannelSent> {
    const buttons = options.buttons.map((button) => ({ text: button.label, callback_data: button.data }));
    const sent = await this.#sendMessage(options.thread, options.text, options.signal, buttons);
    return { id: String(sent.message_id) };
  }

  async answerPress(options: { press: ChannelPress; text: string; signal: AbortSignal }): Promise<void> {
    await this.#api.answerCallbackQuery(options.press.callback, options.text, options.signal);
  }

  async edit(options: { thread: string; message: string; text: string; signal: AbortSignal }): Promise<void> {
    const edit = (text: string, html: boolean) =>
      this.#api.editMessageText(Number(options.thread), Number(options.message), text, options.signal, { html });
    try {
      try {
        await edit(options.text, true);
      } catch (error) {
        if (!unparsable(error)) throw error;
        await edit(htmlToText(options.text), false);
      }
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
   * Markdown as Telegram's HTML (channels/markdown.ts): bold, italic, strikethrough, code, code blocks with their
   * language, http(s) links, quotes; lists as `•` lines, headings bold. Everything else escaped.
   */
  format(markdown: string): string {
    return markdownToHtml(markdown, 'telegram');
  }

  escape(text: string): string {
    return escapeHtml(text);
  }

  codeBlock(text: string): string {
    return codeBlockHtml(text, 'telegram');
  }

  /** At most 4096 UTF-16 code units of text each, the tags open at a cut closed and opened again. */
  split(text: string): string[] {
    return splitHtml(text, { maxChars: this.maxMessageChars, flavour: 'telegram', measure: utf16Length });
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

/**
 * Telegram refused a text's markup: 400 "Bad Request: can't parse entities: …", or "ENTITIES_TOO_LONG" (more markup
 * than it takes in one message).
 */
function unparsable(error: unknown): boolean {
  return (
    error instanceof TelegramApiError &&
    error.status === 400 &&
    /can't parse entities|entities_too_long/i.test(error.description)
  );
}

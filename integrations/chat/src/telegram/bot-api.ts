/**
 * The few Telegram Bot API methods the listener uses, over fetch. The token is part of every URL
 * (`<api root>/bot<token>/<method>`), so no URL ever goes into an error message: errors name the method, the HTTP
 * status and Telegram's description only.
 */

/** The part of a Telegram update the listener reads. */
export interface TelegramUpdate {
  update_id: number;
  message?: TelegramMessage;
  /** A press of an inline keyboard button the bot sent. */
  callback_query?: TelegramCallbackQuery;
}

export interface TelegramCallbackQuery {
  id: string;
  from: { id: number };
  message?: TelegramMessage;
  data?: string;
}

/** One inline keyboard button: its label and what a press sends back (1-64 bytes). */
export interface TelegramInlineButton {
  text: string;
  callback_data: string;
}

export interface TelegramMessage {
  message_id: number;
  from?: { id: number; is_bot?: boolean; first_name?: string; username?: string };
  chat: { id: number; type?: string };
  text?: string;
}

/** Telegram answered with an error (`ok: false`) or a status other than 200. */
export class TelegramApiError extends Error {
  readonly method: string;
  readonly status: number;
  readonly description: string;
  /** For 429: how long Telegram asks to wait, in seconds. */
  readonly retryAfter: number | undefined;

  constructor(options: { method: string; status: number; description: string; retryAfter?: number | undefined }) {
    super(`Telegram ${options.method} failed: ${options.status} ${options.description}`);
    this.name = 'TelegramApiError';
    this.method = options.method;
    this.status = options.status;
    this.description = options.description;
    this.retryAfter = options.retryAfter;
  }

  /** 401 or 404 on the bot path: the token is wrong or revoked. */
  get badToken(): boolean {
    return this.status === 401 || this.status === 404;
  }

  /** Worth trying again: rate limits and Telegram's own troubles. */
  get transient(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

/** The Bot API could not be reached, or did not answer in time. */
export class TelegramNetworkError extends Error {
  constructor(method: string, reason: string) {
    super(`Telegram ${method} did not answer: ${reason}`);
    this.name = 'TelegramNetworkError';
  }
}

export interface TelegramBotApiOptions {
  /** `https://api.telegram.org`, or a local fake's root in tests. */
  apiRoot: string;
  token: string;
  /** A request without an answer after this long fails (long polls add their own timeout). @default 30000 */
  requestTimeoutMs?: number;
}

export class TelegramBotApi {
  readonly #root: string;
  readonly #token: string;
  readonly #requestTimeoutMs: number;

  constructor(options: TelegramBotApiOptions) {
    this.#root = options.apiRoot.replace(/\/+$/, '');
    this.#token = options.token;
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  }

  /** Calls a method with JSON parameters; returns its `result`. */
  async call<T>(
    method: string,
    params: Record<string, unknown>,
    options: { signal: AbortSignal; timeoutMs?: number },
  ): Promise<T> {
    const timeout = AbortSignal.timeout(options.timeoutMs ?? this.#requestTimeoutMs);
    let response: Response;
    let body: unknown;
    try {
      response = await fetch(`${this.#root}/bot${this.#token}/${method}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(params),
        signal: AbortSignal.any([options.signal, timeout]),
      });
      body = await response.json().catch(() => undefined);
    } catch (error) {
      if (options.signal.aborted) throw options.signal.reason ?? error;
      throw new TelegramNetworkError(method, timeout.aborted ? 'timed out' : networkReason(error));
    }
    const answer = (body ?? {}) as {
      ok?: boolean;
      result?: unknown;
      description?: unknown;
      parameters?: { retry_after?: unknown };
    };
    if (!response.ok || answer.ok !== true) {
      const retryAfter = answer.parameters?.retry_after;
      throw new TelegramApiError({
        method,
        status: response.status,
        description: typeof answer.description === 'string' ? answer.description : response.statusText,
        retryAfter: typeof retryAfter === 'number' ? retryAfter : undefined,
      });
    }
    return answer.result as T;
  }

  getUpdates(options: { offset: number; timeoutSeconds: number }, signal: AbortSignal): Promise<TelegramUpdate[]> {
    return this.call<TelegramUpdate[]>(
      'getUpdates',
      { offset: options.offset, timeout: options.timeoutSeconds, allowed_updates: ['message', 'callback_query'] },
      { signal, timeoutMs: options.timeoutSeconds * 1000 + 15_000 },
    );
  }

  /**
   * Sends a text message, with one row of inline keyboard buttons when `buttons` is given; `html` sends it with
   * `parse_mode: HTML`.
   */
  sendMessage(
    chatId: number,
    text: string,
    signal: AbortSignal,
    buttons?: readonly TelegramInlineButton[],
    options: { html?: boolean } = {},
  ): Promise<TelegramMessage> {
    return this.call<TelegramMessage>(
      'sendMessage',
      {
        chat_id: chatId,
        text,
        ...(options.html ? { parse_mode: 'HTML' } : {}),
        ...(buttons ? { reply_markup: { inline_keyboard: [buttons] } } : {}),
      },
      { signal },
    );
  }

  /** Answers a button press: the button stops spinning and `text` shows briefly. */
  answerCallbackQuery(callbackQueryId: string, text: string, signal: AbortSignal): Promise<unknown> {
    return this.call('answerCallbackQuery', { callback_query_id: callbackQueryId, text }, { signal });
  }

  editMessageText(
    chatId: number,
    messageId: number,
    text: string,
    signal: AbortSignal,
    options: { html?: boolean } = {},
  ): Promise<unknown> {
    return this.call(
      'editMessageText',
      { chat_id: chatId, message_id: messageId, text, ...(options.html ? { parse_mode: 'HTML' } : {}) },
      { signal },
    );
  }

  sendChatAction(chatId: number, action: 'typing', signal: AbortSignal): Promise<unknown> {
    return this.call('sendChatAction', { chat_id: chatId, action }, { signal });
  }
}

// undici's "fetch failed" hides the reason in `cause` (ECONNREFUSED, ENOTFOUND…); neither carries the URL's path.
function networkReason(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message.replace(/https?:\/\/\S+/g, '<url>');
  return error instanceof Error ? error.message.replace(/https?:\/\/\S+/g, '<url>') : String(error);
}

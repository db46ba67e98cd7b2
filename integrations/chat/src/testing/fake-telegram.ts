import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';

/** A Telegram user as the fake sends it in an update. */
export interface FakeTelegramUser {
  id: number;
  first_name?: string;
  username?: string;
}

/** What a test queues: one message from a user (`chat` defaults to the user's private chat). */
export interface FakeIncoming {
  from: number | FakeTelegramUser;
  chat?: number;
  text?: string;
}

/** A message the bot sent, with every text it was edited to (`texts[0]` as sent, the last one current). */
export interface FakeSentMessage {
  message_id: number;
  chat_id: number;
  texts: string[];
  /** The current text: the last of `texts`. */
  text: string;
  /** Its inline keyboard's buttons (`reply_markup.inline_keyboard`, rows flattened); empty without one. */
  buttons: { text: string; callback_data: string }[];
}

/** One Bot API call as the fake received it (the method and its parameters; never the token). */
export interface FakeTelegramCall {
  method: string;
  params: Record<string, unknown>;
}

/** An answer a test scripts for the next call of a method: an HTTP error as Telegram sends them. */
export interface FakeTelegramFailure {
  status: number;
  description?: string;
  /** For 429: `parameters.retry_after` in seconds. */
  retryAfter?: number;
}

interface Update {
  update_id: number;
  callback_query?: {
    id: string;
    from: FakeTelegramUser & { is_bot: false };
    message: { message_id: number; chat: { id: number; type: string }; text: string };
    data: string;
  };
  message?: {
    message_id: number;
    date: number;
    from: FakeTelegramUser & { is_bot: false };
    chat: { id: number; type: string };
    text?: string;
  };
}

const maxTextLength = 4096;

/**
 * A local fake of the Telegram Bot API for tests only (never a product default): `getUpdates` with long polling,
 * `sendMessage` (with an inline keyboard), `editMessageText`, `sendChatAction`, `answerCallbackQuery`, `getMe`, at `<apiRoot>/bot<token>/<method>` on 127.0.0.1.
 * A wrong token is 401 like Telegram's; {@link down} makes it answer 502 to everything. The test queues updates with {@link send} and reads what the bot sent.
 *
 * @example
 * await using fake = await FakeTelegram.start({ token: '123:abc' });
 * fake.send({ from: 42, text: 'hello' });
 * // settings: {telegram: {token, api_root: fake.apiRoot, allowed_users: [42]}}
 */
export class FakeTelegram {
  /** The `api_root` setting to give the listener, e.g. `http://127.0.0.1:43123`. */
  readonly apiRoot: string;
  readonly token: string;
  /** Every call with the right token, in order. */
  readonly calls: FakeTelegramCall[] = [];
  /** Every message the bot sent, in order. */
  readonly sent: FakeSentMessage[] = [];
  /** How many calls were refused for a wrong token. */
  unauthorized = 0;
  /**
   * While true the platform is down: every call (any token) answers 502 Bad Gateway, as Telegram behind a failing
   * proxy does; set it back to false and it answers again.
   */
  down = false;

  readonly #app: FastifyInstance;
  readonly #updates: Update[] = [];
  readonly #redelivered: Update[] = [];
  readonly #failures = new Map<string, FakeTelegramFailure[]>();
  readonly #waiters = new Set<() => void>();
  readonly #closing = new AbortController();
  #nextUpdateId = 100_000;
  #nextMessageId = 1;
  #closed: Promise<void> | undefined;

  private constructor(app: FastifyInstance, apiRoot: string, token: string) {
    this.#app = app;
    this.apiRoot = apiRoot;
    this.token = token;
  }

  /** Starts the fake on 127.0.0.1 on a free port. */
  static async start(options: { token?: string } = {}): Promise<FakeTelegram> {
    const token = options.token ?? '123456:fake-telegram-token';
    const app = Fastify({ logger: false, forceCloseConnections: true });
    let fake: FakeTelegram | undefined;
    const handle = async (request: FastifyRequest, reply: FastifyReply) => {
      if (fake === undefined) throw new Error('The fake Telegram answered before it finished starting.');
      return fake.#handle(request, reply);
    };
    app.get('/:bot/:method', handle);
    app.post('/:bot/:method', handle);
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    if (address === null || typeof address === 'string') {
      await app.close();
      throw new Error(`The fake Telegram expected a TCP address, got ${String(address)}.`);
    }
    fake = new FakeTelegram(app, `http://127.0.0.1:${address.port}`, token);
    return fake;
  }

  /** Queues a message from a user as the next update; returns its update id. */
  send(incoming: FakeIncoming): number {
    const from = typeof incoming.from === 'number' ? { id: incoming.from } : incoming.from;
    const update: Update = {
      update_id: this.#nextUpdateId++,
      message: {
        message_id: this.#nextMessageId++,
        date: Math.floor(Date.now() / 1000),
        from: { first_name: `user ${from.id}`, ...from, is_bot: false },
        chat: { id: incoming.chat ?? from.id, type: incoming.chat === undefined ? 'private' : 'group' },
        ...(incoming.text === undefined ? {} : { text: incoming.text }),
      },
    };
    this.#updates.push(update);
    this.#wake();
    return update.update_id;
  }

  /**
   * Queues a press of a button of a message the bot sent, as the next update (a `callback_query`); returns its
   * update id. `button` is the button's label or its `callback_data`.
   */
  press(options: { from: number; message: FakeSentMessage; button: string }): number {
    const button = options.message.buttons.find(
      (one) => one.text === options.button || one.callback_data === options.button,
    );
    if (!button) throw new Error(`message ${options.message.message_id} has no button ${options.button}`);
    const update: Update = {
      update_id: this.#nextUpdateId++,
      callback_query: {
        id: `cq-${this.#nextUpdateId}`,
        from: { id: options.from, first_name: `user ${options.from}`, is_bot: false },
        message: {
          message_id: options.message.message_id,
          chat: { id: options.message.chat_id, type: 'private' },
          text: options.message.text,
        },
        data: button.callback_data,
      },
    };
    this.#updates.push(update);
    this.#wake();
    return update.update_id;
  }

  /**
   * Delivers an update again, as Telegram does when the bot's confirmation (the next `offset`) did not arrive. Its
   * copy is handed out even to a poll whose offset is past it.
   */
  redeliver(updateId: number): void {
    const update = this.#all.get(updateId);
    if (!update) throw new Error(`no update ${updateId} was sent`);
    this.#redelivered.push(update);
    this.#wake();
  }

  /** Makes the next call(s) of `method` fail with an HTTP error (in order, one per call). */
  fail(method: string, ...failures: FakeTelegramFailure[]): void {
    this.#failures.set(method, [...(this.#failures.get(method) ?? []), ...failures]);
  }

  /** The messages sent to a chat, in order. */
  messagesTo(chatId: number): FakeSentMessage[] {
    return this.sent.filter((message) => message.chat_id === chatId);
  }

  /** The calls of one method, in order. */
  callsOf(method: string): FakeTelegramCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing.abort();
      this.#wake();
      await this.#app.close();
    })();
    return this.#closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  get #all(): Map<number, Update> {
    return new Map(this.#updates.map((update) => [update.update_id, update]));
  }

  #wake(): void {
    for (const wake of this.#waiters) wake();
  }

  async #handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const { bot, method } = request.params as { bot: string; method: string };
    if (this.down) return reply.code(502).send({ ok: false, error_code: 502, description: 'Bad Gateway' });
    if (bot !== `bot${this.token}`) {
      this.unauthorized += 1;
      return reply.code(401).send({ ok: false, error_code: 401, description: 'Unauthorized' });
    }
    const params = {
      ...(request.query as Record<string, unknown>),
      ...(request.body && typeof request.body === 'object' ? (request.body as Record<string, unknown>) : {}),
    };
    this.calls.push({ method, params });
    const failure = this.#failures.get(method)?.shift();
    if (failure) {
      return reply.code(failure.status).send({
        ok: false,
        error_code: failure.status,
        description: failure.description ?? `fake error ${failure.status}`,
        ...(failure.retryAfter === undefined ? {} : { parameters: { retry_after: failure.retryAfter } }),
      });
    }
    switch (method) {
      case 'getMe':
        return { ok: true, result: { id: Number(this.token.split(':')[0]), is_bot: true, first_name: 'Fake bot' } };
      case 'getUpdates':
        return { ok: true, result: await this.#getUpdates(params, request) };
      case 'sendChatAction':
      case 'answerCallbackQuery':
        return { ok: true, result: true };
      case 'sendMessage':
        return this.#sendMessage(params, reply);
      case 'editMessageText':
        return this.#editMessageText(params, reply);
      default:
        return reply.code(404).send({ ok: false, error_code: 404, description: 'Not Found' });
    }
  }

  async #getUpdates(params: Record<string, unknown>, request: FastifyRequest): Promise<Update[]> {
    const offset = Number(params.offset ?? 0);
    const timeoutSeconds = Math.max(0, Number(params.timeout ?? 0));
    const available = () => [...this.#redelivered, ...this.#updates.filter((update) => update.update_id >= offset)];
    const deadline = Date.now() + timeoutSeconds * 1000;
    while (available().length === 0 && Date.now() < deadline && !this.#closing.signal.aborted) {
      if (request.raw.destroyed) break;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.#waiters.delete(done);
          request.raw.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, deadline - Date.now()));
        this.#waiters.add(done);
        request.raw.once('close', done);
      });
    }
    const result = available();
    this.#redelivered.length = 0;
    return result;
  }

  #sendMessage(params: Record<string, unknown>, reply: FastifyReply): unknown {
    const chatId = Number(params.chat_id);
    const text = String(params.text ?? '');
    const problem = checkText(text);
    if (problem) return reply.code(400).send({ ok: false, error_code: 400, description: problem });
    const keyboard = (params.reply_markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
    const buttons = Array.isArray(keyboard) ? (keyboard.flat() as FakeSentMessage['buttons']) : [];
    for (const button of buttons) {
      if (typeof button?.text !== 'string' || typeof button.callback_data !== 'string')
        return reply.code(400).send({ ok: false, error_code: 400, description: 'Bad Request: button without data' });
      if (Buffer.byteLength(button.callback_data) > 64)
        return reply.code(400).send({ ok: false, error_code: 400, description: 'Bad Request: BUTTON_DATA_INVALID' });
    }
    const message: FakeSentMessage = {
      message_id: this.#nextMessageId++,
      chat_id: chatId,
      texts: [text],
      text,
      buttons,
    };
    this.sent.push(message);
    return { ok: true, result: { message_id: message.message_id, chat: { id: chatId }, date: 0, text } };
  }

  #editMessageText(params: Record<string, unknown>, reply: FastifyReply): unknown {
    const chatId = Number(params.chat_id);
    const text = String(params.text ?? '');
    const message = this.sent.find(
      (candidate) => candidate.chat_id === chatId && candidate.message_id === Number(params.message_id),
    );
    if (!message)
      return reply
        .code(400)
        .send({ ok: false, error_code: 400, description: 'Bad Request: message to edit not found' });
    const problem = checkText(text);
    if (problem) return reply.code(400).send({ ok: false, error_code: 400, description: problem });
    if (message.text === text) {
      return reply.code(400).send({
        ok: false,
        error_code: 400,
        description:
          'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
      });
    }
    message.texts.push(text);
    message.text = text;
    return { ok: true, result: { message_id: message.message_id, chat: { id: chatId }, date: 0, text } };
  }
}

function checkText(text: string): string | undefined {
  if (text.trim() === '') return 'Bad Request: message text is empty';
  if (Array.from(text).length > maxTextLength) return 'Bad Request: message is too long';
  return undefined;
}

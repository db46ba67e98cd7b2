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

/**
 * A message the bot sent, with every text it was edited to (`texts[0]` as sent, the last one current): the text a
 * user sees, its HTML markup parsed (`parse_mode: HTML`) as Telegram parses it.
 */
export interface FakeSentMessage {
  message_id: number;
  chat_id: number;
  texts: string[];
  /** The current text: the last of `texts`. */
  text: string;
  /** For each of `texts`, the HTML it was sent as (`parse_mode: HTML`); undefined for a plain text. */
  markup: (string | undefined)[];
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
    const parsed = parseText(params);
    if ('problem' in parsed) return reply.code(400).send({ ok: false, error_code: 400, description: parsed.problem });
    const { text, markup } = parsed;
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
      markup: [markup],
      buttons,
    };
    this.sent.push(message);
    return { ok: true, result: { message_id: message.message_id, chat: { id: chatId }, date: 0, text } };
  }

  #editMessageText(params: Record<string, unknown>, reply: FastifyReply): unknown {
    const chatId = Number(params.chat_id);
    const message = this.sent.find(
      (candidate) => candidate.chat_id === chatId && candidate.message_id === Number(params.message_id),
    );
    if (!message)
      return reply
        .code(400)
        .send({ ok: false, error_code: 400, description: 'Bad Request: message to edit not found' });
    const parsed = parseText(params);
    if ('problem' in parsed) return reply.code(400).send({ ok: false, error_code: 400, description: parsed.problem });
    const { text, markup } = parsed;
    if (message.text === text && message.markup.at(-1) === markup) {
      return reply.code(400).send({
        ok: false,
        error_code: 400,
        description:
          'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
      });
    }
    message.texts.push(text);
    message.markup.push(markup);
    message.text = text;
    return { ok: true, result: { message_id: message.message_id, chat: { id: chatId }, date: 0, text } };
  }
}

/**
 * A sendMessage's or editMessageText's text as Telegram takes it: with `parse_mode: HTML`, parsed (a problem is
 * Telegram's 400 "can't parse entities"); then at most 4096 characters of text, counted in UTF-16 code units (the
 * stricter of the counts reported for Telegram), and not empty.
 */
function parseText(
  params: Record<string, unknown>,
): { text: string; markup: string | undefined } | { problem: string } {
  const raw = String(params.text ?? '');
  let text = raw;
  let markup: string | undefined;
  if (params.parse_mode !== undefined) {
    if (params.parse_mode !== 'HTML')
      return { problem: `Bad Request: unsupported parse_mode ${String(params.parse_mode)}` };
    const parsed = parseTelegramHtml(raw);
    if (typeof parsed !== 'string') return { problem: `Bad Request: can't parse entities: ${parsed.problem}` };
    text = parsed;
    markup = raw;
  }
  if (text.trim() === '') return { problem: 'Bad Request: message text is empty' };
  if (text.length > maxTextLength) return { problem: 'Bad Request: message is too long' };
  return { text, markup };
}

/** The tags of Telegram's HTML style, and the attribute each may have. */
const telegramTags: Record<string, RegExp> = {
  b: /^$/,
  strong: /^$/,
  i: /^$/,
  em: /^$/,
  u: /^$/,
  ins: /^$/,
  s: /^$/,
  strike: /^$/,
  del: /^$/,
  'tg-spoiler': /^$/,
  span: /^class="tg-spoiler"$/,
  a: /^href="[^"]*"$/,
  code: /^(?:class="language-[^"\s]+")?$/,
  pre: /^$/,
  blockquote: /^(?:expandable)?$/,
};
/** Formatting that may hold and be held by any entity but code and pre. */
const styleTags = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'tg-spoiler', 'span']);

/**
 * Parses Telegram's HTML style (core.telegram.org/bots/api#html-style) as strictly as Telegram: only its tags and
 * attributes, closed in order, `&lt; &gt; &amp; &quot;` and numeric entities only, every other `<` `>` `&` escaped,
 * and its nesting rules (code and pre hold nothing but `<pre><code class="language-…">`; formatting holds and is held
 * by anything but code and pre; a link holds no link; a quote no quote). The text it shows, or the problem.
 */
export function parseTelegramHtml(html: string): string | { problem: string } {
  const open: { name: string; attributes: string }[] = [];
  let text = '';
  const token = /<(\/?)([a-zA-Z][\w-]*)((?:\s+[^<>]*)?)>|&(#x[0-9a-fA-F]+|#\d+|[a-zA-Z]+);|[^<&>]+|[<&>]/g;
  for (const match of html.matchAll(token)) {
    const [whole, closing, rawName, rawAttributes, entity] = match;
    const at = Buffer.byteLength(html.slice(0, match.index));
    if (rawName === undefined) {
      if (entity !== undefined) {
        const named: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"' };
        if (entity.startsWith('#')) {
          const code = entity.startsWith('#x') ? Number.parseInt(entity.slice(2), 16) : Number(entity.slice(1));
          if (!(code > 0 && code <= 0x10ffff)) return { problem: `Invalid numeric entity at byte offset ${at}` };
          text += String.fromCodePoint(code);
        } else if (named[entity] !== undefined) text += named[entity];
        else return { problem: `Unsupported HTML entity "&${entity};" at byte offset ${at}` };
        continue;
      }
      if (whole === '<' || whole === '&' || whole === '>')
        return { problem: `Character "${whole}" is reserved and must be escaped at byte offset ${at}` };
      text += whole;
      continue;
    }
    const name = rawName.toLowerCase();
    const attributes = (rawAttributes ?? '').trim();
    if (closing) {
      const top = open.pop();
      if (!top) return { problem: `Unexpected end tag at byte offset ${at}` };
      if (top.name !== name)
        return { problem: `Unmatched end tag at byte offset ${at}, expected "</${top.name}>", found "</${name}>"` };
      continue;
    }
    const allowed = telegramTags[name];
    if (!allowed) return { problem: `Unsupported start tag "${name}" at byte offset ${at}` };
    if (!allowed.test(attributes)) return { problem: `Unsupported attribute in tag "${name}" at byte offset ${at}` };
    const parent = open.at(-1);
    const names = open.map((one) => one.name);
    if (names.includes('code') || (names.includes('pre') && !(name === 'code' && parent?.name === 'pre')))
      return { problem: `Entities can't be nested inside code or pre at byte offset ${at}` };
    if (name === 'code' && attributes !== '' && parent?.name !== 'pre')
      return { problem: `A language is only for code inside pre at byte offset ${at}` };
    if ((name === 'code' || name === 'pre') && names.some((one) => one !== 'pre'))
      return { problem: `Code and pre can't be inside other entities at byte offset ${at}` };
    if (name === 'a' && names.includes('a')) return { problem: `Links can't be nested at byte offset ${at}` };
    if (name === 'blockquote' && names.includes('blockquote'))
      return { problem: `Blockquotes can't be nested at byte offset ${at}` };
    if (!styleTags.has(name) && name !== 'code' && names.some((one) => !styleTags.has(one) && one !== 'blockquote'))
      return {
        problem: `Entities "${name}" and "${names.join('", "')}" can't contain each other at byte offset ${at}`,
      };
    open.push({ name, attributes });
  }
  const unclosed = open.at(-1);
  if (unclosed) return { problem: `Can't find end tag corresponding to start tag "${unclosed.name}"` };
  return text;
}

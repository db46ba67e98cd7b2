import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatEvent, ChatEventEntry, ChatService } from '@assistant/chat';
import {
  fitRendering,
  type ListenerApprovalSummary,
  type ListenerApprovals,
  type ListenerContext,
} from '@assistant/sdk';
import type { ChatSettings } from '../settings.generated.ts';
import { TelegramApiError, TelegramBotApi, type TelegramMessage } from './bot-api.ts';
import { type TelegramConversationState, TelegramState } from './telegram-state.ts';

/** The conversations' channel: one conversation per Telegram user (the peer) at a time, `/new` starts another. */
const channel = 'telegram';
/** Telegram's longest message, in characters. */
const maxMessageLength = 4096;
/** A streamed reply is edited at most this often. */
const editIntervalMs = 1_000;
/** The conversation the server's notifier writes to (apps/server/src/chat-notifier.ts). */
const notificationsConversation = 'notifications';

/** How often pending approvals are looked for, to push the new ones. */
const approvalsPollMs = 5_000;
/** Backoff of a failing Bot API: network errors and 5xx double from the first to the last. */
const backoff = { initialMs: 1_000, maxMs: 60_000, badTokenMs: 60_000 };
/** Handling one update (storing its message) fails this often in a row before it is skipped, said and logged. */
const maxUpdateFailures = 8;
/** Attempts of one send before it is given up (logged). */
const sendAttempts = 6;
/** Chat errors a refused message carries: said to the sender, the update is done. */
const refusals = new Set(['CHAT_PENDING_FULL', 'CHAT_MESSAGE_TOO_LARGE', 'CHAT_INPUT_INVALID']);

type Logger = ListenerContext['logger'];

const help = [
  'Write to me and I answer. Commands:',
  '/new — start a new conversation',
  '/stop — stop the reply being written',
  '/approvals — the approval requests waiting for you',
  '/approve ID, /reject ID — decide one',
].join('\n');

/**
 * The `telegram` listener of the chat integration: a Telegram bot over the Bot API's long polling. Messages from
 * `telegram.allowed_users` become chat messages (one conversation per user); replies stream back as a message
 * edited as the tokens arrive. Without `telegram.token` it idles until the server stops.
 */
export async function runTelegram(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<ChatSettings['telegram']> = context.instance.settings.telegram ?? {};
  // Checked first, token or not: a server that does not hand the chat service over is seen at once (/health).
  if (!context.chat) {
    throw new Error('the Telegram listener needs the chat service, which only the builtin chat integration gets');
  }
  const token = settings.token;
  if (!token?.isSet) {
    context.logger.info(`no telegram.token in the settings of ${context.instance.name}: the Telegram bot is off`);
    await untilAborted(context.signal);
    return;
  }
  const allowed = settings.allowed_users ?? [];
  if (allowed.length === 0) {
    context.logger.warn(`telegram.allowed_users of ${context.instance.name} is empty: the bot answers nobody`);
  }
  const state = await TelegramState.load(
    path.join(context.dataDir, 'chat', 'telegram', `${context.instance.name}.json`),
  );
  const bot = new TelegramBot({
    api: new TelegramBotApi({ apiRoot: settings.api_root ?? 'https://api.telegram.org', token: token.reveal() }),
    chat: context.chat,
    ...(context.approvals ? { approvals: context.approvals } : {}),
    state,
    allowedUsers: allowed,
    pollTimeoutSeconds: Math.max(0, Math.round((settings.poll_timeout ?? 30_000) / 1000)),
    logger: context.logger,
    signal: context.signal,
  });
  await bot.run();
}

interface TelegramBotOptions {
  api: TelegramBotApi;
  chat: ChatService;
  approvals?: ListenerApprovals;
  state: TelegramState;
  allowedUsers: readonly number[];
  pollTimeoutSeconds: number;
  logger: Logger;
  signal: AbortSignal;
}

class TelegramBot {
  readonly #api: TelegramBotApi;
  readonly #chat: ChatService;
  readonly #approvals: ListenerApprovals | undefined;
  readonly #state: TelegramState;
  readonly #allowed: Set<number>;
  readonly #pollTimeoutSeconds: number;
  readonly #logger: Logger;
  readonly #signal: AbortSignal;
  readonly #followers = new Map<string, Promise<void>>();
  #badTokenLogged = false;

  constructor(options: TelegramBotOptions) {
    this.#api = options.api;
    this.#chat = options.chat;
    this.#approvals = options.approvals;
    this.#state = options.state;
    this.#allowed = new Set(options.allowedUsers);
    this.#pollTimeoutSeconds = options.pollTimeoutSeconds;
    this.#logger = options.logger;
    this.#signal = options.signal;
  }

  async run(): Promise<void> {
    for (const [id, record] of Object.entries(this.#state.data.conversations)) this.#follow(id, record.chat);
    const notifier = this.#approvals ? this.#notifyApprovals(this.#approvals) : Promise.resolve();
    await this.#poll();
    await Promise.allSettled([...this.#followers.values(), notifier]);
  }

  // ---- inbound: getUpdates ----

  async #poll(): Promise<void> {
    let failures = 0;
    // The update being handled, and how often in a row handling it failed.
    let handling: { id: number; user: number | undefined; failures: number } | undefined;
    while (!this.#signal.aborted) {
      try {
        const updates = await this.#api.getUpdates(
          { offset: this.#state.data.offset, timeoutSeconds: this.#pollTimeoutSeconds },
          this.#signal,
        );
        this.#tokenWorks();
        failures = 0;
        for (const update of updates) {
          if (this.#signal.aborted) break;
          if (handling?.id !== update.update_id)
            handling = { id: update.update_id, user: update.message?.from?.id, failures: 0 };
          if (handling.failures >= maxUpdateFailures) {
            await this.#giveUp(handling);
          } else {
            await this.#handleUpdate(update.update_id, update.message);
          }
          handling = undefined;
          this.#state.data.offset = Math.max(this.#state.data.offset, update.update_id + 1);
          await this.#state.save();
        }
      } catch (error) {
        if (this.#signal.aborted) break;
        failures += 1;
        if (handling) handling.failures += 1;
        const what = handling ? `handling Telegram update ${handling.id}` : undefined;
        await delay(this.#failureWait(error, failures, what), this.#signal);
      }
    }
  }

  /** An update that failed again and again (it is not Telegram's fault): skipped, said to the sender and logged. */
  async #giveUp(handling: { id: number; user: number | undefined; failures: number }): Promise<void> {
    this.#logger.error(`skipped Telegram update ${handling.id}: handling it failed ${handling.failures} times`);
    if (handling.user !== undefined && this.#allowed.has(handling.user)) {
      await this.#send(handling.user, 'Your last message could not be stored (see the server log): send it again.');
    }
  }

  /** How long to wait after a failed call; logs it (a bad token once). */
  #failureWait(error: unknown, failures: number, what?: string): number {
    if (error instanceof TelegramApiError && error.badToken) {
      if (!this.#badTokenLogged) {
        this.#logger.error(
          `Telegram refused the bot token (${error.status} ${error.description}): check telegram.token; trying again every ${backoff.badTokenMs / 1000} s`,
        );
        this.#badTokenLogged = true;
      }
      return backoff.badTokenMs;
    }
    const waitMs =
      error instanceof TelegramApiError && error.retryAfter !== undefined
        ? error.retryAfter * 1000
        : Math.min(backoff.maxMs, backoff.initialMs * 2 ** (failures - 1));
    this.#logger.warn(`${what ? `${what}: ` : ''}${describeError(error)}; trying again in ${waitMs} ms`);
    return waitMs;
  }

  #tokenWorks(): void {
    if (!this.#badTokenLogged) return;
    this.#badTokenLogged = false;
    this.#logger.info('Telegram accepts the bot token again');
  }

  async #handleUpdate(updateId: number, message: TelegramMessage | undefined): Promise<void> {
    // Handled and confirmed before: Telegram delivered it again. (One handled but not yet confirmed when the
    // server died comes back with a higher id than the stored offset: its client id makes it the same message.)
    if (updateId < this.#state.data.offset) return;
    if (!message?.from) return;
    const user = message.from.id;
    if (!this.#allowed.has(user)) {
      // The user id only: what a stranger wrote is nobody's business, not even the log's.
      this.#logger.info(`ignored a Telegram message from user ${user}: not in telegram.allowed_users`);
      return;
    }
    if (message.chat.type !== undefined && message.chat.type !== 'private') {
      this.#logger.info(
        `ignored a Telegram message of user ${user} in a ${message.chat.type} chat: private chats only`,
      );
      return;
    }
    const text = message.text;
    if (text === undefined || text.trim() === '') {
      await this.#send(user, 'I read text messages only.');
      return;
    }
    const command = /^\/([a-z_]+)(?:@\S+)?(?:\s+([\s\S]*))?$/i.exec(text.trim());
    if (command) {
      await this.#command(user, (command[1] ?? '').toLowerCase(), (command[2] ?? '').trim());
      return;
    }
    const conversation = await this.#current(user);
    try {
      const posted = await this.#chat.post(conversation, { text, clientId: `tg-${updateId}` });
      if (!posted.duplicate && posted.delivery !== 'queued') void this.#typing(user);
      if (posted.delivery === 'queued' && !posted.duplicate) {
        await this.#send(user, '(noted: I answer it after the reply I am writing)');
      }
    } catch (error) {
      const code = errorCode(error);
      if (code === undefined || !refusals.has(code)) throw error;
      await this.#send(user, `Your message was not accepted: ${describeError(error)}`);
    }
  }

  async #command(user: number, name: string, argument: string): Promise<void> {
    switch (name) {
      case 'start':
      case 'help':
        await this.#send(user, help);
        return;
      case 'new': {
        const id = await this.#chat.conversationFor({ channel, peer: String(user), fresh: true, title: 'Telegram' });
        await this.#adopt(user, id);
        await this.#send(user, 'A new conversation: what I knew of the last one is left behind.');
        return;
      }
      case 'stop': {
        const stopped = await this.#chat.stop(await this.#current(user), `stopped by Telegram user ${user}`);
        await this.#send(user, stopped.task ? 'Stopping the reply.' : 'Nothing is running.');
        return;
      }
      case 'approvals':
        await this.#listApprovals(user);
        return;
      case 'approve':
      case 'reject':
        await this.#decide(user, name, argument);
        return;
      default:
        await this.#send(user, `I do not know /${name}.\n\n${help}`);
    }
  }

  async #listApprovals(user: number): Promise<void> {
    if (!this.#approvals) return this.#send(user, 'Approvals cannot be decided from this chat.');
    const pending = await this.#approvals.pending();
    if (pending.length === 0) return this.#send(user, 'No approval request is waiting.');
    for (const approval of pending) for (const message of approvalMessages(approval)) await this.#send(user, message);
  }

  async #decide(user: number, decision: 'approve' | 'reject', id: string): Promise<void> {
    if (!this.#approvals) return this.#send(user, 'Approvals cannot be decided from this chat.');
    if (id === '') return this.#send(user, `Say which: /${decision} ap-…`);
    try {
      const result = await this.#approvals.decide(id, decision, `telegram:${user}`);
      await this.#send(
        user,
        decision === 'reject'
          ? `Rejected ${id}: nothing will be done.`
          : result.kind === 'tool_call'
            ? `Approved ${id}: the waiting agent loop runs ${result.actions}.`
            : `Approved ${id}: ${result.actions} for ${result.title}${result.tasks.length === 0 ? ' (taken already)' : ''}.`,
      );
    } catch (error) {
      if (errorCode(error) === undefined) throw error;
      await this.#send(user, `Could not ${decision} ${id}: ${describeError(error)}`);
    }
  }

  /** The user's current conversation: the one recorded, else the newest of the channel and peer, else a new one. */
  async #current(user: number): Promise<string> {
    const recorded = this.#state.data.peers[String(user)];
    if (recorded !== undefined) {
      try {
        await this.#chat.get(recorded);
        return recorded;
      } catch (error) {
        if (errorCode(error) !== 'CHAT_NOT_FOUND') throw error;
      }
    }
    const id = await this.#chat.conversationFor({ channel, peer: String(user), title: 'Telegram' });
    await this.#adopt(user, id);
    return id;
  }

  /** Makes `id` the user's current conversation and follows its events from now on. */
  async #adopt(user: number, id: string): Promise<void> {
    this.#state.data.peers[String(user)] = id;
    this.#state.data.conversations[id] ??= { chat: user, events: await this.#chat.end(id) };
    await this.#state.save();
    this.#follow(id, user);
  }

  // ---- outbound: replies, errors, questions, approvals ----

  #follow(conversation: string, chatId: number): void {
    if (this.#followers.has(conversation) || this.#signal.aborted) return;
    const stream = new ReplyStream({ bot: this, conversation, chatId, state: this.#state });
    const done = (async () => {
      while (!this.#signal.aborted) {
        try {
          const record = this.#state.conversation(conversation);
          for await (const entry of this.#chat.follow(conversation, {
            fromOffset: record?.events ?? 0,
            signal: this.#signal,
          })) {
            await stream.handle(entry);
          }
        } catch (error) {
          if (this.#signal.aborted) break;
          this.#logger.warn(`following conversation ${conversation} failed: ${describeError(error)}; again in 1 s`);
          await stream.reset();
          await delay(1_000, this.#signal);
        }
      }
      stream.close();
    })();
    this.#followers.set(conversation, done);
  }

  async #notifyApprovals(approvals: ListenerApprovals): Promise<void> {
    while (!this.#signal.aborted) {
      try {
        for (const approval of await approvals.pending()) {
          if (this.#signal.aborted) break;
          // Recorded before it is sent: a restart does not push it again.
          if (!this.#state.remember('notified', `approval:${approval.id}`)) continue;
          await this.#state.save();
          for (const user of this.#allowed) {
            for (const message of approvalMessages(approval)) await this.#send(user, message);
          }
        }
        await this.#forwardNotifications();
      } catch (error) {
        if (this.#signal.aborted) break;
        this.#logger.warn(`could not read the pending approvals and notifications: ${describeError(error)}`);
      }
      await delay(approvalsPollMs, this.#signal);
    }
  }

  /**
   * Pushes the questions of agent tasks and the failures the server's notifier wrote to the `notifications`
   * conversation (approvals are pushed above, from the requests themselves). Each is recorded before it is sent;
   * one older than an hour (a bot set up long after) is skipped.
   */
  async #forwardNotifications(): Promise<void> {
    const { entries, next } = await this.#chat.events.read(notificationsConversation, this.#state.data.notifications);
    for (const { event } of entries) {
      const notification = event.notification as { kind?: unknown } | undefined;
      const message = event.message as { id?: unknown; text?: unknown } | undefined;
      if (event.type !== 'message' || typeof message?.id !== 'string' || typeof message.text !== 'string') continue;
      if (notification?.kind !== 'clarification' && notification?.kind !== 'failure') continue;
      if (Date.now() - Date.parse(event.at) > 3_600_000) continue;
      if (!this.#state.remember('notified', `notification:${message.id}`)) continue;
      await this.#state.save();
      for (const user of this.#allowed)
        await this.#send(user, `${notification.kind === 'failure' ? '⚠️' : '❓'} ${message.text}`);
    }
    if (next !== this.#state.data.notifications) {
      this.#state.data.notifications = next;
      await this.#state.save();
    }
  }

  /** Sends a message (retried like every call); the message when it went out. */
  async send(chatId: number, text: string): Promise<{ message_id: number } | undefined> {
    return (await this.retry('sendMessage', () => this.#api.sendMessage(chatId, text, this.#signal)))?.value;
  }

  #send(chatId: number, text: string): Promise<void> {
    return this.send(chatId, clip(text)).then(() => undefined);
  }

  /** Edits a sent message; true when it now shows `text` (also when it did already). */
  async edit(chatId: number, messageId: number, text: string, options: { retry: boolean }): Promise<boolean> {
    const call = async () => {
      try {
        await this.#api.editMessageText(chatId, messageId, text, this.#signal);
      } catch (error) {
        if (error instanceof TelegramApiError && /not modified/i.test(error.description)) return;
        throw error;
      }
    };
    if (!options.retry) {
      try {
        await call();
        return true;
      } catch (error) {
        if (!this.#signal.aborted) this.#logger.debug(`a streaming edit failed: ${describeError(error)}`);
        return false;
      }
    }
    return (await this.retry('editMessageText', call)) !== undefined;
  }

  async #typing(chatId: number): Promise<void> {
    try {
      await this.#api.sendChatAction(chatId, 'typing', this.#signal);
    } catch {
      // Cosmetic: the reply itself is what matters.
    }
  }

  typing(chatId: number): void {
    void this.#typing(chatId);
  }

  /** Calls the Bot API, retrying network errors, 429 and 5xx with backoff; undefined when it gave up. */
  async retry<T>(what: string, call: () => Promise<T>): Promise<{ value: T } | undefined> {
    for (let attempt = 1; !this.#signal.aborted; attempt += 1) {
      try {
        const value = await call();
        this.#tokenWorks();
        return { value };
      } catch (error) {
        if (this.#signal.aborted) return undefined;
        const transient = !(error instanceof TelegramApiError) || error.transient;
        if (!transient || attempt >= sendAttempts) {
          if (error instanceof TelegramApiError && error.badToken) this.#failureWait(error, attempt);
          else this.#logger.warn(`gave up ${what} after ${attempt} attempts: ${describeError(error)}`);
          return undefined;
        }
        await delay(this.#failureWait(error, attempt), this.#signal);
      }
    }
    return undefined;
  }

  get logger(): Logger {
    return this.#logger;
  }
}

/**
 * The replies of one conversation, streamed to its Telegram chat: on the first token of a turn a message is sent,
 * then edited with the text so far at most once a second, and on the assistant's message it gets the final text.
 * Each reply id is recorded as sent (durably, before sending), so it never goes out twice. Everything of one
 * conversation happens in order, one call at a time.
 */
class ReplyStream {
  readonly #bot: TelegramBot;
  readonly #conversation: string;
  readonly #chatId: number;
  readonly #state: TelegramState;
  /** The text of each step of the running turn, as streamed. */
  readonly #steps = new Map<number, string>();
  #chain: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #lastEditMs = 0;

  constructor(options: { bot: TelegramBot; conversation: string; chatId: number; state: TelegramState }) {
    this.#bot = options.bot;
    this.#conversation = options.conversation;
    this.#chatId = options.chatId;
    this.#state = options.state;
  }

  handle(entry: ChatEventEntry): Promise<void> {
    return this.#enqueue(() => this.#handle(entry));
  }

  close(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Forgets the streamed text: the events are about to be read again from the stored offset. */
  reset(): Promise<void> {
    return this.#enqueue(async () => {
      this.#steps.clear();
    });
  }

  #enqueue(work: () => Promise<void>): Promise<void> {
    const next = this.#chain.then(work);
    this.#chain = next.catch((error: unknown) => {
      this.#bot.logger.warn(`conversation ${this.#conversation}: ${describeError(error)}`);
    });
    return this.#chain;
  }

  get #record(): TelegramConversationState {
    const conversations = this.#state.data.conversations;
    const record = conversations[this.#conversation] ?? { chat: this.#chatId, events: 0 };
    conversations[this.#conversation] = record;
    return record;
  }

  /**
   * While a turn is open (its `turn_started` handled, its assistant `message` or `turn_done` not yet), the stored
   * offset stays just after its `turn_started`, whatever comes in between (tokens, steps, a follow-up's `message`,
   * an error, an approval): a restarted listener reads the whole turn again, so the text so far is whole again and
   * the streamed message is edited, not sent anew. What is said in the meantime is recorded as notified instead.
   */
  async #handle(entry: ChatEventEntry): Promise<void> {
    const event = entry.event;
    const record = this.#record;
    switch (event.type) {
      case 'turn_started':
        // Also a turn started again (resumed after a crash, retried after a model outage): the same message goes on.
        this.#steps.clear();
        record.turn = typeof event.turn === 'string' ? event.turn : '';
        record.events = entry.offset;
        return;
      case 'token':
        return this.#token(event);
      case 'step':
        if (event.status === 'started') this.#bot.typing(this.#chatId);
        return;
      case 'message':
        return this.#message(event, entry.offset);
      case 'turn_done':
        return this.#turnDone(event, entry.offset);
      case 'error':
        return this.#say(entry.offset, `⚠️ ${String(event.message ?? 'something went wrong')}`);
      case 'clarification':
        return this.#say(entry.offset, `❓ ${String(event.question ?? '')}\n\n(your next message answers it)`);
      case 'approval': {
        const id = String(event.id ?? '');
        return this.#say(
          entry.offset,
          [
            `Approval ${id}: ${String(event.title ?? '')}`,
            ...(event.summary ? [String(event.summary)] : []),
            // One message: what will happen as much as fits, and plainly how much more and where to read it.
            typeof event.rendering === 'string' && event.rendering !== ''
              ? fitRendering({ rendering: event.rendering, maxChars: 3_500, id })
              : `What it will do, in full: \`assistant approvals show ${id}\` or /approvals/${id} on the dashboard`,
            `/approve ${id} or /reject ${id}`,
          ].join('\n'),
          `approval:${id}`,
        );
      }
      default:
        this.#handled(entry.offset);
    }
  }

  /** The events up to `offset` are handled: the stored offset moves there, unless a turn is open. */
  #handled(offset: number): void {
    const record = this.#record;
    if (record.turn === undefined) record.events = offset;
  }

  /**
   * Says something once: outside a turn the event's offset is stored before it is sent; inside one (the offset
   * stays at the turn's start) the event is recorded as notified, by `key` or by its offset.
   */
  async #say(offset: number, text: string, key?: string): Promise<void> {
    this.#handled(offset);
    const once = key ?? (this.#record.turn === undefined ? undefined : `event:${this.#conversation}:${offset}`);
    const first = once === undefined || this.#state.remember('notified', once);
    await this.#state.save();
    if (first) await this.#bot.send(this.#chatId, clip(text));
  }

  #text(): string {
    return [...this.#steps.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, text]) => text.trim())
      .filter((text) => text !== '')
      .join('\n\n');
  }

  async #token(event: ChatEvent): Promise<void> {
    const step = typeof event.step === 'number' ? event.step : 0;
    const piece = typeof event.text === 'string' ? event.text : '';
    this.#steps.set(step, event.restart === true ? '' : (this.#steps.get(step) ?? '') + piece);
    const text = clip(this.#text());
    if (text === '') return;
    const record = this.#record;
    if (!record.preview) {
      const sent = await this.#bot.send(this.#chatId, text);
      if (!sent) return;
      record.preview = { chat: this.#chatId, message: sent.message_id, text };
      this.#lastEditMs = Date.now();
      await this.#state.save();
      return;
    }
    if (this.#timer) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#enqueue(() => this.#editPreview());
      },
      Math.max(0, this.#lastEditMs + editIntervalMs - Date.now()),
    );
  }

  async #editPreview(): Promise<void> {
    const preview = this.#record.preview;
    const text = clip(this.#text());
    // Never back to a shorter start of what the message shows: the tokens read again after a restart rebuild the
    // text from the turn's start, and the message keeps its text until they go past it.
    if (!preview || text === '' || preview.text.startsWith(text)) return;
    this.#lastEditMs = Date.now();
    if (await this.#bot.edit(preview.chat, preview.message, text, { retry: false })) preview.text = text;
  }

  async #message(event: ChatEvent, offset: number): Promise<void> {
    const record = this.#record;
    const message = event.message as { id?: unknown; role?: unknown; text?: unknown; status?: unknown } | undefined;
    if (message?.role !== 'assistant' || typeof message.id !== 'string' || this.#state.has('sent', message.id)) {
      // A user's message; or a reply sent already, written again by a turn runner after a crash (its repair step):
      // dropped, and it does not end the turn being streamed, if one is.
      this.#handled(offset);
      return;
    }
    if (event.notification !== undefined) {
      // Posted into the conversation (`chat.notify`: a workflow run's answer, a hook's `chat:`), not a turn's reply:
      // sent as a message of its own, and a reply streaming meanwhile goes on streaming.
      this.#handled(offset);
      this.#state.remember('sent', message.id);
      await this.#state.save();
      for (const chunk of split(String(message.text ?? ''))) await this.#bot.send(this.#chatId, chunk);
      return;
    }
    this.close();
    this.#steps.clear();
    const preview = record.preview;
    delete record.preview;
    delete record.turn;
    record.events = offset;
    this.#state.remember('sent', message.id);
    // Durable before it is sent: a restart finds it and does not send it again.
    await this.#state.save();
    const chunks = split(finalText(String(message.text ?? ''), String(message.status ?? 'complete')));
    let rest = chunks;
    if (preview && chunks[0] !== undefined) {
      if (await this.#bot.edit(preview.chat, preview.message, chunks[0], { retry: true })) rest = chunks.slice(1);
    }
    for (const chunk of rest) await this.#bot.send(this.#chatId, chunk);
  }

  /**
   * The open turn's `turn_done` after its `message` (the usual order) finds the turn ended already. One of the open
   * turn without its `message` (the runner could not read the reply back) ends it: the streamed message keeps the
   * text so far. Another turn's (a repeat after a crash) is dropped.
   */
  #turnDone(event: ChatEvent, offset: number): void {
    const record = this.#record;
    if (record.turn !== undefined && record.turn === (typeof event.turn === 'string' ? event.turn : '')) {
      this.close();
      this.#steps.clear();
      delete record.preview;
      delete record.turn;
    }
    this.#handled(offset);
  }
}

function finalText(text: string, status: string): string {
  const note =
    status === 'partial'
      ? '(stopped before the reply was finished)'
      : status === 'failed'
        ? '(the reply failed before it was finished)'
        : '';
  if (text.trim() === '') return note || '(an empty reply)';
  return note ? `${text.trim()}\n\n${note}` : text.trim();
}

/**
 * An approval request as Telegram messages: who asks and why, what will happen in full, and how to answer. What will
 * happen is sent whole, over as many messages as it takes up to {@link approvalMaxMessages}; beyond that its start,
 * and plainly how many characters more and where to read them (never cut without saying so).
 */
function approvalMessages(approval: ListenerApprovalSummary): string[] {
  const head = `Approval needed (${approval.id}): ${approval.actions} for ${approval.title}\nRule "${approval.rule}": ${approval.reason}. Expires ${approval.expiresAt}.`;
  const foot = approval.bound
    ? `/approve ${approval.id} or /reject ${approval.id}`
    : `Made before approvals were bound to what they show: it cannot be approved. /reject ${approval.id}`;
  const room = approvalMaxMessages * maxMessageLength - Array.from(head).length - Array.from(foot).length - 40;
  const what = fitRendering({ rendering: approval.rendering, maxChars: room, id: approval.id });
  return split(`${head}\n\nWhat will happen:\n${what}\n\n${foot}`);
}

/** The most messages one approval request is pushed in; past that the owner opens the request. */
const approvalMaxMessages = 4;

/** Text cut to one Telegram message (a streamed preview shows its start). */
function clip(text: string): string {
  const characters = Array.from(text);
  return characters.length <= maxMessageLength ? text : `${characters.slice(0, maxMessageLength - 1).join('')}…`;
}

/** Text in Telegram-sized pieces, split at a line break where there is one. */
function split(text: string): string[] {
  const pieces: string[] = [];
  let rest = Array.from(text);
  while (rest.length > maxMessageLength) {
    const window = rest.slice(0, maxMessageLength);
    const newline = window.lastIndexOf('\n');
    const cut = newline > maxMessageLength / 2 ? newline + 1 : maxMessageLength;
    pieces.push(rest.slice(0, cut).join(''));
    rest = rest.slice(cut);
  }
  if (rest.length > 0) pieces.push(rest.join(''));
  return pieces;
}

/** The code of an AssistantError (CHAT_PENDING_FULL, CONFLICT…): an error to say; not Node's (ENOENT…), which are faults. */
function errorCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || 'errno' in error || 'syscall' in error) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && /^[A-Z][A-Z_]+$/.test(code) ? code : undefined;
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => {});
}

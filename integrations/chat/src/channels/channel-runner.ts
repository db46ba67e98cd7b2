import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatEvent, ChatEventEntry, ChatService } from '@assistant/chat';
import {
  fitRendering,
  type ListenerApprovalSummary,
  type ListenerApprovals,
  type ListenerContext,
} from '@assistant/sdk';
import type { ChannelAdapter, ChannelDelivery, ChannelMessage, ChannelPress } from './adapter.ts';
import type { ChannelConversationState, ChannelState } from './channel-state.ts';
import { type NotificationKind, notificationKinds } from './notification-kinds.ts';

/** The conversation the server's notifier writes to (apps/server/src/chat-notifier.ts). */
const notificationsConversation = 'notifications';
/** How often pending approvals are looked for, to push the new ones. */
const approvalsPollMs = 5_000;
/** Backoff of a failing platform: network errors and outages double from the first to the last. */
const backoff = { initialMs: 1_000, maxMs: 60_000, badCredentialsMs: 60_000 };
/** Handling one delivery (storing its message) fails this often in a row before it is skipped, said and logged. */
const maxDeliveryFailures = 8;
/** Attempts of one send before it is given up (logged). */
const sendAttempts = 6;
/** Chat errors a refused message carries: said to the sender, the delivery is done. */
const refusals = new Set(['CHAT_PENDING_FULL', 'CHAT_MESSAGE_TOO_LARGE', 'CHAT_INPUT_INVALID']);
/** The kinds read from the `notifications` conversation (approvals are pushed from the requests themselves). */
const forwardedKinds: readonly NotificationKind[] = ['clarification', 'failure', 'hook'];
/** What a pushed notification starts with, by kind. */
const notificationMark = { clarification: '❓', failure: '⚠️', hook: '🔔' } as const;
/** The most messages one approval request is pushed in; past that the owner opens the request. */
const approvalMaxMessages = 4;

type Logger = ListenerContext['logger'];

const help = [
  'Write to me and I answer. Commands:',
  '/new — start a new conversation',
  '/stop — stop the reply being written',
  '/approvals — the approval requests waiting for you',
  '/approve ID, /reject ID — decide one',
].join('\n');

export interface ChannelRunnerOptions {
  adapter: ChannelAdapter;
  chat: ChatService;
  /** Deciding approvals from the chat (`/approve`), and pushing new ones; without it, approvals are not offered. */
  approvals?: ListenerApprovals;
  /** The runner's durable state (`data/chat/<channel>/<instance>.json`). */
  state: ChannelState;
  /** The peers answered; anyone else is ignored and logged by id only. */
  allowedPeers: readonly string[];
  logger: Logger;
  signal: AbortSignal;
  /** Where the platform's condition is reported (ok, outage, refused credentials): the listener's /health entry. */
  condition?: ListenerContext['condition'];
  /**
   * The owner's notifications this channel pushes to its allowed users (the `<channel>.notify` setting,
   * notification-kinds.ts); an approval not pushed can still be listed and decided with `/approvals`.
   * @default every kind
   */
  notify?: Iterable<NotificationKind>;
}

/**
 * The platform-independent half of a chat channel (docs/channels.md): receives the adapter's deliveries, answers
 * only the allowed peers, accepts each message into the chat inbox (durable) before its cursor is stored and the
 * platform is told, drops redeliveries (by cursor, and by the message's deterministic id as the inbox's client id),
 * streams each turn's reply by edits, split to the platform's limit, resumes after a restart from its state without
 * repeating or skipping, and backs off an outage or bad credentials. One conversation per peer and thread at a
 * time (a Matrix user's rooms are separate conversations), `/new` starts another.
 */
export class ChannelRunner {
  readonly #adapter: ChannelAdapter;
  readonly #chat: ChatService;
  readonly #approvals: ListenerApprovals | undefined;
  readonly #state: ChannelState;
  readonly #allowed: Set<string>;
  readonly #logger: Logger;
  readonly #signal: AbortSignal;
  readonly #condition: ListenerContext['condition'];
  readonly #notify: ReadonlySet<NotificationKind>;
  /** The condition last reported, so that a receive that works reports `ok` only after something else. */
  #reported: 'ok' | 'outage' | 'credentials_refused' | undefined;
  readonly #followers = new Map<string, Promise<void>>();
  #badCredentialsLogged = false;

  constructor(options: ChannelRunnerOptions) {
    this.#adapter = options.adapter;
    this.#chat = options.chat;
    this.#approvals = options.approvals;
    this.#state = options.state;
    this.#allowed = new Set(options.allowedPeers);
    this.#logger = options.logger;
    this.#signal = options.signal;
    this.#condition = options.condition;
    this.#notify = new Set(options.notify ?? notificationKinds);
  }

  /** Runs until the signal aborts. */
  async run(): Promise<void> {
    for (const [id, record] of Object.entries(this.#state.data.conversations)) this.#follow(id, record.chat);
    const notifier = this.#notifyOwner();
    await this.#receive();
    await Promise.allSettled([...this.#followers.values(), notifier]);
  }

  get adapter(): ChannelAdapter {
    return this.#adapter;
  }

  get logger(): Logger {
    return this.#logger;
  }

  // ---- inbound ----

  async #receive(): Promise<void> {
    const label = this.#adapter.label;
    let failures = 0;
    // The delivery being handled, and how often in a row handling it failed.
    let handling: { id: string; peer: string | undefined; failures: number } | undefined;
    while (!this.#signal.aborted) {
      // Only a failed `receive` is the platform's condition; storing or acknowledging a delivery is not.
      let receiving = true;
      try {
        const deliveries = await this.#adapter.receive({ cursor: this.#state.data.offset, signal: this.#signal });
        receiving = false;
        this.#credentialsWork();
        this.#report('ok');
        failures = 0;
        for (const delivery of deliveries) {
          if (this.#signal.aborted) break;
          const event = delivery.event;
          if (handling?.id !== event.id)
            handling = { id: event.id, peer: event.kind === 'other' ? undefined : event.peer, failures: 0 };
          if (handling.failures >= maxDeliveryFailures) {
            await this.#giveUp(handling);
          } else {
            await this.#handle(delivery);
          }
          handling = undefined;
          // Stored before the platform is told: a crash in between gets the delivery again, and its id finds the
          // message stored already.
          if (delivery.cursor !== undefined) {
            this.#state.data.offset = Math.max(this.#state.data.offset, delivery.cursor);
            await this.#state.save();
          }
          await this.#adapter.acknowledge?.(delivery, this.#signal);
        }
      } catch (error) {
        if (this.#signal.aborted) break;
        failures += 1;
        if (handling) handling.failures += 1;
        const what = handling ? `handling ${label} event ${handling.id}` : undefined;
        await delay(this.#failureWait(error, failures, what, receiving), this.#signal);
      }
    }
  }

  /** A delivery that failed again and again (not the platform's fault): skipped, said to the sender and logged. */
  async #giveUp(handling: { id: string; peer: string | undefined; failures: number }): Promise<void> {
    this.#logger.error(
      `skipped ${this.#adapter.label} event ${handling.id}: handling it failed ${handling.failures} times`,
    );
    if (handling.peer !== undefined && this.#allowed.has(handling.peer)) {
      await this.#send(
        this.#adapter.directThread(handling.peer),
        'Your last message could not be stored (see the server log): send it again.',
      );
    }
  }

  /**
   * How long to wait after a failed call; logs it (bad credentials once), and reports a failed `receive` (`platform`)
   * as the platform's condition.
   */
  #failureWait(error: unknown, failures: number, what?: string, platform = false): number {
    const failure = this.#adapter.classify(error);
    if (failure.kind === 'bad_credentials') {
      this.#report(
        'credentials_refused',
        `${failure.message}; trying again every ${backoff.badCredentialsMs / 1000} s`,
      );
      if (!this.#badCredentialsLogged) {
        this.#logger.error(`${failure.message}; trying again every ${backoff.badCredentialsMs / 1000} s`);
        this.#badCredentialsLogged = true;
      }
      return backoff.badCredentialsMs;
    }
    const waitMs =
      failure.kind === 'transient' && failure.retryAfterMs !== undefined
        ? failure.retryAfterMs
        : Math.min(backoff.maxMs, backoff.initialMs * 2 ** (failures - 1));
    this.#logger.warn(`${what ? `${what}: ` : ''}${describeError(error)}; trying again in ${waitMs} ms`);
    if (platform) {
      const next = new Date(Date.now() + waitMs).toISOString();
      this.#report('outage', `${describeError(error)}; next try at ${next}`);
    }
    return waitMs;
  }

  /** Reports the platform's condition; `ok` only when it was something else (or never reported). */
  #report(state: 'ok' | 'outage' | 'credentials_refused', detail?: string): void {
    if (state === 'ok' && this.#reported === 'ok') return;
    this.#reported = state;
    this.#condition?.(detail === undefined ? { state } : { state, detail });
  }

  #credentialsWork(): void {
    if (!this.#badCredentialsLogged) return;
    this.#badCredentialsLogged = false;
    this.#logger.info(`${this.#adapter.label} accepts the ${this.#adapter.credentials} again`);
  }

  async #handle(delivery: ChannelDelivery): Promise<void> {
    // Handled and acknowledged before: the platform delivered it again. (One handled but not yet acknowledged when
    // the server died comes back past the stored cursor: its id, the inbox's client id, makes it the same message.)
    if (delivery.cursor !== undefined && delivery.cursor <= this.#state.data.offset) return;
    if (delivery.event.kind === 'press') return this.#press(delivery.event);
    if (delivery.event.kind !== 'message') return;
    const message: ChannelMessage = delivery.event;
    const { label, name } = this.#adapter;
    const peer = message.peer;
    if (!this.#allowed.has(peer)) {
      // The user id only: what a stranger wrote is nobody's business, not even the log's.
      this.#logger.info(`ignored a ${label} message from user ${peer}: not in ${name}.allowed_users`);
      return;
    }
    if (message.shared !== undefined) {
      this.#logger.info(`ignored a ${label} message of user ${peer} in a ${message.shared} chat: private chats only`);
      return;
    }
    const thread = message.thread;
    const text = message.text;
    if (text === undefined || text.trim() === '') {
      await this.#send(thread, 'I read text messages only.');
      return;
    }
    const command = /^\/([a-z_]+)(?:@\S+)?(?:\s+([\s\S]*))?$/i.exec(text.trim());
    if (command) {
      // A command is no inbox message, so the inbox's client id does not dedupe it: its delivery id is recorded
      // before it runs (at most once), for platforms that retry without a cursor and a cursor lost in a crash.
      if (!this.#state.remember('notified', `command:${message.id}`)) return;
      await this.#state.save();
      await this.#command(peer, thread, (command[1] ?? '').toLowerCase(), (command[2] ?? '').trim());
      return;
    }
    const conversation = await this.#current(peer, thread);
    try {
      const posted = await this.#chat.post(conversation, { text, clientId: message.id });
      if (!posted.duplicate && posted.delivery !== 'queued') this.typing(thread);
      if (posted.delivery === 'queued' && !posted.duplicate) {
        await this.#send(thread, '(noted: I answer it after the reply I am writing)');
      }
    } catch (error) {
      const code = errorCode(error);
      if (code === undefined || !refusals.has(code)) throw error;
      await this.#send(thread, `Your message was not accepted: ${describeError(error)}`);
    }
  }

  async #command(peer: string, thread: string, name: string, argument: string): Promise<void> {
    const { label } = this.#adapter;
    switch (name) {
      case 'start':
      case 'help':
        await this.#send(thread, help);
        return;
      case 'new': {
        const id = await this.#chat.conversationFor({
          channel: this.#adapter.name,
          peer,
          fresh: true,
          title: label,
        });
        await this.#adopt(peer, thread, id);
        await this.#send(thread, 'A new conversation: what I knew of the last one is left behind.');
        return;
      }
      case 'stop': {
        const stopped = await this.#chat.stop(await this.#current(peer, thread), `stopped by ${label} user ${peer}`);
        await this.#send(thread, stopped.task ? 'Stopping the reply.' : 'Nothing is running.');
        return;
      }
      case 'approvals':
        await this.#listApprovals(thread);
        return;
      case 'approve':
      case 'reject':
        await this.#decide(peer, thread, name, argument);
        return;
      default:
        await this.#send(thread, `I do not know /${name}.\n\n${help}`);
    }
  }

  async #listApprovals(thread: string): Promise<void> {
    if (!this.#approvals) return this.#send(thread, 'Approvals cannot be decided from this chat.');
    const pending = await this.#approvals.pending();
    if (pending.length === 0) return this.#send(thread, 'No approval request is waiting.');
    for (const approval of pending) await this.#pushApproval(thread, approval);
  }

  /**
   * A button press: only an allowed user's counts (anyone else's is ignored and logged by id only), once (its id is
   * recorded before it acts), and an approval's button decides the rendering it was sent under: when the request
   * now shows something else (or is no longer pending), nothing is decided.
   */
  async #press(press: ChannelPress): Promise<void> {
    const { label, name } = this.#adapter;
    const answer = async (text: string) => {
      try {
        await this.#adapter.answerPress?.({ press, text, signal: this.#signal });
      } catch (error) {
        // Cosmetic: the message the runner sends says what happened.
        this.#logger.debug(`answering a ${label} button press failed: ${describeError(error)}`);
      }
    };
    if (!this.#allowed.has(press.peer)) {
      this.#logger.info(`ignored a ${label} button press from user ${press.peer}: not in ${name}.allowed_users`);
      // Only the presser sees it (where the platform has such answers: Discord would otherwise tell them the
      // interaction failed, Telegram leave the button spinning); nothing is decided or stored.
      await answer('Only the people this assistant works for can press its buttons: nothing was done.');
      return;
    }
    if (!this.#state.remember('notified', `press:${press.id}`)) return;
    await this.#state.save();
    const button = /^ap:([ar]):(ap-[0-9a-z]{1,40}):([0-9a-f]{12})$/.exec(press.data);
    if (!button || !this.#approvals) {
      await answer('This button does nothing.');
      return;
    }
    const decision = button[1] === 'a' ? 'approve' : 'reject';
    const id = button[2] ?? '';
    const approval = (await this.#approvals.pending()).find((one) => one.id === id);
    if (!approval) {
      await answer(`${id} is no longer waiting.`);
      return this.#send(
        press.thread,
        `${id} is no longer waiting: decided, expired or withdrawn. /approvals lists what is.`,
      );
    }
    if (renderingDigest(approval.rendering) !== button[3]) {
      await answer('Not decided: the request changed.');
      return this.#send(
        press.thread,
        `Not decided: what ${id} would do is no longer what that button was sent with. /approvals shows it as it is now.`,
      );
    }
    if (decision === 'approve' && !approval.bound) {
      await answer('This request cannot be approved.');
      return this.#send(press.thread, `${id} was made before approvals were bound to what they show: /reject ${id}`);
    }
    await answer(decision === 'approve' ? 'Approving…' : 'Rejecting…');
    await this.#decide(press.peer, press.thread, decision, id);
  }

  async #decide(peer: string, thread: string, decision: 'approve' | 'reject', id: string): Promise<void> {
    if (!this.#approvals) return this.#send(thread, 'Approvals cannot be decided from this chat.');
    if (id === '') return this.#send(thread, `Say which: /${decision} ap-…`);
    try {
      const result = await this.#approvals.decide(id, decision, `${this.#adapter.name}:${peer}`);
      await this.#send(
        thread,
        decision === 'reject'
          ? `Rejected ${id}: nothing will be done.`
          : result.kind === 'tool_call'
            ? `Approved ${id}: the waiting agent loop runs ${result.actions}.`
            : `Approved ${id}: ${result.actions} for ${result.title}${result.tasks.length === 0 ? ' (taken already)' : ''}.`,
      );
    } catch (error) {
      if (errorCode(error) === undefined) throw error;
      await this.#send(thread, `Could not ${decision} ${id}: ${describeError(error)}`);
    }
  }

  /**
   * The peer's current conversation in a thread (a Matrix room; Telegram's private chat): the one recorded, else the
   * newest of the channel and peer that no other thread answers, else a new one. Each thread has its own, so a reply
   * goes back to the thread it answers.
   */
  async #current(peer: string, thread: string): Promise<string> {
    const data = this.#state.data;
    const key = threadKey(peer, thread);
    // A state written before conversations were per thread has the peer's one: it is this thread's if answered here.
    const legacy = data.peers[peer];
    const recorded =
      data.threads[key] ?? (legacy !== undefined && data.conversations[legacy]?.chat === thread ? legacy : undefined);
    if (recorded !== undefined) {
      try {
        await this.#chat.get(recorded);
        if (data.threads[key] !== recorded) await this.#adopt(peer, thread, recorded);
        return recorded;
      } catch (error) {
        if (errorCode(error) !== 'CHAT_NOT_FOUND') throw error;
      }
    }
    const channel = this.#adapter.name;
    let id = await this.#chat.conversationFor({ channel, peer, title: this.#adapter.label });
    const elsewhere = data.conversations[id]?.chat;
    if (elsewhere !== undefined && elsewhere !== thread) {
      id = await this.#chat.conversationFor({ channel, peer, fresh: true, title: this.#adapter.label });
    }
    await this.#adopt(peer, thread, id);
    return id;
  }

  /** Makes `id` the peer's current conversation in `thread`, answered there, and follows its events from now on. */
  async #adopt(peer: string, thread: string, id: string): Promise<void> {
    this.#state.data.threads[threadKey(peer, thread)] = id;
    this.#state.data.peers[peer] = id;
    this.#state.data.conversations[id] ??= { chat: thread, events: await this.#chat.end(id) };
    await this.#state.save();
    this.#follow(id, thread);
  }

  // ---- outbound: replies, errors, questions, approvals ----

  #follow(conversation: string, thread: string): void {
    if (this.#followers.has(conversation) || this.#signal.aborted) return;
    const stream = new ReplyStream({ runner: this, conversation, thread, state: this.#state });
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

  /** Whether approval requests go out with buttons: the platform has them and the runner decides approvals. */
  get canSendApprovals(): boolean {
    return this.#approvals !== undefined && this.#adapter.sendButtons !== undefined;
  }

  /**
   * Sends a pending approval request with its buttons, bound to the rendering the approvals service shows; false
   * (nothing sent) when it is no longer pending or cannot be read, so the caller says it as text.
   */
  async sendApproval(thread: string, id: string): Promise<boolean> {
    if (!this.#approvals || !this.#adapter.sendButtons) return false;
    let approval: ListenerApprovalSummary | undefined;
    try {
      approval = (await this.#approvals.pending()).find((one) => one.id === id);
    } catch (error) {
      this.#logger.warn(`could not read approval request ${id}: ${describeError(error)}; said as text`);
      return false;
    }
    if (!approval) return false;
    await this.#pushApproval(thread, approval);
    return true;
  }

  /**
   * Pushes the owner's notifications of the kinds this channel takes ({@link ChannelRunnerOptions.notify}): new
   * approval requests (from the requests themselves, with buttons), and the questions, failures and hooks'
   * `notify:` the notifications conversation receives. Nothing to push: no polling at all.
   */
  async #notifyOwner(): Promise<void> {
    const approvals = this.#notify.has('approval') ? this.#approvals : undefined;
    const forwarded = forwardedKinds.some((kind) => this.#notify.has(kind));
    if (!approvals && !forwarded) return;
    while (!this.#signal.aborted) {
      try {
        for (const approval of approvals ? await approvals.pending() : []) {
          if (this.#signal.aborted) break;
          // Recorded before it is sent: a restart does not push it again.
          if (!this.#state.remember('notified', `approval:${approval.id}`)) continue;
          await this.#state.save();
          for (const peer of this.#allowed) await this.#pushApproval(this.#adapter.directThread(peer), approval);
        }
        if (forwarded) await this.#forwardNotifications();
      } catch (error) {
        if (this.#signal.aborted) break;
        this.#logger.warn(`could not read the pending approvals and notifications: ${describeError(error)}`);
      }
      await delay(approvalsPollMs, this.#signal);
    }
  }

  /**
   * Pushes the questions of agent tasks and the failures the server's notifier wrote to the `notifications`
   * conversation, and hooks' `notify:` (the `chat.notify` task), of the kinds this channel takes (approvals are pushed
   * above, from the requests themselves). Each is recorded before it is sent; one older than an hour (a channel set up
   * long after) is skipped.
   */
  async #forwardNotifications(): Promise<void> {
    const { entries, next } = await this.#chat.events.read(notificationsConversation, this.#state.data.notifications);
    for (const { event } of entries) {
      const notification = event.notification as { kind?: unknown } | undefined;
      const message = event.message as { id?: unknown; text?: unknown } | undefined;
      if (event.type !== 'message' || typeof message?.id !== 'string' || typeof message.text !== 'string') continue;
      const kind = notification?.kind;
      if (kind !== 'clarification' && kind !== 'failure' && kind !== 'hook') continue;
      if (!this.#notify.has(kind)) continue;
      if (Date.now() - Date.parse(event.at) > 3_600_000) continue;
      if (!this.#state.remember('notified', `notification:${message.id}`)) continue;
      await this.#state.save();
      for (const peer of this.#allowed)
        await this.send(
          this.#adapter.directThread(peer),
          this.clip(`${notificationMark[kind]} ${this.#adapter.format(message.text)}`),
        );
    }
    if (next !== this.#state.data.notifications) {
      this.#state.data.notifications = next;
      await this.#state.save();
    }
  }

  /**
   * Sends an approval request's messages; on a platform with buttons the last one carries Approve (when it can be
   * approved) and Reject, bound to the digest of the rendering the messages show.
   */
  async #pushApproval(thread: string, approval: ListenerApprovalSummary): Promise<void> {
    const messages = this.#approvalMessages(approval);
    const last = messages.pop() ?? '';
    for (const message of messages) await this.send(thread, message);
    const sendButtons = this.#adapter.sendButtons?.bind(this.#adapter);
    if (!sendButtons) return void (await this.send(thread, last));
    const digest = renderingDigest(approval.rendering);
    const buttons = [
      ...(approval.bound ? [{ label: '✅ Approve', data: `ap:a:${approval.id}:${digest}` }] : []),
      { label: '❌ Reject', data: `ap:r:${approval.id}:${digest}` },
    ];
    const sent = await this.retry('send', () =>
      sendButtons({ thread, text: this.clip(last), buttons, signal: this.#signal }),
    );
    // Refused with its buttons: the request still reaches the user, to be decided with the commands it names.
    if (!sent && !this.#signal.aborted) await this.send(thread, last);
  }

  /**
   * An approval request as messages: who asks and why, what will happen in full, and how to answer. What will happen
   * is sent whole (never formatted: it is the canonical rendering), over as many messages as it takes up to
   * {@link approvalMaxMessages}; beyond that its start, and plainly how many characters more and where to read them.
   */
  #approvalMessages(approval: ListenerApprovalSummary): string[] {
    const max = this.#adapter.maxMessageChars;
    const head = `Approval needed (${approval.id}): ${approval.actions} for ${approval.title}\nRule "${approval.rule}": ${approval.reason}. Expires ${approval.expiresAt}.`;
    const foot = approval.bound
      ? `/approve ${approval.id} or /reject ${approval.id}`
      : `Made before approvals were bound to what they show: it cannot be approved. /reject ${approval.id}`;
    const room = approvalMaxMessages * max - Array.from(head).length - Array.from(foot).length - 40;
    const what = fitRendering({ rendering: approval.rendering, maxChars: room, id: approval.id });
    return this.split(
      `${this.plain(`${head}\n\nWhat will happen:\n`)}${this.codeBlock(what)}${this.plain(`\n\n${foot}`)}`,
    );
  }

  /** Plain text in the platform's markup, shown literally. */
  plain(text: string): string {
    return this.#adapter.escape ? this.#adapter.escape(text) : text;
  }

  /** Text shown exactly as it is, as a code block where the platform has them. */
  codeBlock(text: string): string {
    return this.#adapter.codeBlock ? this.#adapter.codeBlock(text) : this.plain(text);
  }

  /**
   * Text (in the platform's markup) cut to one message (a streamed preview shows its start): by the adapter's split
   * where it has one, which keeps the markup valid.
   */
  clip(text: string): string {
    if (this.#adapter.split) {
      const pieces = this.#adapter.split(text);
      return pieces.length <= 1 ? text : (pieces[0] ?? '');
    }
    const max = this.#adapter.maxMessageChars;
    const characters = Array.from(text);
    return characters.length <= max ? text : `${characters.slice(0, max - 1).join('')}…`;
  }

  /** Text in message-sized pieces: the adapter's split, else at a line break where there is one. */
  split(text: string): string[] {
    return this.#adapter.split ? this.#adapter.split(text) : splitText(text, this.#adapter.maxMessageChars);
  }

  /** Sends a message (retried like every call); the message when it went out. */
  async send(thread: string, text: string): Promise<{ id: string } | undefined> {
    return (await this.retry('send', () => this.#adapter.send({ thread, text, signal: this.#signal })))?.value;
  }

  /** Sends plain text (the runner's own words), shown literally. */
  #send(thread: string, text: string): Promise<void> {
    return this.send(thread, this.clip(this.plain(text))).then(() => undefined);
  }

  /** Edits a sent message; true when it now shows `text` (also when it did already). */
  async edit(thread: string, message: string, text: string, options: { retry: boolean }): Promise<boolean> {
    const call = () => this.#adapter.edit({ thread, message, text, signal: this.#signal });
    if (!options.retry) {
      try {
        await call();
        return true;
      } catch (error) {
        if (!this.#signal.aborted) this.#logger.debug(`a streaming edit failed: ${describeError(error)}`);
        return false;
      }
    }
    return (await this.retry('edit', call)) !== undefined;
  }

  typing(thread: string): void {
    // Cosmetic: the reply itself is what matters.
    void this.#adapter.typing({ thread, signal: this.#signal }).catch(() => {});
  }

  /** Calls the platform, retrying transient failures with backoff; undefined when it gave up. */
  async retry<T>(what: string, call: () => Promise<T>): Promise<{ value: T } | undefined> {
    for (let attempt = 1; !this.#signal.aborted; attempt += 1) {
      try {
        const value = await call();
        this.#credentialsWork();
        return { value };
      } catch (error) {
        if (this.#signal.aborted) return undefined;
        const failure = this.#adapter.classify(error);
        if (failure.kind !== 'transient' || attempt >= sendAttempts) {
          if (failure.kind === 'bad_credentials') this.#failureWait(error, attempt);
          else
            this.#logger.warn(
              `gave up ${this.#adapter.label} ${what} after ${attempt} attempts: ${describeError(error)}`,
            );
          return undefined;
        }
        await delay(this.#failureWait(error, attempt), this.#signal);
      }
    }
    return undefined;
  }
}

/**
 * The replies of one conversation, streamed to its thread: on the first token of a turn a message is sent, then
 * edited with the text so far at most once per the adapter's `editIntervalMs`, and on the assistant's message it gets the final text.
 * Each reply id is recorded as sent (durably, before sending), so it never goes out twice. Everything of one
 * conversation happens in order, one call at a time.
 */
class ReplyStream {
  readonly #runner: ChannelRunner;
  readonly #conversation: string;
  readonly #thread: string;
  readonly #state: ChannelState;
  /** The text of each step of the running turn, as streamed. */
  readonly #steps = new Map<number, string>();
  #chain: Promise<void> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #lastEditMs = 0;

  constructor(options: { runner: ChannelRunner; conversation: string; thread: string; state: ChannelState }) {
    this.#runner = options.runner;
    this.#conversation = options.conversation;
    this.#thread = options.thread;
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
      this.#runner.logger.warn(`conversation ${this.#conversation}: ${describeError(error)}`);
    });
    return this.#chain;
  }

  get #record(): ChannelConversationState {
    const conversations = this.#state.data.conversations;
    const record = conversations[this.#conversation] ?? { chat: this.#thread, events: 0 };
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
        if (event.status === 'started') this.#runner.typing(this.#thread);
        return;
      case 'message':
        return this.#message(event, entry.offset);
      case 'turn_done':
        return this.#turnDone(event, entry.offset);
      case 'error':
        return this.#say(entry.offset, `⚠️ ${this.#format(String(event.message ?? 'something went wrong'))}`);
      case 'clarification':
        return this.#say(
          entry.offset,
          `❓ ${this.#format(String(event.question ?? ''))}${this.#runner.plain('\n\n(your next message answers it)')}`,
        );
      case 'approval': {
        const id = String(event.id ?? '');
        const runner = this.#runner;
        const text = [
          runner.plain(`Approval ${id}: ${String(event.title ?? '')}`),
          ...(event.summary ? [runner.plain(String(event.summary))] : []),
          // One message: what will happen as much as fits (exactly as it is), and plainly how much more and where to
          // read it.
          typeof event.rendering === 'string' && event.rendering !== ''
            ? runner.codeBlock(fitRendering({ rendering: event.rendering, maxChars: this.#renderingChars, id }))
            : runner.plain(
                `What it will do, in full: \`assistant approvals show ${id}\` or /approvals/${id} on the dashboard`,
              ),
          runner.plain(`/approve ${id} or /reject ${id}`),
        ].join(runner.plain('\n'));
        if (!this.#runner.canSendApprovals) return this.#say(entry.offset, text, `approval:${id}`);
        // With buttons on this platform: the request as the approvals service shows it, Approve bound to that
        // rendering (as pushed to the owner). Recorded before it is sent, under the key the pushes use, so the
        // request is sent once whichever finds it first; as text when it cannot be read.
        this.#handled(entry.offset);
        const first = this.#state.remember('notified', `approval:${id}`);
        await this.#state.save();
        if (first && !(await this.#runner.sendApproval(this.#thread, id)))
          await this.#runner.send(this.#thread, this.#runner.clip(text));
        return;
      }
      case 'compacted':
        // The log was compacted past where this listener stopped (it was away longer than the chat retention):
        // what was said meanwhile is in the transcript, not sent again here.
        this.#runner.logger.warn(
          `conversation ${this.#conversation}: events from offset ${String(event.from)} were compacted while this listener was away; replies in between are in the transcript, not sent again`,
        );
        this.#handled(entry.offset);
        return;
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
    if (first) await this.#runner.send(this.#thread, this.#runner.clip(text));
  }

  #text(): string {
    return [...this.#steps.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, text]) => text.trim())
      .filter((text) => text !== '')
      .join('\n\n');
  }

  #format(markdown: string): string {
    return this.#runner.adapter.format(markdown);
  }

  /** The room for an approval's rendering in the one message of a turn's `approval` event (3,500 on Telegram). */
  get #renderingChars(): number {
    return Math.max(200, this.#runner.adapter.maxMessageChars - 596);
  }

  async #token(event: ChatEvent): Promise<void> {
    const step = typeof event.step === 'number' ? event.step : 0;
    const piece = typeof event.text === 'string' ? event.text : '';
    this.#steps.set(step, event.restart === true ? '' : (this.#steps.get(step) ?? '') + piece);
    // A platform that cannot edit gets the reply once, final (#message); the tokens only keep the text so far.
    if (this.#runner.adapter.streaming === false) return;
    const record = this.#record;
    if (!record.preview) {
      const text = this.#runner.clip(this.#format(this.#text()));
      if (text === '') return;
      const sent = await this.#runner.send(this.#thread, text);
      if (!sent) return;
      record.preview = { chat: this.#thread, message: sent.id, text };
      this.#lastEditMs = Date.now();
      await this.#state.save();
      return;
    }
    // The text is formatted when the edit is due, not on every token.
    if (this.#timer) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#enqueue(() => this.#editPreview());
      },
      Math.max(0, this.#lastEditMs + this.#runner.adapter.editIntervalMs - Date.now()),
    );
  }

  async #editPreview(): Promise<void> {
    const preview = this.#record.preview;
    const text = this.#runner.clip(this.#format(this.#text()));
    // Never back to a shorter start of what the message shows: the tokens read again after a restart rebuild the
    // text from the turn's start, and the message keeps its text until they go past it.
    if (!preview || text === '' || preview.text.startsWith(text)) return;
    this.#lastEditMs = Date.now();
    if (await this.#runner.edit(preview.chat, preview.message, text, { retry: false })) preview.text = text;
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
      for (const chunk of this.#runner.split(this.#format(String(message.text ?? ''))))
        await this.#runner.send(this.#thread, chunk);
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
    const chunks = this.#runner.split(
      this.#format(finalText(String(message.text ?? ''), String(message.status ?? 'complete'))),
    );
    let rest = chunks;
    if (preview && chunks[0] !== undefined) {
      if (await this.#runner.edit(preview.chat, preview.message, chunks[0], { retry: true })) rest = chunks.slice(1);
    }
    for (const chunk of rest) await this.#runner.send(this.#thread, chunk);
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

/** What an approval button is bound to: the first 12 hex digits of the sha256 of the rendering it was sent with. */
function renderingDigest(rendering: string): string {
  return createHash('sha256').update(rendering).digest('hex').slice(0, 12);
}

/** The key of a peer's conversation in a thread, in the runner's state. */
function threadKey(peer: string, thread: string): string {
  return `${peer} ${thread}`;
}

/** Text in pieces of at most `maxChars` characters, split at a line break where there is one. */
function splitText(text: string, maxChars: number): string[] {
  const pieces: string[] = [];
  let rest = Array.from(text);
  while (rest.length > maxChars) {
    const window = rest.slice(0, maxChars);
    const newline = window.lastIndexOf('\n');
    const cut = newline > maxChars / 2 ? newline + 1 : maxChars;
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

/** Resolves after `ms`, or at once when `signal` aborts. */
function delay(ms: number, signal: AbortSignal): Promise<void> {
  return sleep(ms, undefined, { signal }).catch(() => {});
}

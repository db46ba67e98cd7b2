import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { WebSocketManager, type WebSocketShard } from '@discordjs/ws';
import type {
  ChannelAdapter,
  ChannelButton,
  ChannelDelivery,
  ChannelFailure,
  ChannelPress,
  ChannelSent,
} from '../channels/adapter.ts';
import {
  DiscordAPIError,
  type DiscordApi,
  DiscordGatewayError,
  type DiscordMessage,
  HTTPError,
  RateLimitError,
} from './discord-api.ts';
import { discordMaxChars, formatDiscord, splitDiscord } from './discord-format.ts';

/** GUILDS, GUILD_MESSAGES, DIRECT_MESSAGES, MESSAGE_CONTENT (privileged: enabled in the developer portal). */
export const discordIntents = (1 << 0) | (1 << 9) | (1 << 12) | (1 << 15);

/** What the adapter keeps on disk next to the runner's state. */
interface DiscordStateData {
  /**
   * Per channel read (the allowed users' DMs, the guild channel): the id of the last message handled (acknowledged).
   * After a new gateway session (a start, a session Discord would not resume) what came after it is fetched by REST.
   */
  channels: Record<string, string>;
  /** Each allowed user's DM channel with the bot: where approvals and notices go. */
  dms: Record<string, string>;
}

/** A gateway connection down this long is reported as an outage (the client keeps reconnecting meanwhile). */
const outageAfterMs = 5_000;
/** A receive with nothing to hand out returns after this long (the runner calls it again). */
const idleReceiveMs = 25_000;
/** The most messages fetched per channel in one catch-up (10 pages). */
const catchUpPages = 10;
/** Message types that are someone writing: DEFAULT and REPLY. */
const userMessageTypes = new Set([0, 19]);

/**
 * Discord behind the channel contract (docs/channels.md, decision 0071): the Gateway over `@discordjs/ws` (identify,
 * heartbeats, resume, reconnect) for MESSAGE_CREATE and INTERACTION_CREATE, the REST API over `@discordjs/rest` for
 * everything else. Direct messages and the one configured guild channel (`discord.channel_id`) are read; other guild
 * channels and bots (the bot itself included) are not. A message's id is `dc-<message id>`, a press's
 * `dc-i-<interaction id>`: the same on every delivery.
 *
 * The gateway pushes and has no per-event acknowledgement: dispatches are queued and handed out in
 * {@link receive}; {@link acknowledge} records, per channel, the last message id the runner stored. Discord resumes a
 * dropped session by replaying what it missed; a new session (a restart, a session it would not resume) fetches
 * each known channel's messages after that id by REST before the live dispatches, so a message lost in a crash
 * before it was stored is read again (its id makes it the same message).
 */
export class DiscordAdapter implements ChannelAdapter {
  readonly name = 'discord';
  readonly label = 'Discord';
  readonly credentials = 'bot token';
  readonly maxMessageChars = discordMaxChars;
  /** Discord allows about 5 edits per 5 s in a channel. */
  readonly editIntervalMs = 1_200;

  readonly #api: DiscordApi;
  readonly #token: string;
  readonly #guildChannel: string | undefined;
  readonly #allowed: Set<string>;
  readonly #logger: ListenerContext['logger'];
  readonly #file: string;
  readonly #data: DiscordStateData;
  #dirty = false;
  readonly #queue: ChannelDelivery[] = [];
  /** Live dispatches held back while a new session's catch-up has not run. */
  #held: ChannelDelivery[] | undefined;
  #catchUpNeeded = false;
  readonly #positions = new WeakMap<ChannelDelivery, { channel: string; message: string }>();
  #manager: WebSocketManager | undefined;
  /** Each manager's shards (its strategy forgets them on destroy, while one may still be reconnecting). */
  readonly #shards = new WeakMap<WebSocketManager, WebSocketShard[]>();
  /** A gateway failure that will not heal by itself (4004), thrown by the next receive. */
  #failure: DiscordGatewayError | undefined;
  #connected = false;
  #downSince: number | undefined;
  /** The `#downSince` of the outage last thrown by receive. */
  #outageSaid: number | undefined;
  #botId: string | undefined;
  #wake: (() => void) | undefined;
  /** The connection came up (again): the next receive returns at once, so that the runner reports it. */
  #cameUp = false;
  #stopping: Promise<void> = Promise.resolve();

  private constructor(options: {
    api: DiscordApi;
    token: string;
    channelId: string | undefined;
    allowedUsers: readonly string[];
    logger: ListenerContext['logger'];
    file: string;
    data: DiscordStateData;
  }) {
    this.#api = options.api;
    this.#token = options.token;
    this.#guildChannel = options.channelId;
    this.#allowed = new Set(options.allowedUsers);
    this.#logger = options.logger;
    this.#file = options.file;
    this.#data = options.data;
  }

  /** Reads the adapter's file (`file`; none yet: a first start). */
  static async open(options: {
    api: DiscordApi;
    token: string;
    channelId?: string | undefined;
    allowedUsers: readonly string[];
    logger: ListenerContext['logger'];
    file: string;
  }): Promise<DiscordAdapter> {
    let data: DiscordStateData = { channels: {}, dms: {} };
    try {
      const parsed = JSON.parse(await readFile(options.file, 'utf8')) as Partial<DiscordStateData>;
      data = { channels: parsed.channels ?? {}, dms: parsed.dms ?? {} };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new Error(
          `the Discord state ${path.basename(options.file)} is unreadable (${(error as Error).message}); fix or remove it (removing it skips what came while the bot was away)`,
        );
      }
    }
    return new DiscordAdapter({ ...options, channelId: options.channelId, data });
  }

  async receive(options: { cursor: number; signal: AbortSignal }): Promise<ChannelDelivery[]> {
    this.#throwFailure();
    if (!this.#manager) await this.#start(options.signal);
    if (this.#catchUpNeeded) await this.#catchUp(options.signal);
    const deadline = Date.now() + idleReceiveMs;
    while (!options.signal.aborted) {
      if (this.#queue.length > 0 || this.#cameUp) {
        this.#cameUp = false;
        return this.#queue.splice(0);
      }
      this.#throwFailure();
      if (this.#catchUpNeeded) await this.#catchUp(options.signal);
      // Down: said (thrown) once it lasts `outageAfterMs`, and again at each receive's end while it lasts; in
      // between the receive waits for the client's reconnection, so that it is taken at once.
      const down = this.#downSince;
      const until = down === undefined ? deadline : this.#outageSaid === down ? deadline : down + outageAfterMs;
      if (Date.now() >= until) {
        if (down === undefined) return [];
        this.#outageSaid = down;
        throw new DiscordGatewayError(0, 'no connection to the gateway; reconnecting', true);
      }
      const waitMs = until - Date.now();
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          options.signal.removeEventListener('abort', done);
          this.#wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, waitMs));
        this.#wake = done;
        options.signal.addEventListener('abort', done, { once: true });
      });
    }
    await this.#stop();
    return [];
  }

  /** The runner stored (or ignored) a delivery: its channel is read from after it from now on. */
  async acknowledge(delivery: ChannelDelivery): Promise<void> {
    const position = this.#positions.get(delivery);
    if (position) {
      const known = this.#data.channels[position.channel];
      if (known === undefined || BigInt(position.message) > BigInt(known)) {
        this.#data.channels[position.channel] = position.message;
        this.#dirty = true;
      }
    }
    if (this.#dirty) await this.#save();
  }

  #throwFailure(): void {
    const failure = this.#failure;
    if (!failure) return;
    this.#failure = undefined;
    throw failure;
  }

  // ---- the gateway ----

  async #start(signal: AbortSignal): Promise<void> {
    const manager = new WebSocketManager({
      token: this.#token,
      intents: discordIntents,
      rest: this.#api.client(),
      shardCount: 1,
      // The session of this adapter only (the library's default store is shared by every manager of the process).
      ...sessionStore(),
      handshakeTimeout: 15_000,
      helloTimeout: 30_000,
      readyTimeout: 15_000,
    });
    this.#manager = manager;
    this.#connected = false;
    this.#downSince = undefined;
    // The runner stops receiving when the listener stops: the connection goes with it.
    signal.addEventListener('abort', () => void this.#stop(), { once: true });
    const failed = new Promise<never>((_, reject) => {
      manager.on('error', (error: Error) => {
        const failure = new DiscordGatewayError(
          /authentication/i.test(error.message) ? 4004 : /disallowed intents/i.test(error.message) ? 4014 : 4000,
          /disallowed intents/i.test(error.message)
            ? `${error.message}: turn on the Message Content intent (Bot → Privileged Gateway Intents) in the developer portal`
            : error.message,
          !/authentication|intents|version|shard/i.test(error.message),
        );
        if (this.#manager === manager) {
          this.#failure = failure;
          void this.#stop();
          this.#wake?.();
        }
        reject(failure);
      });
    });
    failed.catch(() => {});
    manager.on('dispatch', (payload: { t: string; d: unknown }) => {
      if (this.#manager === manager) this.#dispatch(payload.t, payload.d);
    });
    manager.on('ready', (data: { user?: { id?: string } }) => {
      if (this.#manager !== manager) return;
      this.#botId = data.user?.id ?? this.#botId;
      this.#up();
      // A new session: what was written in the meantime is fetched before the live dispatches are handed out.
      this.#catchUpNeeded = true;
      this.#held ??= [];
      this.#wake?.();
    });
    manager.on('resumed', () => {
      if (this.#manager === manager) this.#up();
    });
    manager.on('closed', (code: number) => {
      if (this.#manager !== manager) return;
      this.#connected = false;
      this.#downSince ??= Date.now();
      if (code === 4004) this.#failure ??= new DiscordGatewayError(4004, 'Authentication failed', false);
      this.#wake?.();
    });
    manager.on('hello', () => {
      // A shard of a stopped manager reconnecting after its destroy (the library's reconnect was under way).
      if (this.#manager !== manager) for (const shard of this.#shards.get(manager) ?? []) void shard.destroy();
    });
    try {
      const connecting = manager.connect().then(() => {
        this.#shards.set(manager, [...shardsOf(manager)]);
      });
      await Promise.race([connecting, failed, abortion(signal)]);
    } catch (error) {
      await this.#stop();
      this.#throwFailure();
      throw error;
    }
  }

  #up(): void {
    this.#cameUp = true;
    this.#connected = true;
    this.#downSince = undefined;
    this.#wake?.();
  }

  /** Closes the gateway connection; a second call while it closes waits for the same close. */
  #stop(): Promise<void> {
    const manager = this.#manager;
    if (!manager) return this.#stopping;
    this.#manager = undefined;
    this.#stopping = this.#destroy(manager);
    return this.#stopping;
  }

  async #destroy(manager: WebSocketManager): Promise<void> {
    this.#connected = false;
    const shards = [...new Set([...(this.#shards.get(manager) ?? []), ...shardsOf(manager)])];
    this.#shards.set(manager, shards);
    await Promise.resolve(manager.destroy({ reason: 'the listener stops' })).catch(() => {});
    for (const shard of shards) await Promise.resolve(shard.destroy()).catch(() => {});
  }

  /** Whether the gateway connection is up (for tests and the bench). */
  get connected(): boolean {
    return this.#connected;
  }

  #dispatch(type: string, data: unknown): void {
    let delivery: ChannelDelivery | undefined;
    if (type === 'MESSAGE_CREATE') delivery = this.#message(data as DiscordMessage, 'gateway');
    else if (type === 'INTERACTION_CREATE') delivery = this.#interaction(data as Interaction);
    if (!delivery) return;
    if (this.#held) this.#held.push(delivery);
    else this.#queue.push(delivery);
    this.#wake?.();
  }

  /**
   * A message for the runner, or undefined for what is not read: the bot's own and other bots', system messages,
   * guild channels other than the configured one.
   */
  #message(message: DiscordMessage, from: 'gateway' | 'catch-up'): ChannelDelivery | undefined {
    const author = message.author;
    if (!author || author.bot || author.id === this.#botId) return undefined;
    if (message.type !== undefined && !userMessageTypes.has(message.type)) return undefined;
    const guild = from === 'gateway' ? message.guild_id !== undefined : message.channel_id === this.#guildChannel;
    if (guild && message.channel_id !== this.#guildChannel) return undefined;
    const allowed = this.#allowed.has(author.id);
    if (!guild && allowed && this.#data.dms[author.id] !== message.channel_id) {
      this.#data.dms[author.id] = message.channel_id;
      this.#dirty = true;
    }
    const content = message.content ?? '';
    const delivery: ChannelDelivery = {
      event: {
        kind: 'message',
        id: `dc-${message.id}`,
        peer: author.id,
        thread: message.channel_id,
        text: content === '' ? undefined : content,
      },
    };
    // Read again after a new session: the guild channel, and the allowed users' DMs (not strangers').
    if (guild || allowed) this.#positions.set(delivery, { channel: message.channel_id, message: message.id });
    return delivery;
  }

  /** A button press (MESSAGE_COMPONENT); other interactions (commands the bot never registered) are not read. */
  #interaction(interaction: Interaction): ChannelDelivery | undefined {
    if (interaction.type !== 3 || typeof interaction.data?.custom_id !== 'string') return undefined;
    const user = interaction.member?.user ?? interaction.user;
    if (!user || interaction.channel_id === undefined) return undefined;
    return {
      event: {
        kind: 'press',
        id: `dc-i-${interaction.id}`,
        peer: user.id,
        thread: interaction.channel_id,
        data: interaction.data.custom_id,
        callback: `${interaction.id}/${interaction.token}`,
      },
    };
  }

  /**
   * Fetches each known channel's messages after the last one handled, oldest first, and hands them out before the
   * dispatches that came meanwhile. Throws on a REST failure (the runner backs off; the catch-up runs again).
   */
  async #catchUp(signal: AbortSignal): Promise<void> {
    const found: ChannelDelivery[] = [];
    for (const [channel, after] of Object.entries(this.#data.channels)) {
      let cursor = after;
      for (let page = 0; page < catchUpPages; page += 1) {
        const messages = (await this.#api.messagesAfter(channel, cursor, signal)).sort((a, b) =>
          BigInt(a.id) < BigInt(b.id) ? -1 : 1,
        );
        for (const message of messages) {
          const delivery = this.#message({ ...message, channel_id: channel }, 'catch-up');
          if (delivery) found.push(delivery);
        }
        cursor = messages.at(-1)?.id ?? cursor;
        if (messages.length < 100) break;
      }
    }
    if (found.length > 0) this.#logger.info(`read ${found.length} Discord message(s) written while disconnected`);
    this.#catchUpNeeded = false;
    this.#queue.push(...found, ...(this.#held ?? []));
    this.#held = undefined;
  }

  // ---- outbound ----

  async send(options: { thread: string; text: string; signal: AbortSignal }): Promise<ChannelSent> {
    const channel = await this.#channel(options.thread, options.signal);
    const sent = await this.#api.createMessage(channel, { content: options.text }, options.signal);
    await this.#track(channel, sent.id);
    return { id: sent.id };
  }

  /**
   * A channel the bot writes in that it reads (an allowed user's DM, the guild channel) and has no position in yet
   * (the bot spoke first: an approval pushed before the user ever wrote) is read from its message on, so that what
   * is answered to it while the bot is away is caught up.
   */
  async #track(channel: string, message: string): Promise<void> {
    if (this.#data.channels[channel] !== undefined) return;
    const dm = Object.entries(this.#data.dms).some(([user, one]) => one === channel && this.#allowed.has(user));
    if (!dm && channel !== this.#guildChannel) return;
    this.#data.channels[channel] = message;
    await this.#save();
  }

  /** An action row of buttons (approve green, reject red); `custom_id` is the button's data (at most 100 chars). */
  async sendButtons(options: {
    thread: string;
    text: string;
    buttons: readonly ChannelButton[];
    signal: AbortSignal;
  }): Promise<ChannelSent> {
    const channel = await this.#channel(options.thread, options.signal);
    const components = [
      {
        type: 1,
        components: options.buttons.slice(0, 5).map((button) => ({
          type: 2,
          style: button.data.startsWith('ap:r:') ? 4 : button.data.startsWith('ap:a:') ? 3 : 2,
          label: button.label.slice(0, 80),
          custom_id: button.data,
        })),
      },
    ];
    const sent = await this.#api.createMessage(channel, { content: options.text, components }, options.signal);
    await this.#track(channel, sent.id);
    return { id: sent.id };
  }

  /** A reply only the presser sees (type 4, ephemeral). */
  async answerPress(options: { press: ChannelPress; text: string; signal: AbortSignal }): Promise<void> {
    const [interaction = '', token = ''] = options.press.callback.split('/');
    await this.#api.interactionCallback(
      interaction,
      token,
      { type: 4, data: { content: options.text.slice(0, discordMaxChars), flags: 64 } },
      options.signal,
    );
  }

  async edit(options: { thread: string; message: string; text: string; signal: AbortSignal }): Promise<void> {
    const channel = await this.#channel(options.thread, options.signal);
    await this.#api.editMessage(channel, options.message, options.text, options.signal);
  }

  async typing(options: { thread: string; signal: AbortSignal }): Promise<void> {
    await this.#api.typing(await this.#channel(options.thread, options.signal), options.signal);
  }

  /** The user's DM channel when known; else `user:<id>`, whose DM channel is opened when something is sent. */
  directThread(peer: string): string {
    return this.#data.dms[peer] ?? `user:${peer}`;
  }

  format(markdown: string): string {
    return formatDiscord(markdown);
  }

  split(text: string): string[] {
    return splitDiscord(text, this.maxMessageChars);
  }

  classify(error: unknown): ChannelFailure {
    if (error instanceof DiscordGatewayError) {
      if (error.code === 4004) {
        return {
          kind: 'bad_credentials',
          message: 'Discord refused the bot token (gateway 4004): check discord.token',
        };
      }
      return error.transient ? { kind: 'transient' } : { kind: 'refused' };
    }
    if (error instanceof DiscordAPIError) {
      if (error.status === 401) {
        return {
          kind: 'bad_credentials',
          message: `Discord refused the bot token (401 ${error.message}): check discord.token`,
        };
      }
      if (error.status === 429 || error.status >= 500) return { kind: 'transient' };
      return { kind: 'refused' };
    }
    if (error instanceof RateLimitError) return { kind: 'transient', retryAfterMs: error.retryAfter };
    if (error instanceof HTTPError)
      return error.status >= 500 || error.status === 429 ? { kind: 'transient' } : { kind: 'refused' };
    return { kind: 'transient' };
  }

  /** A thread as a channel id: `user:<id>` opens (or finds) the user's DM channel. */
  async #channel(thread: string, signal: AbortSignal): Promise<string> {
    if (!thread.startsWith('user:')) return thread;
    const user = thread.slice('user:'.length);
    const known = this.#data.dms[user];
    if (known !== undefined) return known;
    const channel = await this.#api.dmChannel(user, signal);
    this.#data.dms[user] = channel;
    await this.#save();
    return channel;
  }

  async #save(): Promise<void> {
    this.#dirty = false;
    const directory = path.dirname(this.#file);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const temporary = `${this.#file}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(this.#data, null, 1)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.#file);
  }
}

/** An INTERACTION_CREATE's parts the adapter reads. */
interface Interaction {
  id: string;
  token: string;
  type: number;
  channel_id?: string;
  user?: { id: string };
  member?: { user?: { id: string } };
  data?: { custom_id?: unknown };
}

function sessionStore(): Pick<
  ConstructorParameters<typeof WebSocketManager>[0],
  'retrieveSessionInfo' | 'updateSessionInfo'
> {
  const sessions = new Map<number, unknown>();
  return {
    retrieveSessionInfo: (shard) => (sessions.get(shard) ?? null) as never,
    updateSessionInfo: (shard, info) => {
      if (info) sessions.set(shard, info);
      else sessions.delete(shard);
    },
  };
}

/** The shards of a manager (its strategy's; the library does not hand them out). */
function shardsOf(manager: WebSocketManager): IterableIterator<WebSocketShard> {
  return (manager as unknown as { strategy: { shards: Map<number, WebSocketShard> } }).strategy.shards.values();
}

function abortion(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) return reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';

/** A streamed reply's platform message, edited as tokens arrive until the reply is final. */
interface ChannelPreview {
  /** The thread (chat) it is in, as the adapter names it. */
  chat: string;
  /** Its message id, as the adapter names it. */
  message: string;
  text: string;
}

export interface ChannelConversationState {
  /** The thread (chat) replies go to, as the adapter names it: for Telegram, the peer's private chat with the bot. */
  chat: string;
  /** The event log offset handled up to; while a turn is open, the offset just after its `turn_started`. */
  events: number;
  /** The open turn (its id, from `turn_started`): its reply is not written yet, its events are read again. */
  turn?: string;
  preview?: ChannelPreview;
}

/** What `data/chat/<channel>/<instance>.json` holds. */
interface ChannelStateData {
  version: 1;
  /**
   * The platform's cursor: the position after the last inbound event handled, passed to the adapter's next
   * `receive` (Telegram: the `offset` of the next getUpdates, the last handled update id + 1). 0 for platforms
   * that push and have none.
   */
  offset: number;
  /** The current conversation of each peer, in the thread it last wrote in (`/new` moves it). */
  peers: Record<string, string>;
  /**
   * The current conversation of each peer in each thread, by `<peer> <thread>` (`/new` moves it): a Matrix user's
   * rooms are conversations of their own.
   */
  threads: Record<string, string>;
  conversations: Record<string, ChannelConversationState>;
  /** Reply ids sent to the platform (recorded before sending), with when. */
  sent: Record<string, string>;
  /** Approval ids and event keys already pushed to the owner, with when. */
  notified: Record<string, string>;
  /** How far the event log of the `notifications` conversation was read (its questions and failures are pushed). */
  notifications: number;
}

/** The most ids `sent` and `notified` keep: the oldest go first; a reply or approval is long done by then. */
const maxRemembered = 5000;

/**
 * A channel runner's durable state, one JSON file per channel and instance, written whole under a temporary name, fsynced
 * and renamed, so a crash leaves the old state or the new one. Saves are serialized.
 */
export class ChannelState {
  readonly file: string;
  readonly data: ChannelStateData;
  #saving: Promise<void> = Promise.resolve();

  private constructor(file: string, data: ChannelStateData) {
    this.file = file;
    this.data = data;
  }

  /** Reads `file` (none yet: a fresh state); `label` names the channel in errors ("Telegram"). */
  static async load(file: string, label: string): Promise<ChannelState> {
    let text: string | undefined;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text === undefined) {
      return new ChannelState(file, {
        version: 1,
        offset: 0,
        peers: {},
        threads: {},
        conversations: {},
        sent: {},
        notified: {},
        notifications: 0,
      });
    }
    let parsed: Partial<ChannelStateData>;
    try {
      parsed = JSON.parse(text) as Partial<ChannelStateData>;
    } catch (error) {
      throw new Error(
        `the ${label} state ${path.basename(file)} is not JSON (${(error as Error).message}); fix or remove it (removing it resends recent replies)`,
      );
    }
    return new ChannelState(file, {
      version: 1,
      offset: typeof parsed.offset === 'number' ? parsed.offset : 0,
      peers: parsed.peers ?? {},
      threads: parsed.threads ?? {},
      conversations: normalizeConversations(parsed.conversations),
      sent: parsed.sent ?? {},
      notified: parsed.notified ?? {},
      notifications: typeof parsed.notifications === 'number' ? parsed.notifications : 0,
    });
  }

  conversation(id: string): ChannelConversationState | undefined {
    return this.data.conversations[id];
  }

  /** Marks a key (reply id, approval id) done; false when it was done already. Call `save` before acting on it. */
  remember(kind: 'sent' | 'notified', key: string): boolean {
    const record = this.data[kind];
    if (Object.hasOwn(record, key)) return false;
    record[key] = new Date().toISOString();
    const keys = Object.keys(record);
    for (const old of keys.slice(0, Math.max(0, keys.length - maxRemembered))) delete record[old];
    return true;
  }

  has(kind: 'sent' | 'notified', key: string): boolean {
    return Object.hasOwn(this.data[kind], key);
  }

  /** Writes the state as it is now; resolves once it is on disk. */
  save(): Promise<void> {
    const next = this.#saving.then(() => this.#write());
    this.#saving = next.catch(() => {});
    return next;
  }

  async #write(): Promise<void> {
    const directory = path.dirname(this.file);
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const temporary = `${this.file}.${process.pid}.tmp`;
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(this.data, null, 1)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.file);
    const folder = await open(directory, 'r');
    try {
      await folder.sync();
    } finally {
      await folder.close();
    }
  }
}

/**
 * Thread and message ids as strings: a state written before the channel contract (Telegram's, with numbers) reads
 * the same.
 */
function normalizeConversations(
  conversations: Record<string, ChannelConversationState> | undefined,
): Record<string, ChannelConversationState> {
  const result: Record<string, ChannelConversationState> = {};
  for (const [id, record] of Object.entries(conversations ?? {})) {
    result[id] = {
      ...record,
      chat: String(record.chat),
      ...(record.preview
        ? { preview: { ...record.preview, chat: String(record.preview.chat), message: String(record.preview.message) } }
        : {}),
    };
  }
  return result;
}

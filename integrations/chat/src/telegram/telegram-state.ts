import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';

/** A streamed reply's Telegram message, edited as tokens arrive until the reply is final. */
export interface TelegramPreview {
  chat: number;
  message: number;
  text: string;
}

export interface TelegramConversationState {
  /** The Telegram chat replies go to: the peer's private chat with the bot. */
  chat: number;
  /** The event log offset handled up to; while a turn is open, the offset just after its `turn_started`. */
  events: number;
  /** The open turn (its id, from `turn_started`): its reply is not written yet, its events are read again. */
  turn?: string;
  preview?: TelegramPreview;
}

/** What `data/chat/telegram/<instance>.json` holds. */
interface TelegramStateData {
  version: 1;
  /** The `offset` of the next getUpdates: the last handled update id + 1. */
  offset: number;
  /** The current conversation of each Telegram user id (`/new` moves it). */
  peers: Record<string, string>;
  conversations: Record<string, TelegramConversationState>;
  /** Reply ids sent to Telegram (recorded before sending), with when. */
  sent: Record<string, string>;
  /** Approval ids and event keys already pushed to the owner, with when. */
  notified: Record<string, string>;
  /** How far the event log of the `notifications` conversation was read (its questions and failures are pushed). */
  notifications: number;
}

/** The most ids `sent` and `notified` keep: the oldest go first; a reply or approval is long done by then. */
const maxRemembered = 5000;

/**
 * The Telegram listener's durable state, one JSON file per instance, written whole under a temporary name, fsynced
 * and renamed, so a crash leaves the old state or the new one. Saves are serialized.
 */
export class TelegramState {
  readonly file: string;
  readonly data: TelegramStateData;
  #saving: Promise<void> = Promise.resolve();

  private constructor(file: string, data: TelegramStateData) {
    this.file = file;
    this.data = data;
  }

  static async load(file: string): Promise<TelegramState> {
    let text: string | undefined;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (text === undefined) {
      return new TelegramState(file, {
        version: 1,
        offset: 0,
        peers: {},
        conversations: {},
        sent: {},
        notified: {},
        notifications: 0,
      });
    }
    let parsed: Partial<TelegramStateData>;
    try {
      parsed = JSON.parse(text) as Partial<TelegramStateData>;
    } catch (error) {
      throw new Error(
        `the Telegram state ${path.basename(file)} is not JSON (${(error as Error).message}); fix or remove it (removing it resends recent replies)`,
      );
    }
    return new TelegramState(file, {
      version: 1,
      offset: typeof parsed.offset === 'number' ? parsed.offset : 0,
      peers: parsed.peers ?? {},
      conversations: parsed.conversations ?? {},
      sent: parsed.sent ?? {},
      notified: parsed.notified ?? {},
      notifications: typeof parsed.notifications === 'number' ? parsed.notifications : 0,
    });
  }

  conversation(id: string): TelegramConversationState | undefined {
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

import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { withFileLock } from '@assistant/notes';
import * as z from 'zod';
import { assertConversationId } from './message-id.ts';

/**
 * Which turn runs in a conversation, `data/chat/turns/<conversation id>.json`: the lease that keeps two turns of one
 * conversation from running at once, and what the server needs to know about the running one (its task, for
 * `/stop` and steering; the question it waits on, so the owner's next message answers it).
 */
const turnStateSchema = z.object({
  conversation: z.string(),
  /** The task running the turn. */
  task: z.string(),
  owner: z.object({ host: z.string(), pid: z.int() }),
  /** The user message ids the turn answers, in order; steered messages and answers to questions are added. */
  batch: z.array(z.string()),
  started_at: z.string(),
  heartbeat_at: z.string(),
  /** A clarification the turn waits on: the owner's next plain message answers it. */
  question: z.object({ id: z.string(), text: z.string(), asked_at: z.string() }).optional(),
  /**
   * The messages that answered the turn's questions. The worker can take a message as the answer before the server
   * that stored it has said how it is delivered: the server finds it here (`answered_question`), not as `queued`.
   */
  answers: z.array(z.string()).optional(),
});
export type TurnState = z.infer<typeof turnStateSchema>;

export interface TurnStatesOptions {
  /** `data/chat/turns`. */
  directory: string;
  /** A holder whose heartbeat is older than this is gone (on another host, the only sign). @default 10_000 */
  staleMs?: number;
  /** @default () => Date.now() */
  now?: () => number;
}

export type AcquireResult =
  /** `previous` is the state of a holder that was gone (crashed): its batch is still to be answered. */
  | { status: 'acquired'; state: TurnState; resumed: boolean; previous?: TurnState }
  | { status: 'busy'; holder: TurnState };

export class TurnStates {
  readonly directory: string;
  readonly staleMs: number;
  readonly #now: () => number;
  readonly #owner = { host: hostname(), pid: process.pid };

  constructor(options: TurnStatesOptions) {
    this.directory = path.resolve(options.directory);
    this.staleMs = options.staleMs ?? 10_000;
    this.#now = options.now ?? (() => Date.now());
  }

  file(conversationId: string): string {
    return path.join(this.directory, `${assertConversationId(conversationId)}.json`);
  }

  /** The recorded state, live or not; undefined when no turn was recorded (or the file is not a turn state). */
  async read(conversationId: string): Promise<TurnState | undefined> {
    let text: string;
    try {
      text = await readFile(this.file(conversationId), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const parsed = turnStateSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** True while the holder is alive: its process exists (same host) and its heartbeat is fresh. */
  isLive(state: TurnState): boolean {
    const beat = Date.parse(state.heartbeat_at);
    if (!Number.isFinite(beat) || this.#now() - beat > this.staleMs) return false;
    if (state.owner.host !== this.#owner.host) return true;
    if (state.owner.pid === this.#owner.pid) return true;
    try {
      process.kill(state.owner.pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  }

  /** The running turn of a conversation, if any. */
  async running(conversationId: string): Promise<TurnState | undefined> {
    const state = await this.read(conversationId);
    return state && this.isLive(state) ? state : undefined;
  }

  /**
   * Takes the conversation's lease for `task`. The same task taking it again (a retry, a worker restarted after a
   * crash) resumes with its recorded batch; a live other holder makes it `busy`; a holder that is gone is taken
   * over and returned as `previous`. `batch` is called, under the lease's mutex, only for a fresh turn.
   */
  async acquire(
    conversationId: string,
    options: { task: string; batch: (previous: TurnState | undefined) => Promise<string[]> | string[] },
  ): Promise<AcquireResult> {
    return this.#locked(conversationId, async () => {
      const existing = await this.read(conversationId);
      const now = new Date(this.#now()).toISOString();
      if (existing && existing.task === options.task) {
        const state = { ...existing, owner: this.#owner, heartbeat_at: now };
        await this.#write(conversationId, state);
        return { status: 'acquired', state, resumed: true } as const;
      }
      if (existing && this.isLive(existing)) return { status: 'busy', holder: existing } as const;
      const state: TurnState = {
        conversation: conversationId,
        task: options.task,
        owner: this.#owner,
        batch: await options.batch(existing),
        started_at: now,
        heartbeat_at: now,
      };
      await this.#write(conversationId, state);
      return { status: 'acquired', state, resumed: false, ...(existing ? { previous: existing } : {}) } as const;
    });
  }

  /**
   * Changes the state of the turn `task` holds (the batch grew, a question was asked or answered) and renews its
   * heartbeat. CHAT_TURN_LOST when another task holds the lease now (this one was taken for gone).
   */
  async update(
    conversationId: string,
    task: string,
    change: (state: TurnState) => TurnState = (state) => state,
  ): Promise<TurnState> {
    return this.#locked(conversationId, async () => {
      const existing = await this.read(conversationId);
      if (!existing || existing.task !== task) {
        throw new AssistantError(
          'CHAT_TURN_LOST',
          `The turn of conversation ${conversationId} is no longer held by task ${task}${existing ? ` (now ${existing.task})` : ''}`,
        );
      }
      const state = { ...change(existing), heartbeat_at: new Date(this.#now()).toISOString() };
      await this.#write(conversationId, state);
      return state;
    });
  }

  /** Gives the lease up, if `task` still holds it. */
  async release(conversationId: string, task: string): Promise<void> {
    await this.#locked(conversationId, async () => {
      const existing = await this.read(conversationId);
      if (existing?.task === task) await unlink(this.file(conversationId)).catch(() => {});
    });
  }

  async #write(conversationId: string, state: TurnState): Promise<void> {
    const file = this.file(conversationId);
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    const handle = await open(tmp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(state, null, 2)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  }

  /** Runs `work` holding `<conversation>.json.lock`, a file created exclusively for the few milliseconds it takes. */
  async #locked<T>(conversationId: string, work: () => Promise<T>): Promise<T> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    return withFileLock(this.file(conversationId), work);
  }
}

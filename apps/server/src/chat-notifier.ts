import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';
import path from 'node:path';
import {
  type ApprovalsIndex,
  approvalRendering,
  describeApproval,
  fitRendering,
  listApprovals,
} from '@assistant/actions';
import type { ChatService } from '@assistant/chat';
import { isAssistantError } from '@assistant/errors';
import type { NoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import type { Logger } from 'pino';
import type { WebhookOutbox } from './webhook-outbox.ts';

/** The conversation notifications go to: the owner's, shown by `assistant chat notifications`, REST and Telegram. */
export const notificationsConversationId = 'notifications';

/**
 * The most characters of a request's rendering a notification carries: the notifications conversation is forwarded
 * to Telegram message by message, and a message holds 4,096 characters with the line above it.
 */
const notificationRenderingMaxChars = 3_500;

export type NotificationKind = 'approval' | 'clarification' | 'failure';

export interface ChatNotifierOptions {
  chat: ChatService;
  notes: NoteStore;
  queue: Pick<TaskQueue, 'get' | 'list'>;
  /** `data/control`: the events of every agent task, where their clarification questions appear. */
  controlRoot: string;
  logger: Pick<Logger, 'warn' | 'info'>;
  /** How often approvals, questions and failures are looked for. @default 2_000 */
  pollMs?: number;
  /** Failures and questions older than this when the server starts are not told again. @default 1 hour */
  lookbackMs?: number;
  /** @default () => Date.now() */
  now?: () => number;
  /** Enqueues the signed webhook deliveries of a notification (`webhooks.outbound`). @default none */
  outbox?: WebhookOutbox;
  /** The pending requests read incrementally (the server's one `ApprovalsIndex`). @default each pass reads them all */
  approvals?: Pick<ApprovalsIndex, 'pending'>;
}

/**
 * Tells the owner what waits for them, in the conversation `notifications` (notes/chats/notifications.md and its
 * event stream, which the Telegram listener forwards): a new approval request, a question an agent task asks, a
 * task that failed for good. Each notification's message id is derived from what it is about, and the transcript
 * holds each id once, so a restarted server never tells the same thing twice.
 */
export class ChatNotifier {
  readonly #options: ChatNotifierOptions;
  readonly #since: number;
  readonly #offsets = new Map<string, number>();
  /**
   * The notifications told (or found told by an earlier run), by message id, with the kind of look that tells them:
   * kept while that look still sees what they tell of (a pending request, a failed task), forgotten after, so the set
   * holds what waits now and not every notification ever told.
   */
  readonly #told = new Map<string, NotificationKind>();
  /**
   * The notification ids the transcript held when the server started (or the conversation was made again): read once,
   * not per notification, and dropped after the first scan whose every look succeeded has moved what still matters
   * into `#told`.
   */
  #inTranscript: Set<string> | undefined;
  /** The ids the looks of the current scan came upon. */
  #seen = new Set<string>();
  /** Whether the conversation is known to exist (it is looked for again after it was found gone). */
  #ready = false;
  /** Failed tasks looked at already, while they stay in failed/ (a retried task leaves it and is looked at again). */
  readonly #seenFailures = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: ChatNotifierOptions) {
    this.#options = options;
    this.#since = (options.now ?? Date.now)() - (options.lookbackMs ?? 3_600_000);
  }

  start(): void {
    const tick = () => {
      this.#running = this.#running.then(() => this.scan()).catch(() => {});
      if (!this.#closed) this.#timer = setTimeout(tick, this.#options.pollMs ?? 2_000);
      this.#timer?.unref();
    };
    tick();
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    await this.#running;
  }

  /** How many notifications it remembers having told: what still waits, not every one ever told. */
  get remembered(): number {
    return this.#told.size;
  }

  /** One look at approvals, questions and failures; what is new is told. */
  async scan(): Promise<void> {
    await this.#ensureConversation();
    let everyLook = true;
    for (const [name, kind, look] of [
      ['approvals', 'approval', () => this.#approvals()],
      ['questions', 'clarification', () => this.#questions()],
      ['failures', 'failure', () => this.#failures()],
    ] as const) {
      this.#seen = new Set();
      try {
        await look();
        // What this look no longer sees is forgotten; a look that failed forgets nothing (it may have missed some).
        for (const [id, toldKind] of this.#told) if (toldKind === kind && !this.#seen.has(id)) this.#told.delete(id);
      } catch (error) {
        everyLook = false;
        if (isAssistantError(error) && error.code === 'CHAT_NOT_FOUND') this.#ready = false;
        this.#options.logger.warn({ err: error }, `chat notifications: could not look at ${name}`);
      }
    }
    if (everyLook) this.#inTranscript = undefined;
  }

  async #approvals(): Promise<void> {
    const pending = this.#options.approvals
      ? await this.#options.approvals.pending()
      : await listApprovals(this.#options.notes, { status: 'pending' });
    for (const approval of pending) {
      await this.#notify(`approval:${approval.id}`, {
        kind: 'approval',
        // A tool call's title names only its task: say what the call would do, too.
        // What will happen goes with it, in full up to what a Telegram forward holds; past that, plainly how much more
        // and where to read it.
        text: `Approval needed: ${approval.kind === 'tool_call' ? `${describeApproval(approval)} for ` : ''}${approval.title} (${approval.id}): ${approval.reason}. It expires ${approval.expires_at}. Answer with /approve ${approval.id} or /reject ${approval.id} (or \`assistant approve ${approval.id}\`).\n\nWhat will happen:\n${fitRendering({ rendering: approvalRendering(approval).rendering, maxChars: notificationRenderingMaxChars, id: approval.id })}`,
        details: { approval: approval.id },
      });
    }
  }

  async #questions(): Promise<void> {
    const root = this.#options.controlRoot;
    // Only running tasks wait for an answer: their control files are looked at, not every task's there ever was
    // (control/ keeps finished tasks' files until housekeeping prunes them).
    const tasks = (await this.#options.queue.list({ state: 'active' })).flatMap((entry) =>
      entry.name && entry.name.type !== 'chat.turn' ? [entry.name.id] : [],
    );
    const files = new Set(tasks.map((taskId) => path.join(root, taskId, 'events.jsonl')));
    // What a task that finished was read up to is forgotten with it.
    for (const file of this.#offsets.keys()) if (!files.has(file)) this.#offsets.delete(file);
    for (const taskId of tasks) {
      const file = path.join(root, taskId, 'events.jsonl');
      const info = await stat(file).catch(() => undefined);
      if (!info || info.mtimeMs < this.#since) continue;
      const from = this.#offsets.get(file) ?? 0;
      if (info.size <= from) continue;
      // Only what is new, and at most 4 MiB of it a pass: the rest is read on the next.
      const text = await readRange(file, from, Math.min(info.size - from, 4 * 1024 * 1024));
      const end = text.lastIndexOf(10);
      if (end < 0) continue;
      this.#offsets.set(file, from + end + 1);
      for (const line of text.subarray(0, end).toString('utf8').split('\n')) {
        let event: { type?: unknown; id?: unknown; question?: unknown; at?: unknown };
        try {
          event = JSON.parse(line) as typeof event;
        } catch {
          continue;
        }
        if (event.type !== 'clarification' || typeof event.id !== 'string' || typeof event.question !== 'string')
          continue;
        if (typeof event.at === 'string' && Date.parse(event.at) < this.#since) continue;
        const record = await this.#options.queue.get(taskId);
        // A chat turn asks in its own conversation; a task that is no longer running waits for no answer.
        if (!record?.task || record.task.type === 'chat.turn' || record.state !== 'active') continue;
        await this.#notify(`clarification:${taskId}:${event.id}`, {
          kind: 'clarification',
          text: `Task ${record.task.type} (${taskId}) asks: ${event.question} Answer with \`assistant steer ${taskId} answer ${event.id} …\`.`,
          details: { task: taskId, clarification: event.id },
        });
      }
    }
  }

  async #failures(): Promise<void> {
    const failed = await this.#options.queue.list({ state: 'failed', limit: 50 });
    const current = new Set(failed.flatMap((entry) => (entry.name ? [entry.name.id] : [])));
    // A task retried leaves failed/: when it fails again it is looked at again.
    for (const id of this.#seenFailures) if (!current.has(id)) this.#seenFailures.delete(id);
    for (const id of current) {
      if (this.#seenFailures.has(id)) continue;
      this.#seenFailures.add(id);
      const task = (await this.#options.queue.get(id))?.task;
      if (!task) continue;
      const failedAt = Date.parse(task.finishedAt ?? task.createdAt);
      if (!(failedAt >= this.#since)) continue;
      const reason = task.error?.message ?? 'no reason recorded';
      // A retry resets the attempts: the time it failed tells one failure of the task from the next. When telling
      // fails (the outbox could not enqueue), the failure is looked at again at the next scan.
      await this.#notify(`failure:${task.id}:${task.finishedAt ?? task.attempts}`, {
        kind: 'failure',
        taskType: task.type,
        text: `Task ${task.type} (${task.id}) failed after ${task.attempts} attempt(s): ${reason}. Retry with \`assistant task retry ${task.id}\`.`,
        details: { task: task.id },
      }).catch((error: unknown) => {
        this.#seenFailures.delete(id);
        throw error;
      });
    }
  }

  async #notify(
    key: string,
    notification: { kind: NotificationKind; text: string; details: Record<string, string>; taskType?: string },
  ): Promise<void> {
    const { chat } = this.#options;
    const id = `n-${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
    this.#seen.add(id);
    if (this.#told.has(id)) return;
    if (this.#inTranscript?.has(id)) {
      this.#told.set(id, notification.kind);
      return;
    }
    const at = new Date((this.#options.now ?? Date.now)()).toISOString();
    // The outbox first: its tasks are on the queue before the notification is in the transcript, so a crash between
    // the two tells it again (the same webhook-id, which receivers drop) rather than never sending it.
    await this.#options.outbox?.({
      id,
      kind: notification.kind,
      text: notification.text,
      at,
      details: notification.details,
      ...(notification.taskType === undefined ? {} : { taskType: notification.taskType }),
    });
    // The event first, then the transcript: a crash in between tells it again (readers drop a repeated id), where
    // the other order would leave it in the transcript and never on the stream Telegram forwards.
    await chat.events.append(notificationsConversationId, {
      type: 'message',
      message: { id, role: 'assistant', text: notification.text, at, status: 'complete' },
      notification: { kind: notification.kind, ...notification.details },
    });
    await chat.conversations.appendMessage(notificationsConversationId, {
      id,
      role: 'assistant',
      text: notification.text,
      at,
      status: 'complete',
    });
    this.#told.set(id, notification.kind);
    this.#options.logger.info({ notification: notification.kind, ...notification.details }, 'told the owner');
  }

  /**
   * Makes the conversation when it is not there, and reads which notifications its transcript holds: once, not every
   * scan (a year of notifications is a long transcript), and again only after it was found gone.
   */
  async #ensureConversation(): Promise<void> {
    if (this.#ready) return;
    const { chat } = this.#options;
    const ids = (messages: { id: string }[]) => new Set(messages.map((message) => message.id));
    try {
      this.#inTranscript = ids((await chat.get(notificationsConversationId)).messages);
    } catch (error) {
      if (!isAssistantError(error) || error.code !== 'CHAT_NOT_FOUND') throw error;
      this.#inTranscript = new Set();
      await chat.conversations
        .create({ id: notificationsConversationId, title: 'Notifications', channel: 'notifications', peer: 'owner' })
        .catch(async (created: unknown) => {
          // Another pass created it meanwhile: fine.
          this.#inTranscript = ids(
            (
              await chat.get(notificationsConversationId).catch(() => {
                throw created;
              })
            ).messages,
          );
        });
    }
    // Made again after it was gone: what it held then is no longer told.
    this.#told.clear();
    this.#ready = true;
  }
}

/** `length` bytes of a file from `from` (fewer when it is shorter now). */
async function readRange(file: string, from: number, length: number): Promise<Buffer> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(length);
    const { bytesRead } = await handle.read(buffer, 0, length, from);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

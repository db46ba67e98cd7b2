import { AssistantError } from '@assistant/errors';
import {
  BrokenNoteError,
  FrontmatterError,
  type Note,
  type NoteStore,
  parseFrontmatter,
  splitNote,
} from '@assistant/notes';
import * as z from 'zod';
import type { ChatInbox, InboxMessage } from './inbox.ts';
import { assertConversationId, idPattern, newMessageId } from './message-id.ts';
import { type ChatMode, chatModeSchema, chatModes, parseChatMode } from './modes.ts';
import {
  type AssistantStatus,
  appendSection,
  type ChatRole,
  type MessageStatus,
  parseTranscript,
  renderSection,
  type ToolStep,
  type TranscriptProblem,
} from './transcript.ts';

/**
 * What the store needs of the index's journal (ConversationChanges): it wraps each write of a conversation note. Named
 * here, not imported, because the index reads the store's summaries (no import circle, issue 38).
 */
export interface ConversationWriteJournal {
  around<T>(conversationId: string, write: () => Promise<T>): Promise<T>;
}

/** A conversation's frontmatter as `get` and `list` return it. */
export interface ConversationSummary {
  id: string;
  title: string;
  /** Where the conversation happens: `cli`, `api`, `telegram`… */
  channel: string;
  /** Who the assistant talks with on that channel (`owner`, a Telegram user id…). */
  peer: string;
  mode: ChatMode;
  created: string;
  updated: string;
  /** The note, relative to the notes root: `chats/<id>.md`. */
  path: string;
  /**
   * The persona its turns run as (frontmatter `persona`). Absent in a note written before personas, or holding no
   * persona name: its turns run as the chat instance's `persona` setting.
   */
  persona?: string;
  /** The conversation and message it was forked from (frontmatter `forked_from`), for a fork. */
  forked_from?: ForkedFrom;
}

/** Where a fork came from: the original conversation and the last message it copied. */
export interface ForkedFrom {
  conversation: string;
  message: string;
}

/** A message as `get` returns it. */
export interface ChatMessage {
  id: string;
  role: ChatRole;
  text: string;
  at: string;
  reply_to?: string[];
  status: MessageStatus;
  steps?: ToolStep[];
}

export interface Conversation extends ConversationSummary {
  messages: ChatMessage[];
  /** Sections (or a frontmatter value) a person broke: skipped, reported, never rewritten. */
  problems: TranscriptProblem[];
}

export interface ConversationStoreOptions {
  notes: NoteStore;
  /** Folder under the notes root. @default 'chats' */
  folder?: string;
  /** The mode of a new conversation, and of one whose frontmatter `mode` is not a mode. @default 'followup' */
  defaultMode?: ChatMode;
  /** When given, `get` lists accepted messages that are not in the transcript yet, with status `pending`. */
  inbox?: ChatInbox;
  /** @default () => new Date() */
  now?: () => Date;
  /**
   * Journals each write for the conversation list's index (conversation-index.ts's ConversationChanges), when the
   * notes are on disk here.
   */
  changes?: ConversationWriteJournal;
  /** The persona recorded on a new conversation that names none (the chat instance's `persona`). @default none */
  defaultPersona?: string;
}

export interface CreateConversationOptions {
  title?: string;
  /** @default 'local' */
  channel?: string;
  /** @default 'owner' */
  peer?: string;
  mode?: ChatMode;
  /** @default a new time-ordered id */
  id?: string;
  /** The persona its turns run as, recorded in the frontmatter. @default the store's `defaultPersona` */
  persona?: string;
}

export interface ForkConversationOptions {
  /** The conversation to fork; it is only read. */
  conversation: string;
  /** The last message the fork holds (a message id of the original's transcript). */
  message: string;
  /** Where the fork happens (`cli`, `api`…). @default the original's */
  channel?: string;
  /** @default the original's */
  peer?: string;
  /** @default `<the original's title> (fork)` */
  title?: string;
  /** @default a new time-ordered id */
  id?: string;
}

export interface AppendMessageOptions {
  /** @default a new time-ordered id; the inbox's id for a user message that came through it. */
  id?: string;
  role: ChatRole;
  text: string;
  /** @default now */
  at?: string;
  reply_to?: string[];
  status?: AssistantStatus;
  steps?: ToolStep[];
}

const frontmatterSchema = z.object({
  id: z.string().regex(idPattern),
  title: z.unknown().optional(),
  channel: z.string().min(1),
  peer: z.unknown().optional(),
  mode: z.unknown().optional(),
  created: z.string().min(1),
  updated: z.unknown().optional(),
  persona: z.unknown().optional(),
  forked_from: z.unknown().optional(),
});

/** A persona name as packages/agents names them (the file name of `personas/<name>.md`). */
export const personaNamePattern = /^[A-Za-z0-9_-]{1,64}$/;

const forkedFromSchema = z.object({ conversation: z.string().regex(idPattern), message: z.string().regex(idPattern) });

/**
 * Conversations as notes: `chats/<id>.md` under the notes root, frontmatter `id, title, channel, peer, mode,
 * created, updated` and a markdown transcript with one section per message (transcript.ts). Every read goes to
 * the file, so a person's edit of the title or mode takes effect at once; appends go through NoteStore's locked
 * update, which changes only `updated` in the frontmatter and adds a section at the end of the body, keeping
 * everything a person wrote.
 */
export class ConversationStore {
  readonly #notes: NoteStore;
  readonly #folder: string;
  readonly #defaultMode: ChatMode;
  readonly #inbox: ChatInbox | undefined;
  readonly #now: () => Date;
  readonly #changes: ConversationWriteJournal | undefined;
  readonly #defaultPersona: string | undefined;

  constructor(options: ConversationStoreOptions) {
    this.#changes = options.changes;
    this.#defaultPersona = options.defaultPersona === undefined ? undefined : assertPersona(options.defaultPersona);
    this.#notes = options.notes;
    this.#folder = options.folder ?? 'chats';
    this.#defaultMode = options.defaultMode ?? 'followup';
    this.#inbox = options.inbox;
    this.#now = options.now ?? (() => new Date());
  }

  #path(id: string): string {
    return `${this.#folder}/${assertConversationId(id)}.md`;
  }

  async create(options: CreateConversationOptions = {}): Promise<ConversationSummary> {
    const id = options.id ?? `c${newMessageId().slice(1)}`;
    const notePath = this.#path(id);
    const mode = options.mode === undefined ? this.#defaultMode : parseChatMode(options.mode);
    const persona = options.persona === undefined ? this.#defaultPersona : assertPersona(options.persona);
    const now = this.#now().toISOString();
    const data = {
      id,
      title: options.title ?? 'New conversation',
      channel: options.channel ?? 'local',
      peer: options.peer ?? 'owner',
      mode,
      ...(persona === undefined ? {} : { persona }),
      created: now,
      updated: now,
    };
    await this.#journaled(id, () => this.#notes.create(notePath, { data, body: '' }));
    return { ...data, path: notePath };
  }

  /**
   * A new conversation that holds the messages of `conversation` up to and including `message`, its frontmatter
   * saying `forked_from: {conversation, message}`; the original is only read. The copied messages keep their ids,
   * times, texts, reply_to, status and tool steps, so the fork's next turn sees the history as it was at that
   * message and nothing after it. Mode and persona are the original's. CHAT_NOT_FOUND for an unknown conversation,
   * CHAT_MESSAGE_NOT_FOUND for a message its transcript does not hold (one still waiting in the inbox included).
   */
  async fork(options: ForkConversationOptions): Promise<ConversationSummary> {
    const original = await this.get(assertConversationId(options.conversation));
    if (!idPattern.test(options.message)) {
      throw new AssistantError(
        'CHAT_INPUT_INVALID',
        `Expected a message id of [a-z0-9-] (at most 64 characters), got ${JSON.stringify(options.message)}`,
      );
    }
    const at = original.messages.findIndex((message) => message.id === options.message);
    const found = original.messages[at];
    if (!found || found.status === 'pending') {
      const said = original.messages.filter((message) => message.status !== 'pending');
      const known =
        said.length === 0
          ? 'its transcript holds no message yet'
          : `its transcript holds ${said.length} message${said.length === 1 ? '' : 's'}, ${said[0]?.id} to ${said.at(-1)?.id}`;
      throw new AssistantError(
        'CHAT_MESSAGE_NOT_FOUND',
        found
          ? `Message ${options.message} of conversation ${original.id} waits in the inbox and is not in its transcript yet; a fork starts from a message of the transcript`
          : `Conversation ${original.id} has no message ${options.message} (${known})`,
        { hint: `\`assistant chat ${original.id}\` or GET /api/chats/${original.id} lists its messages and their ids` },
      );
    }
    const copied = original.messages.slice(0, at + 1).filter((message) => message.status !== 'pending');
    const id = options.id ?? `c${newMessageId().slice(1)}`;
    const notePath = this.#path(id);
    const now = this.#now().toISOString();
    const forkedFrom: ForkedFrom = { conversation: original.id, message: found.id };
    const data = {
      id,
      title: options.title ?? `${original.title || original.id} (fork)`,
      channel: options.channel ?? original.channel,
      peer: options.peer ?? original.peer,
      mode: original.mode,
      ...(original.persona === undefined
        ? this.#defaultPersona === undefined
          ? {}
          : { persona: this.#defaultPersona }
        : { persona: original.persona }),
      created: now,
      updated: now,
      forked_from: forkedFrom,
    };
    // Rendered from the messages as they read (a section a person broke is left out, as every turn leaves it out);
    // a user message's status is derived from the replies, so one answered after the fork point reads `received`.
    const body = copied
      .map((message) =>
        renderSection({
          id: message.id,
          role: message.role,
          text: message.text,
          at: message.at,
          ...(message.role === 'assistant'
            ? {
                reply_to: message.reply_to ?? [],
                status: message.status === 'partial' || message.status === 'failed' ? message.status : 'complete',
              }
            : {}),
          ...(message.steps ? { steps: message.steps } : {}),
        }),
      )
      .reduce((text, section) => appendSection(text, section), '');
    await this.#journaled(id, () => this.#notes.create(notePath, { data, body }));
    return { ...data, path: notePath };
  }

  /** The summary of one conversation note by its path (`chats/<id>.md`); undefined when it is gone. */
  async summaryOf(notePath: string): Promise<ConversationSummary | undefined> {
    let note: Note | undefined;
    try {
      note = await this.#notes.read(notePath);
    } catch (error) {
      if (error instanceof BrokenNoteError) throw brokenNote(error.path, error.line, error.message, error);
      throw error;
    }
    return note ? this.#summary(note.path, note.data, []) : undefined;
  }

  #journaled<T>(id: string, write: () => Promise<T>): Promise<T> {
    return this.#changes ? this.#changes.around(id, write) : write();
  }

  /** Every conversation, newest first (by `updated`, then `created`). Broken notes go to `onBroken`. */
  async list(options: { onBroken?: (error: AssistantError) => void } = {}): Promise<ConversationSummary[]> {
    const notes = await this.#notes.query({
      folder: this.#folder,
      onBroken: (error) => options.onBroken?.(brokenNote(error.path, error.line, error.message, error)),
    });
    const found: ConversationSummary[] = [];
    for (const note of notes) {
      try {
        found.push(this.#summary(note.path, note.data, []));
      } catch (error) {
        if (!(error instanceof AssistantError)) throw error;
        options.onBroken?.(error);
      }
    }
    return found.sort((a, b) => b.updated.localeCompare(a.updated) || b.created.localeCompare(a.created));
  }

  /** The conversation as its note says now, messages parsed from the transcript. */
  async get(id: string): Promise<Conversation> {
    const notePath = this.#path(id);
    // As text, not `read`: a broken frontmatter is reported as CHAT_NOTE_BROKEN below, with its line.
    const text = (await this.#notes.readText(notePath))?.text;
    if (text === undefined) {
      throw new AssistantError('CHAT_NOT_FOUND', `No conversation ${id} (no ${notePath} under the notes root)`);
    }
    const parts = splitNote(text);
    let data: Record<string, unknown>;
    try {
      data = parts.hasFrontmatter ? parseFrontmatter(parts.frontmatter, 1) : {};
    } catch (error) {
      if (error instanceof FrontmatterError) throw brokenNote(notePath, error.line, error.message, error);
      throw error;
    }
    const problems: TranscriptProblem[] = [];
    const summary = this.#summary(notePath, data, problems);
    const firstLine = text.slice(0, text.length - parts.body.length).split('\n').length;
    const transcript = parseTranscript(parts.body, { path: notePath, firstLine });
    problems.push(...transcript.problems);
    const answered = new Set(
      transcript.messages.flatMap((message) => (message.role === 'assistant' ? (message.reply_to ?? []) : [])),
    );
    const messages: ChatMessage[] = transcript.messages.map((message) => ({
      ...message,
      status:
        message.role === 'assistant'
          ? (message.status ?? 'complete')
          : answered.has(message.id)
            ? 'answered'
            : 'received',
    }));
    if (this.#inbox) {
      const inTranscript = new Set(messages.map((message) => message.id));
      const pending = await this.#inbox.pending(id);
      messages.push(
        ...pending
          .filter((message: InboxMessage) => !inTranscript.has(message.id))
          .map(
            (message): ChatMessage => ({
              id: message.id,
              role: 'user',
              text: message.text,
              at: message.at,
              status: 'pending',
            }),
          ),
      );
    }
    return { ...summary, messages, problems };
  }

  /**
   * Adds a message section at the end of the transcript and sets `updated`, under the note's lock, keeping every
   * byte a person wrote. Appending an id that the transcript already holds writes nothing and returns
   * `{appended: false}`: a turn that is rerun after a crash cannot put the same message in twice.
   */
  async appendMessage(
    conversationId: string,
    options: AppendMessageOptions,
  ): Promise<{ id: string; appended: boolean }> {
    const notePath = this.#path(conversationId);
    const id = options.id ?? newMessageId();
    if (!idPattern.test(id)) {
      throw new AssistantError('CHAT_INPUT_INVALID', `Expected a message id of [a-z0-9-], got ${JSON.stringify(id)}`);
    }
    for (const replyId of options.reply_to ?? []) {
      if (!idPattern.test(replyId)) {
        throw new AssistantError(
          'CHAT_INPUT_INVALID',
          `Expected reply_to ids of [a-z0-9-], got ${JSON.stringify(replyId)}`,
        );
      }
    }
    const now = this.#now().toISOString();
    const section = renderSection({
      id,
      role: options.role,
      text: options.text,
      at: options.at ?? now,
      ...(options.role === 'assistant'
        ? { reply_to: options.reply_to ?? [], status: options.status ?? 'complete' }
        : {}),
      ...(options.steps ? { steps: options.steps } : {}),
    });
    let appended = true;
    try {
      await this.#journaled(conversationId, () =>
        this.#notes.update(notePath, {
          change: (current: Note) => {
            // Looked up in the note as it is under the lock: the check and the append cannot interleave.
            const headings = current.body.split('\n').filter((line) => line.startsWith('### '));
            if (headings.some((line) => line.endsWith(` · ${id}`))) {
              appended = false;
              return {};
            }
            return { set: { updated: now }, body: appendSection(current.body, section) };
          },
        }),
      );
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new AssistantError(
          'CHAT_NOT_FOUND',
          `No conversation ${conversationId} (no ${notePath} under the notes root)`,
        );
      }
      if (error instanceof BrokenNoteError) throw brokenNote(error.path, error.line, error.message, error);
      throw error;
    }
    return { id, appended };
  }

  #summary(notePath: string, data: Record<string, unknown>, problems: TranscriptProblem[]): ConversationSummary {
    const parsed = frontmatterSchema.safeParse(data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw brokenNote(
        notePath,
        1,
        `frontmatter \`${issue?.path.join('.') ?? ''}\`: ${issue?.message ?? 'invalid'}`,
        parsed.error,
      );
    }
    const mode = chatModeSchema.safeParse(parsed.data.mode);
    if (!mode.success) {
      problems.push({
        path: notePath,
        line: 1,
        message: `frontmatter \`mode\` is ${JSON.stringify(parsed.data.mode)}, not one of ${chatModes.join(', ')}; using ${this.#defaultMode}`,
      });
    }
    const text = (value: unknown, fallback: string) =>
      typeof value === 'string' || typeof value === 'number' ? String(value) : fallback;
    const persona = parsed.data.persona;
    const personaOk = typeof persona === 'string' && personaNamePattern.test(persona);
    if (persona !== undefined && !personaOk) {
      problems.push({
        path: notePath,
        line: 1,
        message: `frontmatter \`persona\` is ${JSON.stringify(persona)}, not a persona name (letters, digits, _ and -); the chat instance's \`persona\` is used`,
      });
    }
    const forkedFrom = forkedFromSchema.safeParse(parsed.data.forked_from);
    if (parsed.data.forked_from !== undefined && !forkedFrom.success) {
      problems.push({
        path: notePath,
        line: 1,
        message: `frontmatter \`forked_from\` is ${JSON.stringify(parsed.data.forked_from)}; expected {conversation: <id>, message: <id>}`,
      });
    }
    return {
      id: parsed.data.id,
      title: text(parsed.data.title, ''),
      channel: parsed.data.channel,
      peer: text(parsed.data.peer, ''),
      mode: mode.success ? mode.data : this.#defaultMode,
      created: parsed.data.created,
      updated: text(parsed.data.updated, parsed.data.created),
      path: notePath,
      ...(personaOk ? { persona } : {}),
      ...(forkedFrom.success ? { forked_from: { ...forkedFrom.data } } : {}),
    };
  }
}

/** `name` when it is a persona name; CHAT_INPUT_INVALID otherwise. */
function assertPersona(name: string): string {
  if (!personaNamePattern.test(name)) {
    throw new AssistantError(
      'CHAT_INPUT_INVALID',
      `Expected a persona name of letters, digits, _ and - (at most 64 characters), got ${JSON.stringify(name)}`,
    );
  }
  return name;
}

function brokenNote(notePath: string, line: number, message: string, cause: unknown): AssistantError {
  const detail = message.startsWith(`${notePath}:`) ? message : `${notePath}:${line}: ${message}`;
  return new AssistantError('CHAT_NOTE_BROKEN', detail, {
    cause,
    hint: 'Fix the note by hand; Assistant never rewrites a note it cannot read.',
  });
}

import { watch } from 'node:fs';
import path from 'node:path';
import type { AgentEvent, AgentResult, SteerableHandle, Tool } from '@assistant/agent';
import type {
  ChatEventLog,
  ChatInbox,
  ChatMessage,
  ChatMode,
  ConversationStore,
  InboxMessage,
  ToolStep,
  TurnState,
  TurnStates,
} from '@assistant/chat';
import { type AssistantError, isAssistantError } from '@assistant/errors';
import { type ChatModel, DelayedError, type ChatMessage as ModelMessage, UnrecoverableError } from '@assistant/sdk';
import { effectiveMode, pickBatch } from './pick-batch.ts';

/** The chat stores a turn works on (the handler context's `chat`). */
export interface ChatTurnStores {
  conversations: ConversationStore;
  inbox: ChatInbox;
  events: ChatEventLog;
  turns: TurnStates;
  /** Refuses steering requests of this task no loop applied (the worker's `context.chat` has it). */
  discardSteering?: (reason: string) => Promise<number>;
}

/** What the runner asks of the agent: `context.agent` in the worker, `startAgent` over a test store in tests. */
export interface TurnAgentOptions {
  system: string;
  input: ModelMessage[];
  tools: Tool[];
  maxSteps: number;
  model: ChatModel;
  /** The loop's transcript: `chat-<conversation>-<first batch id>`, so a turn taken over resumes the same loop. */
  transcriptName: string;
  /** The persona the loop runs as: the conversation's (frontmatter `persona`), else the instance's `persona`. */
  persona: string;
  onEvent: (event: AgentEvent) => void;
}

/** What the tools of one turn may know of it. */
export interface TurnToolsContext {
  conversationId: string;
  /** The conversation's `channel` and `peer` (frontmatter): `owner` for the REST API and the local CLI. */
  channel: string;
  peer: string;
  /** The owner's messages of this turn so far (its batch, steered messages, answers to questions). */
  ownerTexts: () => readonly string[];
  /** Shows an approval request in the chat. */
  showApproval: (approval: { id: string; title: string; summary: string }) => Promise<void>;
}

/** What a persona brings to a chat turn (see ChatTurnRunnerOptions.persona). */
export interface ChatPersonaSetup {
  instructions?: string;
  model?: ChatModel;
  tools?: Tool[];
  /** The persona's code mode (docs/codeact.md): the turn's whole tool list, with run_code and search_tools. */
  withCode?: (tools: Tool[]) => Tool[];
}

export interface ChatTurnSettings {
  mode: ChatMode;
  collectWindowMs: number;
  collectMax: number;
  maxSteps: number;
  /** The persona of a conversation whose note records none (the instance's `persona` setting). */
  persona: string;
}

export interface ChatTurnRunnerOptions {
  conversationId: string;
  /** The message this task was enqueued for: the task ends once it is answered. */
  messageId: string;
  taskId: string;
  signal: AbortSignal;
  stores: ChatTurnStores;
  settings: ChatTurnSettings;
  model: ChatModel;
  startAgent: (options: TurnAgentOptions) => SteerableHandle;
  tools: (turn: TurnToolsContext) => Tool[];
  /**
   * What the conversation's persona adds to a turn: its instructions (after the chat's own), its model profile, the
   * tools of its MCP servers. Its grants gate the loop's tool calls in the worker either way. @default nothing
   */
  persona?: (name: string) => Promise<ChatPersonaSetup>;
  /**
   * What memory knows that bears on the turn's messages (the relevant facts and guidance, fenced by trust, with their
   * sources), added to the system prompt. Undefined or a throw adds nothing: memory helps a turn, never stops it.
   * @default nothing
   */
  memoryContext?: (turn: { texts: readonly string[]; signal: AbortSignal }) => Promise<string | undefined>;
  /** @default 50 */
  maxTurns?: number;
  /** How often the lease is renewed while a turn runs. @default 2_000 */
  heartbeatMs?: number;
  /** The inbox poll beside the folder watcher. @default 200 */
  pollMs?: number;
  /** How long a turn waits out a model that cannot be reached. @default 15_000 */
  outageDelayMs?: number;
  warn?: (message: string, fields?: Record<string, unknown>) => void;
}

/** What a turn task returns. */
export interface ChatTurnOutcome {
  /** The assistant message that answered the task's message. */
  answered_by: string;
  /** Turns this task ran (0 when another task's turn answered its message). */
  turns: number;
}

const systemPrompt = [
  'You are Assistant, a back office that works for its owner: you read their mail, notes and tasks and act for them.',
  'This is a chat with the owner. Answer the latest user messages briefly and plainly; use the tools to look things up',
  'instead of guessing, and say plainly what you did not find. Messages that start with [interjection] are the owner',
  'adding to what they asked while you work: take them into account.',
].join(' ');

/** Earlier messages of the conversation given to a new turn (the loop compresses them further as it needs). */
const historyLimit = 60;
/** How long a collect turn waits at most for its quiet window, whatever keeps arriving. */
const collectWaitCapMs = 60_000;
/** The coalescing interval of `token` events. */
const tokenIntervalMs = 30;

/**
 * Answers the pending messages of a conversation, one turn at a time, until the task's own message is answered
 * (docs/chat.md, "Turns"). Throws DelayedError while another live turn holds the conversation or the model cannot
 * be reached, the signal's reason when the task is aborted (shutdown, timeout), UnrecoverableError for a
 * conversation or message that does not exist.
 */
export async function runChatTurns(options: ChatTurnRunnerOptions): Promise<ChatTurnOutcome> {
  const { inbox } = options.stores;
  const maxTurns = options.maxTurns ?? 50;
  for (let turns = 0; ; turns += 1) {
    const answered = await inbox.answeredBy(options.conversationId, options.messageId);
    if (answered) return { answered_by: answered.replyId, turns };
    if (options.signal.aborted) throw options.signal.reason;
    if (turns >= maxTurns) {
      // Not a failure: the conversation is busy with messages older than this one. Look again soon.
      throw new DelayedError(Date.now() + 250, `ran ${turns} turns; message ${options.messageId} is still waiting`);
    }
    await runOneTurn(options);
  }
}

async function runOneTurn(options: ChatTurnRunnerOptions): Promise<void> {
  const { conversationId: conv, taskId, signal, settings } = options;
  const { conversations, inbox, events, turns } = options.stores;

  let conversationMode: ChatMode;
  let peer: { channel: string; peer: string };
  let persona: string;
  try {
    const found = await conversations.get(conv);
    conversationMode = found.mode;
    peer = { channel: found.channel, peer: found.peer };
    // The persona the conversation recorded when it was made (or forked) wins over the instance's current one.
    persona = found.persona ?? settings.persona;
  } catch (error) {
    if (isAssistantError(error) && (error.code === 'CHAT_NOT_FOUND' || error.code === 'CHAT_INPUT_INVALID')) {
      throw new UnrecoverableError(error.message);
    }
    throw error;
  }
  const known = await inbox.messages(conv);
  if (!known.some((message) => message.id === options.messageId)) {
    throw new UnrecoverableError(`Conversation ${conv} has no accepted message ${options.messageId}`);
  }

  let adopted = false;
  const acquired = await turns.acquire(conv, {
    task: taskId,
    batch: async (previous) => {
      const pending = await inbox.pending(conv);
      const pendingIds = new Set(pending.map((message) => message.id));
      if (previous?.batch.some((id) => pendingIds.has(id))) {
        adopted = true;
        return previous.batch;
      }
      return pickBatch(pending, conversationMode, settings.collectMax).map((message) => message.id);
    },
  });
  if (acquired.status === 'busy') {
    const age = Date.now() - Date.parse(acquired.holder.started_at);
    const delay = Math.min(2_000, 250 + Math.max(0, Number.isFinite(age) ? age : 0) / 8);
    throw new DelayedError(Date.now() + delay, `turn ${acquired.holder.task} is answering conversation ${conv}`);
  }
  const fresh = !acquired.resumed && !adopted;
  let state: TurnState = acquired.state;
  // A turn resumed while it waited on the owner's answer: an answer that came while no worker ran is kept for the
  // question the resumed loop asks again, not taken for a message of its own.
  const waitedOn = acquired.resumed ? state.question : undefined;
  if (state.question) state = await turns.update(conv, taskId, ({ question: _gone, ...rest }) => rest);

  // The lease is renewed while this turn lives; losing it stops the loop and writes nothing.
  let lost = false;
  let handle: SteerableHandle | undefined;
  const heartbeat = setInterval(() => {
    turns.update(conv, taskId).catch((error: unknown) => {
      if (isAssistantError(error) && error.code === 'CHAT_TURN_LOST') {
        lost = true;
        handle?.stop('the turn was taken over by another task');
      } else options.warn?.('could not renew the chat turn lease', { err: error });
    });
  }, options.heartbeatMs ?? 2_000);
  let released = false;
  const release = async () => {
    released = true;
    await turns.release(conv, taskId);
  };

  try {
    if (state.batch.length === 0) {
      await release();
      return;
    }
    if (fresh) state = await collectWindow(options, state, conversationMode);
    if (lost) throw turnLost(conv, taskId);

    const byId = new Map((await inbox.messages(conv)).map((message) => [message.id, message]));
    let batch = state.batch.filter((id) => byId.has(id));

    // Repair: a reply already in the transcript for batch messages the inbox does not know as answered (a crash
    // between writing the reply and marking it) is recorded now; those messages are not answered again.
    const conversation = await conversations.get(conv);
    const pendingIds = new Set((await inbox.pending(conv)).map((message) => message.id));
    for (const message of conversation.messages) {
      if (message.role !== 'assistant') continue;
      const unmarked = (message.reply_to ?? []).filter((id) => batch.includes(id) && pendingIds.has(id));
      if (unmarked.length === 0) continue;
      await inbox.markAnswered(conv, { ids: unmarked, replyId: message.id });
      for (const id of unmarked) pendingIds.delete(id);
      await events.append(conv, { type: 'message', message: publicMessage(message) });
      await events.append(conv, {
        type: 'turn_done',
        turn: taskId,
        reply: message.id,
        reply_to: message.reply_to ?? [],
        status: message.status,
      });
    }
    batch = batch.filter((id) => pendingIds.has(id));
    if (batch.length === 0) {
      await release();
      return;
    }

    // The batch's messages go into the transcript before the loop starts (idempotent by id).
    for (const id of batch) await appendUser(conversations, conv, byId.get(id));

    await events.append(conv, { type: 'turn_started', turn: taskId, reply_to: batch });
    const answersWaiting = waitedOn
      ? [...pendingIds].filter((id) => !batch.includes(id) && (byId.get(id)?.at ?? '') >= waitedOn.asked_at)
      : [];
    const setup = (await options.persona?.(persona)) ?? {};
    const memory = await options
      .memoryContext?.({ texts: batch.map((id) => byId.get(id)?.text ?? ''), signal })
      .catch((error: unknown) => {
        options.warn?.(`chat turn without memory: ${error instanceof Error ? error.message : String(error)}`);
        return undefined;
      });
    const turn = new TurnRun({
      ...(memory === undefined ? {} : { memory }),
      options,
      conversationMode,
      peer,
      persona,
      setup,
      batch,
      byId,
      seen: new Set([...pendingIds].filter((id) => !answersWaiting.includes(id))),
      expectingAnswer: answersWaiting.length > 0,
      resumed: !fresh,
      transcriptName: `chat-${conv}-${state.batch[0] ?? batch[0]}`,
    });
    // The batch goes last, whatever its place in the transcript (a steered message the last turn left over was
    // written there before that turn's reply): the model answers what comes at the end.
    const said = (await conversations.get(conv)).messages.filter((message) => message.status !== 'pending');
    const inBatch = new Set(batch);
    const history = [
      ...said.filter((message) => !inBatch.has(message.id)),
      ...said.filter((message) => inBatch.has(message.id)),
    ];
    handle = turn.start(history.slice(-historyLimit));
    if (lost) handle.stop('the turn was taken over by another task');
    // context.agent stops the loop on the task's signal too; this keeps the runner right with any startAgent.
    const running = handle;
    const onAbort = () => running.stop(`aborted: ${String(signal.reason)}`);
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();
    const result = await handle.result().finally(() => signal.removeEventListener('abort', onAbort));
    await turn.finish();
    if (lost) throw turnLost(conv, taskId);
    if (signal.aborted) throw signal.reason;

    if (result.status === 'failed' && turn.modelOutage()) {
      await events.append(conv, {
        type: 'error',
        code: 'LLM_REQUEST_FAILED',
        message_id: batch[0],
        message: `The model cannot be reached (${result.reason ?? 'no answer'}); trying again in ${Math.round((options.outageDelayMs ?? 15_000) / 1000)} s. Your messages are kept.`,
      });
      await release();
      throw new DelayedError(Date.now() + (options.outageDelayMs ?? 15_000), 'the model cannot be reached');
    }

    const answeredBatch = turn.answeredBatch(result);
    // Renewing the lease right before the reply checks that this turn still holds it: a holder taken for gone
    // (no heartbeat for staleMs) writes nothing, and the heartbeat just renewed keeps anyone from taking it now.
    try {
      await turns.update(conv, taskId, ({ question: _asked, ...current }) => ({ ...current, batch: answeredBatch }));
    } catch (error) {
      if (isAssistantError(error) && error.code === 'CHAT_TURN_LOST') {
        lost = true;
        throw turnLost(conv, taskId);
      }
      throw error;
    }
    const reply = replyOf(result, turn.streamedText());
    const appended = await conversations.appendMessage(conv, {
      role: 'assistant',
      text: reply.text,
      reply_to: answeredBatch,
      status: reply.status,
      steps: toolSteps(handle.transcript()),
    });
    // The events go out before the inbox marks the batch: a crash in between sends them again (step 4), where
    // the other order could lose them for good. A reader tells a repeat by the reply's id.
    const written = (await conversations.get(conv)).messages.find((message) => message.id === appended.id);
    if (written) await events.append(conv, { type: 'message', message: publicMessage(written) });
    await events.append(conv, {
      type: 'turn_done',
      turn: taskId,
      reply: appended.id,
      reply_to: answeredBatch,
      status: reply.status,
    });
    await inbox.markAnswered(conv, { ids: answeredBatch, replyId: appended.id });
    // A `/stop` that came as this turn ended was meant for it, not for the next turn this task may run.
    await options.stores.discardSteering?.('the turn it was meant for had ended');
    await release();
  } finally {
    clearInterval(heartbeat);
    // On an abort (shutdown, timeout) the lease stays: the task resumes its turn when the queue runs it again.
    if (!released && !signal.aborted && !lost) {
      await turns.release(conv, taskId).catch(() => {});
    }
  }
}

/**
 * collect mode: waits until the newest message of the batch is older than the quiet window, taking in the
 * messages that arrive meanwhile (up to collect_max), at most a minute in all.
 */
async function collectWindow(
  options: ChatTurnRunnerOptions,
  initial: TurnState,
  conversationMode: ChatMode,
): Promise<TurnState> {
  const { conversationId: conv, taskId, signal, settings } = options;
  const { inbox, turns } = options.stores;
  let state = initial;
  const deadline = Date.now() + collectWaitCapMs;
  for (;;) {
    const pending = await inbox.pending(conv);
    const first = pending.find((message) => message.id === state.batch[0]);
    if (!first || effectiveMode(first, conversationMode) !== 'collect') return state;
    const batch = pickBatch(pending, conversationMode, settings.collectMax);
    if (batch.map((message) => message.id).join() !== state.batch.join()) {
      const ids = batch.map((message) => message.id);
      state = await turns.update(conv, taskId, (current) => ({ ...current, batch: ids }));
    }
    const newest = Math.max(...batch.map((message) => Date.parse(message.at)));
    const quietFor = Date.now() - newest;
    if (batch.length >= settings.collectMax || quietFor >= settings.collectWindowMs || Date.now() >= deadline) {
      return state;
    }
    await abortableSleep(Math.min(settings.collectWindowMs - quietFor, deadline - Date.now()) + 1, signal);
  }
}

/** One run of the agent loop over a batch, and everything that happens while it runs. */
class TurnRun {
  readonly #options: ChatTurnRunnerOptions;
  readonly #mode: ChatMode;
  readonly #peer: { channel: string; peer: string };
  readonly #persona: string;
  readonly #setup: ChatPersonaSetup;
  readonly #byId: Map<string, InboxMessage>;
  /** Messages that were there when the turn began or were looked at since: a message acts once. */
  readonly #seen: Set<string>;
  readonly #transcriptName: string;
  /** Steered messages, by id, with the interjection the loop got: to check after the loop that it saw them. */
  readonly #steered = new Map<string, string>();
  batch: string[];
  #handle: SteerableHandle | undefined;
  /** A resumed or adopted turn checks, once its loop has loaded its transcript, that the loop saw its batch. */
  #catchUpPending: boolean;
  #question: { id: string; text: string } | undefined;
  /** A resumed turn whose question was answered while no worker ran: that answer waits here for the question. */
  #expectingAnswer: boolean;
  #heldAnswer: InboxMessage | undefined;
  #stopping = false;
  #lastModelError: unknown;
  // Event log writes, in order.
  #writing: Promise<void> = Promise.resolve();
  // Inbox checks, one at a time; `#again` asks for one more after the running one.
  #checking: Promise<void> | undefined;
  #again = false;
  #watcher: ReturnType<typeof watch> | undefined;
  #poll: NodeJS.Timeout | undefined;
  // Streamed text by step; the token coalescing buffer.
  readonly #streamed = new Map<number, string>();
  /** Memory's facts and guidance for this turn's messages, fenced (see ChatTurnRunnerOptions.memoryContext). */
  readonly #memory: string | undefined;
  #tokenBuffer = '';
  #lastTokenAt = 0;
  #tokenTimer: NodeJS.Timeout | undefined;

  constructor(init: {
    options: ChatTurnRunnerOptions;
    conversationMode: ChatMode;
    peer: { channel: string; peer: string };
    persona: string;
    setup?: ChatPersonaSetup;
    batch: string[];
    byId: Map<string, InboxMessage>;
    seen: Set<string>;
    expectingAnswer?: boolean;
    resumed: boolean;
    transcriptName: string;
    memory?: string;
  }) {
    this.#memory = init.memory;
    this.#catchUpPending = init.resumed;
    this.#expectingAnswer = init.expectingAnswer ?? false;
    this.#options = init.options;
    this.#mode = init.conversationMode;
    this.#peer = init.peer;
    this.#persona = init.persona;
    this.#setup = init.setup ?? {};
    this.batch = [...init.batch];
    this.#byId = init.byId;
    this.#seen = new Set([...init.seen, ...init.batch]);
    this.#transcriptName = init.transcriptName;
  }

  start(history: ChatMessage[]): SteerableHandle {
    const options = this.#options;
    // Each message carries its time (`at`): the model is shown when the owner wrote it (docs/configuration.md, "Time
    // awareness"), so "tomorrow" in last week's message is read right.
    const input: ModelMessage[] = history
      .filter((message) => message.role === 'user' || message.role === 'assistant')
      .map((message) =>
        message.role === 'user'
          ? { role: 'user', content: message.text, at: message.at }
          : { role: 'assistant', content: message.text === '' ? '(no text)' : message.text, at: message.at },
      );
    const own = options.tools({
      conversationId: options.conversationId,
      ...this.#peer,
      ownerTexts: () => this.batch.map((id) => this.#byId.get(id)?.text ?? ''),
      showApproval: async (approval) => {
        await this.#emit({ type: 'approval', ...approval });
      },
    });
    // The persona's MCP tools join the instance's, once each.
    const names = new Set(own.map((tool) => tool.name));
    const joined = [...own, ...(this.#setup.tools ?? []).filter((tool) => !names.has(tool.name))];
    const tools = this.#setup.withCode?.(joined) ?? joined;
    const system =
      this.#setup.instructions === undefined
        ? systemPrompt
        : `${systemPrompt}\n\nYou speak as the persona ${this.#persona}. Its instructions, from the owner:\n\n${this.#setup.instructions}`;
    const handle = options.startAgent({
      system: this.#memory === undefined ? system : `${system}\n\n${this.#memory}`,
      input,
      tools,
      maxSteps: options.settings.maxSteps,
      model: this.#watchModel(this.#setup.model ?? options.model),
      transcriptName: this.#transcriptName,
      persona: this.#persona,
      onEvent: (event) => this.#onEvent(event),
    });
    this.#handle = handle;
    this.#watchInbox();
    return handle;
  }

  /** Stops watching the inbox, waits for the checks and event writes in flight. */
  async finish(): Promise<void> {
    this.#watcher?.close();
    clearInterval(this.#poll);
    this.#watcher = undefined;
    this.#poll = undefined;
    while (this.#checking) await this.#checking;
    this.#flushTokens();
    await this.#writing;
  }

  /** True when the loop failed because the model could not be reached (an error retrying later can fix). */
  modelOutage(): boolean {
    return isOutage(this.#lastModelError);
  }

  /** The text streamed so far, all steps. */
  streamedText(): string {
    return [...this.#streamed.entries()]
      .sort(([a], [b]) => a - b)
      .map(([, text]) => text.trim())
      .filter((text) => text !== '')
      .join('\n\n');
  }

  /**
   * The batch the reply answers: steered messages whose interjection came after the loop's final answer (the model
   * never saw them) are left for the next turn.
   */
  answeredBatch(result: AgentResult): string[] {
    if (result.status !== 'completed' || this.#steered.size === 0 || !this.#handle) return this.batch;
    const transcript = this.#handle.transcript();
    let lastAssistant = -1;
    transcript.forEach((message, index) => {
      if (message.role === 'assistant') lastAssistant = index;
    });
    const unseen = new Set<string>();
    for (const [id, interjection] of this.#steered) {
      const index = transcript.findIndex((message) => message.role === 'user' && message.content === interjection);
      if (index === -1 || index > lastAssistant) unseen.add(id);
    }
    return this.batch.filter((id) => !unseen.has(id));
  }

  #watchModel(model: ChatModel): ChatModel {
    const record = (error: unknown) => {
      this.#lastModelError = error;
    };
    return new Proxy(model, {
      get: (target, property) => {
        const value = Reflect.get(target, property, target) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          const out = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (out instanceof Promise) {
            return out.then(
              (answer) => {
                this.#lastModelError = undefined;
                return answer;
              },
              (error: unknown) => {
                record(error);
                throw error;
              },
            );
          }
          return out;
        };
      },
    });
  }

  #onEvent(event: AgentEvent): void {
    const turn = this.#options.taskId;
    switch (event.type) {
      case 'token': {
        // The reply is the top loop's text; loops nested in tools stream their own, which is not the reply.
        if (event.lineage.length > 1) return;
        if (event.restart) {
          this.#streamed.set(event.step, '');
          this.#tokenBuffer = '';
          clearTimeout(this.#tokenTimer);
          this.#tokenTimer = undefined;
          void this.#emit({ type: 'token', turn, text: '', restart: true });
        }
        if (event.text === '') return;
        this.#streamed.set(event.step, (this.#streamed.get(event.step) ?? '') + event.text);
        this.#tokenBuffer += event.text;
        const wait = this.#lastTokenAt + tokenIntervalMs - Date.now();
        if (wait <= 0) this.#flushTokens();
        else this.#tokenTimer ??= setTimeout(() => this.#flushTokens(), wait);
        return;
      }
      case 'step-started':
        if (this.#catchUpPending && event.lineage.length === 1) {
          this.#catchUpPending = false;
          this.#catchUp();
        }
        return;
      case 'approval-wait':
        // The owner decides it with the chat's own Approve and Reject, like a proposal.
        void this.#emit({
          type: 'approval',
          id: event.approval,
          title: `call ${event.toolName}`,
          summary: `the chat waits for your decision before it calls ${event.toolName}`,
        });
        return;
      case 'tool-started':
      case 'tool-finished':
        void this.#emit({
          type: 'step',
          turn,
          tool: event.toolName,
          status: event.type === 'tool-started' ? 'started' : 'finished',
          ...(event.type === 'tool-finished' ? { succeeded: event.succeeded } : {}),
        });
        return;
      case 'clarification': {
        const held = this.#heldAnswer;
        if (held) {
          // Asked again after a restart, and answered already: the answer the owner sent meanwhile.
          this.#heldAnswer = undefined;
          void this.#emit({ type: 'clarification', id: event.id, question: event.question });
          this.#writing = this.#writing
            .then(() => this.#answer({ id: event.id }, held))
            .catch((error: unknown) => this.#options.warn?.('could not answer the question', { err: error }));
          return;
        }
        this.#question = { id: event.id, text: event.question };
        const question = { id: event.id, text: event.question, asked_at: new Date().toISOString() };
        const { conversationId, taskId } = this.#options;
        // The question is recorded before it is shown: an answer sent as soon as the owner sees it must find it
        // open (delivered as `answered_question`), not race the write and be queued as a new message.
        this.#writing = this.#writing
          .then(async () => {
            await this.#options.stores.turns.update(conversationId, taskId, (state) => ({ ...state, question }));
          })
          .catch((error: unknown) => this.#options.warn?.('could not record the question', { err: error }));
        // #emit writes after what #writing holds, so after the question's record.
        void this.#emit({ type: 'clarification', id: event.id, question: event.question });
        // A message that came before the question was looked at already; the next one answers it.
        this.#check();
        return;
      }
      default:
        return;
    }
  }

  /**
   * A turn cut by a crash between a steered message joining the batch and the loop saving its transcript resumes
   * from a transcript without it: such batch messages are interjected again, so the model sees what it answers.
   */
  #catchUp(): void {
    const handle = this.#handle;
    if (!handle) return;
    const seen = handle
      .transcript()
      .flatMap((message) => (message.role === 'user' || message.role === 'tool' ? [message.content] : []));
    for (const id of this.batch) {
      const text = this.#byId.get(id)?.text;
      if (text === undefined || seen.some((content) => content.includes(text))) continue;
      this.#steered.set(id, `[interjection] ${text}`);
      handle.interject(text);
    }
  }

  #flushTokens(): void {
    clearTimeout(this.#tokenTimer);
    this.#tokenTimer = undefined;
    if (this.#tokenBuffer === '') return;
    const text = this.#tokenBuffer;
    this.#tokenBuffer = '';
    this.#lastTokenAt = Date.now();
    void this.#emit({ type: 'token', turn: this.#options.taskId, text });
  }

  #emit(event: { type: string; [key: string]: unknown }): Promise<void> {
    const { conversationId } = this.#options;
    this.#writing = this.#writing
      .then(async () => {
        await this.#options.stores.events.append(conversationId, event as never);
      })
      .catch((error: unknown) => this.#options.warn?.('could not write a chat event', { err: error }));
    return this.#writing;
  }

  #watchInbox(): void {
    const folder = path.join(this.#options.stores.inbox.directory, this.#options.conversationId, 'messages');
    try {
      this.#watcher = watch(folder, () => this.#check());
      this.#watcher.on('error', () => {});
    } catch {
      // The poll below still finds new messages.
    }
    this.#poll = setInterval(() => this.#check(), this.#options.pollMs ?? 200);
  }

  #check(): void {
    if (this.#checking) {
      this.#again = true;
      return;
    }
    this.#checking = (async () => {
      do {
        this.#again = false;
        try {
          await this.#look();
        } catch (error) {
          this.#options.warn?.('could not look at the chat inbox', { err: error });
        }
      } while (this.#again);
    })().finally(() => {
      this.#checking = undefined;
    });
  }

  /** New messages while the loop runs: an answer to the pending question, a steer, an interrupt, or later. */
  async #look(): Promise<void> {
    const handle = this.#handle;
    if (!handle || handle.done() || this.#stopping) return;
    const { conversationId: conv, stores } = this.#options;
    for (const message of await stores.inbox.pending(conv)) {
      if (this.#seen.has(message.id)) continue;
      if (handle.done() || this.#stopping) return;
      this.#seen.add(message.id);
      this.#byId.set(message.id, message);
      const question = this.#question;
      if (question) {
        this.#question = undefined;
        await this.#answer(question, message);
        continue;
      }
      if (this.#expectingAnswer) {
        // The answer to the question the resumed loop is about to ask again.
        this.#expectingAnswer = false;
        this.#heldAnswer = message;
        continue;
      }
      const mode = effectiveMode(message, this.#mode);
      if (mode === 'steer') {
        this.#steered.set(message.id, `[interjection] ${message.text}`);
        handle.interject(message.text);
        await this.#join(message);
      } else if (mode === 'interrupt') {
        // Answered by the next turn; this one ends with what it has said so far.
        this.#stopping = true;
        handle.stop('interrupted by a new message');
        return;
      }
      // followup and collect: the next turn answers it.
    }
  }

  /** `message` answers the loop's question: it joins the batch, the question is cleared, the loop gets the text. */
  async #answer(question: { id: string }, message: InboxMessage): Promise<void> {
    await this.#join(message, (state) => {
      const { question: _answered, ...rest } = state;
      return { ...rest, answers: [...(state.answers ?? []), message.id] };
    });
    this.#handle?.answerClarification(question.id, message.text);
  }

  /** Adds a message to the batch: in the lease (so a resumed turn answers it), then in the transcript. */
  async #join(message: InboxMessage, change: (state: TurnState) => TurnState = (state) => state): Promise<void> {
    const { conversationId: conv, taskId, stores } = this.#options;
    this.batch.push(message.id);
    const batch = [...this.batch];
    await stores.turns.update(conv, taskId, (state) => ({ ...change(state), batch }));
    await appendUser(stores.conversations, conv, message);
  }
}

async function appendUser(
  conversations: ConversationStore,
  conv: string,
  message: InboxMessage | undefined,
): Promise<void> {
  if (!message) return;
  await conversations.appendMessage(conv, { id: message.id, role: 'user', text: message.text, at: message.at });
}

/** The reply for how the loop ended. */
function replyOf(result: AgentResult, streamed: string): { text: string; status: 'complete' | 'partial' | 'failed' } {
  switch (result.status) {
    case 'completed':
      return { text: result.answer ?? '', status: 'complete' };
    case 'stopped':
      return {
        text: streamed !== '' ? streamed : `(Stopped before answering: ${result.reason ?? 'stopped'}.)`,
        status: 'partial',
      };
    case 'max_steps':
      return {
        text: `I could not finish: I reached the limit of ${result.steps} model calls for one turn without an answer.`,
        status: 'failed',
      };
    case 'timeout':
      return { text: 'I could not finish: the turn took too long and was stopped.', status: 'failed' };
    case 'budget':
      return { text: 'I could not finish: the turn used up its token budget.', status: 'failed' };
    default:
      return { text: `I could not finish: ${result.reason ?? 'the turn failed'}.`, status: 'failed' };
  }
}

/** The tool calls of the loop, one line each, for the transcript's folded steps. */
function toolSteps(transcript: ModelMessage[]): ToolStep[] {
  const results = new Map<string, string>();
  for (const message of transcript) {
    if (message.role === 'tool') results.set(message.toolCallId, message.content);
  }
  const steps: ToolStep[] = [];
  for (const message of transcript) {
    if (message.role !== 'assistant') continue;
    for (const call of message.toolCalls ?? []) {
      const result = results.get(call.id);
      const gist =
        result === undefined
          ? 'no result'
          : result
              .split('\n')
              .filter((line) => !/^<<<.*>>>$/.test(line))
              .join(' ')
              .trim();
      steps.push({ tool: call.name, summary: `${cut(call.arguments, 120)} → ${cut(gist, 120)}` });
    }
  }
  return steps;
}

function cut(text: string, length: number): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > length ? `${flat.slice(0, length - 1)}…` : flat;
}

/** A message as events and the REST API show it. */
function publicMessage(message: ChatMessage): Record<string, unknown> {
  const { steps: _steps, ...rest } = message;
  return rest;
}

/**
 * An LLM error that retrying later can fix: the profile's breaker is open (LLM_UNAVAILABLE), or no connection,
 * 408/409/429, or a 5xx after the client's own retries.
 */
function isOutage(error: unknown): boolean {
  if (isAssistantError(error, 'LLM_UNAVAILABLE')) return true;
  if (!isAssistantError(error) || error.code !== 'LLM_REQUEST_FAILED') return false;
  const status = (error as AssistantError & { status?: number }).status;
  if (status === undefined) return error.cause !== undefined;
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function turnLost(conv: string, taskId: string): DelayedError {
  // Another task holds the conversation now: it answers the batch. This task looks again shortly.
  return new DelayedError(Date.now() + 250, `the turn of conversation ${conv} was taken over from task ${taskId}`);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      Math.max(0, ms),
    );
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

import { randomUUID } from 'node:crypto';
import readline from 'node:readline';
import { type ChatDelivery, type ChatEvent, type ChatService, parseChatMode } from '@assistant/chat';
import { isAssistantError } from '@assistant/errors';
import type { NoteStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import { type ChatScreen, plainScreen, TerminalScreen, terminalSafe } from './chat-screen.ts';

/** How many messages of the conversation the session shows when it opens. */
const recentMessages = 10;

/** How often the session looks whether a worker runs, to say so when that changes (issue 31: within 2 s). */
const workerCheckMs = 1_500;

export interface ChatSessionOptions {
  chat: ChatService;
  notes: NoteStore;
  /** The conversation to start in. */
  conversation: string;
  context: CliContext;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /**
   * Approves or rejects an approval request, printing the outcome to `output` (`assistant approve|reject`'s code
   * path): in a terminal, above the prompt.
   */
  decide: (id: string, decision: 'approve' | 'reject', output: CliContext) => Promise<void>;
  /** Whether some worker runs now (a heartbeat within its lease, its process alive); unset: not looked at. */
  workerRunning?: () => Promise<boolean>;
}

const help = [
  'Type a message and press Enter; the reply streams above the prompt, and you can type while it does. Commands:',
  '  /new             start a new conversation',
  '  /mode [MODE]     show or set what a message sent while a reply streams does:',
  '                   steer (goes into the running turn), interrupt (stops it, answered next),',
  '                   followup (answered after it) or collect (answered with the others once you pause)',
  '  /stop            stop the running turn now (its partial reply is kept); Ctrl-C on an empty line too',
  '  /approve ID      approve an approval request (as `assistant approve ID`)',
  '  /reject ID       reject one',
  '  /help            this list',
  '  /quit            leave (Ctrl-D too); start a line with // to send one that begins with /',
].join('\n');

export const noWorkerNotice =
  'no worker is running: messages are stored and answered once one runs (`assistant start` or `assistant work`)';

/**
 * The interactive `assistant chat`: shows the conversation's recent messages, then posts each line typed and
 * prints the conversation's events as the worker writes them (reply tokens as they come, tool steps dimmed,
 * questions, approvals, errors on stderr).
 *
 * In a terminal, input is read all the time: the prompt stays on the last line and everything that arrives is
 * written above it, so a `/stop` or a message typed while a reply streams acts at once (the message as the
 * conversation's mode says) and what is typed never lands in the reply. Piped, each line waits for the turn that
 * answers it, so a script's lines run in order after each reply.
 */
export async function runChatSession(options: ChatSessionOptions): Promise<void> {
  const { chat, context } = options;
  const out = context.stdout;
  const terminal = options.stdin.isTTY === true && out.isTTY === true;
  const dim = (text: string) => (out.isTTY ? `\x1b[2m${text}\x1b[22m` : text);
  // Text from the conversation (a reply, a question, an approval's rendering of a mail) reaches a terminal without
  // control characters: it cannot move the cursor, clear the screen or retitle the window.
  const safe = (value: unknown) => (out.isTTY ? terminalSafe(String(value)) : String(value));
  const terminalScreen = terminal ? new TerminalScreen(out) : undefined;
  const screen: ChatScreen = terminalScreen ?? plainScreen(out);
  const line = (text: string) => screen.line(text);
  const errorLine = (text: string) => {
    // On a terminal stderr is the same screen: it goes above the prompt too.
    if (terminalScreen) screen.line(text);
    else {
      screen.endLine();
      context.stderr.write(`${text}\n`);
    }
  };
  let conversation = options.conversation;
  // What `/approve` prints goes where the session's own lines go (above the prompt, in a terminal).
  const screenOutput = { isTTY: out.isTTY === true, write: (text: string) => screen.stream(text) };
  const decideOutput: CliContext = terminalScreen
    ? { ...context, stdout: screenOutput, stderr: screenOutput }
    : context;

  let replyStarted = false;
  /** A turn of this conversation runs (from its `turn_started` to its `turn_done`). */
  let turnRunning = false;
  /**
   * What this session posted, so that its `message` events are not echoed: by id once `post` returned, and by text
   * while it runs (the event is written before `post` returns the id).
   */
  const posted = new Set<string>();
  const posting: string[] = [];
  /** Piped: what the next line waits for, the turn answering these ids, or one that asks the owner something. */
  let waiting: { ids: Set<string>; anyTurn: boolean; resolve: () => void } | undefined;
  const stopWaiting = () => {
    const current = waiting;
    waiting = undefined;
    current?.resolve();
  };

  const onEvent = (event: ChatEvent) => {
    switch (event.type) {
      case 'turn_started':
        replyStarted = false;
        turnRunning = true;
        return;
      case 'token': {
        if (event.restart === true) {
          if (replyStarted) line(dim('  (the model retried; its reply starts again)'));
          replyStarted = false;
          return;
        }
        const text = typeof event.text === 'string' ? event.text : '';
        if (text === '') return;
        if (!replyStarted) {
          screen.endLine();
          screen.stream('assistant> ');
          replyStarted = true;
        }
        screen.stream(text);
        return;
      }
      case 'step': {
        const tool = safe(event.tool ?? 'a tool');
        const summary = typeof event.summary === 'string' && event.summary !== '' ? `: ${safe(event.summary)}` : '';
        const state =
          event.status === 'started'
            ? '…'
            : event.succeeded === false
              ? ' failed'
              : event.status === 'finished'
                ? ' done'
                : '';
        line(dim(`  · ${tool}${state}${summary}`));
        return;
      }
      case 'clarification':
        line(`? ${safe(event.question ?? '')}`);
        line(dim('  (your next message answers it)'));
        stopWaiting();
        return;
      case 'approval': {
        const id = safe(event.id ?? '');
        const summary = typeof event.summary === 'string' && event.summary !== '' ? ` — ${safe(event.summary)}` : '';
        line(`approval ${id}: ${safe(event.title ?? 'an action waits for you')}${summary}`);
        // What will happen, as the chat's event carries it (whole, or saying how much more); else where to read it.
        if (typeof event.rendering === 'string' && event.rendering !== '') {
          for (const text of safe(event.rendering).split('\n')) line(`  ${text}`);
        } else {
          line(dim(`  what it will do, in full: assistant approvals show ${id}`));
        }
        line(dim(`  /approve ${id} or /reject ${id}`));
        stopWaiting();
        return;
      }
      case 'error': {
        const code = typeof event.code === 'string' ? ` (${event.code})` : '';
        errorLine(`error: ${safe(event.message ?? 'the turn failed')}${code}`);
        if (typeof event.message_id !== 'string' || waiting?.ids.has(event.message_id)) stopWaiting();
        return;
      }
      case 'message': {
        const message = event.message as { id?: string; role?: string; text?: string; status?: string } | undefined;
        if (!message || posted.has(message.id ?? '')) return;
        if (message.role === 'user' && posting.includes(message.text ?? '')) {
          posting.splice(posting.indexOf(message.text ?? ''), 1);
          return;
        }
        if (message.role === 'assistant') {
          // Streamed already, token by token; a reply without tokens (or from a model that does not stream) is shown.
          if (!replyStarted) line(`assistant> ${safe(message.text ?? '')}`);
          if (message.status === 'partial') line(dim('  (stopped: the reply above is what it had said)'));
        } else line(dim(`you (elsewhere): ${safe(message.text ?? '')}`));
        return;
      }
      case 'turn_done': {
        screen.endLine();
        replyStarted = false;
        turnRunning = false;
        const answered = Array.isArray(event.reply_to) ? (event.reply_to as unknown[]) : [];
        if (waiting) {
          for (const id of answered) if (typeof id === 'string') waiting.ids.delete(id);
          if (waiting.ids.size === 0 || waiting.anyTurn) stopWaiting();
        }
        return;
      }
    }
  };

  let follower: { controller: AbortController; done: Promise<void> } | undefined;
  const follow = async () => {
    await unfollow();
    const controller = new AbortController();
    const fromOffset = await chat.end(conversation);
    const id = conversation;
    turnRunning = (await chat.turns.running(id)) !== undefined;
    const done = (async () => {
      try {
        for await (const { event } of chat.follow(id, { fromOffset, signal: controller.signal })) onEvent(event);
      } catch (error) {
        if (!controller.signal.aborted) {
          errorLine(`error: the conversation's events broke off: ${(error as Error).message}`);
          stopWaiting();
        }
      }
    })();
    follower = { controller, done };
  };
  const unfollow = async () => {
    follower?.controller.abort();
    await follower?.done;
    follower = undefined;
  };

  const show = async () => {
    const current = await chat.get(conversation);
    const origin = current.forked_from
      ? ` · forked from ${current.forked_from.conversation} at ${current.forked_from.message}`
      : '';
    line(`conversation ${current.id} · ${current.title} · mode ${current.mode}${origin}`);
    for (const message of current.messages.slice(-recentMessages)) {
      line(
        `${dim(message.at.slice(0, 16).replace('T', ' '))} ${message.role === 'user' ? 'you' : 'assistant'}> ${safe(message.text)}`,
      );
    }
    line(dim('/help lists the commands'));
  };

  // Whether a worker answers: said when the session opens and whenever it changes, so nobody waits on nothing.
  let workerKnown: boolean | undefined;
  const lookForWorker = async () => {
    if (!options.workerRunning) return;
    const running = await options.workerRunning().catch(() => undefined);
    if (running === undefined || running === workerKnown) return;
    if (!running) line(`warning: ${noWorkerNotice}`);
    else if (workerKnown === false) line(dim('  (a worker runs now: waiting messages get their answers)'));
    workerKnown = running;
  };
  let workerTimer: NodeJS.Timeout | undefined;
  let looking: Promise<void> = Promise.resolve();

  const report = (error: unknown) => {
    if (!isAssistantError(error)) throw error;
    errorLine(`error: ${error.message}`);
    if (error.hint) errorLine(`hint: ${error.hint}`);
  };

  const stopTurn = async () => {
    const stopped = await chat.stop(conversation, 'stopped from the terminal');
    line(stopped.task ? `asked turn ${stopped.task} to stop` : 'no turn is running');
    stopWaiting();
  };

  const send = async (text: string) => {
    // The inbox stores the text trimmed, as its event carries it.
    const stored = text.trim();
    // The conversation's mode as it is now, on the message itself: a turn that is running already goes by the
    // message's mode, so a `/mode` (or an edit of the note) made during the turn counts for what is sent next.
    const { mode } = await chat.get(conversation);
    const wasRunning = turnRunning || (await chat.turns.running(conversation)) !== undefined;
    posting.push(stored);
    const message = await chat.post(conversation, { text, mode, clientId: `cli-${randomUUID()}` }).finally(() => {
      // Left there when no event came (a duplicate): the id below covers any later one.
      if (posting.includes(stored)) posting.splice(posting.indexOf(stored), 1);
    });
    posted.add(message.id);
    const said: Partial<Record<ChatDelivery, string>> = {
      steered: 'sent into the running turn',
      queued: 'queued: answered after the running turn',
      collected: 'collected: answered with the others once you pause',
      answered_question: 'answers the question',
    };
    const note =
      message.delivery === 'started' && mode === 'interrupt' && wasRunning
        ? 'interrupts the running turn: it stops, and the next one answers this'
        : said[message.delivery];
    if (note) line(dim(`  (${note})`));
    if (workerKnown === false) line(dim('  (stored: no worker is running to answer it yet)'));
    // In a terminal the prompt is back at once; piped, the next line waits for this one's answer.
    if (terminal) return;
    await new Promise<void>((resolve) => {
      waiting = {
        ids: new Set([message.id]),
        anyTurn: message.delivery === 'steered' || message.delivery === 'answered_question',
        resolve,
      };
    });
  };

  const command = async (input: string): Promise<'quit' | undefined> => {
    const [name = '', ...words] = input.slice(1).split(/\s+/);
    const argument = words.join(' ').trim();
    switch (name) {
      case 'quit':
      case 'exit':
        return 'quit';
      case 'help':
        line(help);
        return;
      case 'new': {
        const created = await chat.create({ channel: 'cli', peer: 'owner' });
        conversation = created.id;
        await follow();
        line(`new conversation ${created.id} · mode ${created.mode}`);
        return;
      }
      case 'mode': {
        const current = await chat.get(conversation);
        if (argument === '') {
          line(`mode ${current.mode}`);
          return;
        }
        const mode = parseChatMode(argument);
        await options.notes.update(current.path, { set: { mode } });
        line(`mode ${mode}`);
        return;
      }
      case 'stop':
        await stopTurn();
        return;
      case 'approve':
      case 'reject':
        if (argument === '') {
          errorLine(`error: /${name} needs the approval id, e.g. /${name} ap-3f2c9d1e0a4b`);
          return;
        }
        await options.decide(argument, name, decideOutput);
        return;
      default:
        errorLine(`error: unknown command /${name}; /help lists them`);
        return;
    }
  };

  await show();
  await lookForWorker();
  await follow();
  const rl = readline.createInterface({
    input: options.stdin,
    ...(terminal ? { output: out as unknown as NodeJS.WritableStream, terminal: true, historySize: 500 } : {}),
    terminal,
    prompt: 'you> ',
  });
  if (options.workerRunning) {
    workerTimer = setInterval(() => {
      looking = looking.then(lookForWorker);
    }, workerCheckMs);
    workerTimer.unref();
  }
  if (terminalScreen) {
    terminalScreen.attach(rl);
    // Registered before the loop's own reading: the screen learns of the Enter before anything is written.
    rl.on('line', () => terminalScreen.entered());
    rl.on('close', () => terminalScreen.detach());
    // Ctrl-C: clears what is typed; on an empty line it stops the running turn, and leaves when none runs.
    rl.on('SIGINT', () => {
      if (rl.line !== '') {
        rl.write(null, { ctrl: true, name: 'e' });
        rl.write(null, { ctrl: true, name: 'u' });
      } else if (turnRunning) {
        stopTurn().catch((error: unknown) => errorLine(`error: could not stop the turn: ${(error as Error).message}`));
      } else rl.close();
    });
  }
  try {
    if (terminal) rl.prompt();
    for await (const raw of rl) {
      // The prompt comes back before the line is acted on: what arrives meanwhile is written above it.
      if (terminal) rl.prompt();
      const input = raw.trim();
      try {
        if (input.startsWith('/') && !input.startsWith('//')) {
          if ((await command(input)) === 'quit') break;
        } else if (input !== '') {
          await send(input.startsWith('//') ? input.slice(1) : input);
        }
      } catch (error) {
        report(error);
      }
    }
  } finally {
    clearInterval(workerTimer);
    terminalScreen?.detach();
    screen.endLine();
    rl.close();
    stopWaiting();
    await looking;
    await unfollow();
  }
}

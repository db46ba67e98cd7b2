import { randomUUID } from 'node:crypto';
import readline from 'node:readline';
import { type ChatDelivery, type ChatEvent, type ChatService, parseChatMode } from '@assistant/chat';
import { isAssistantError } from '@assistant/errors';
import type { NoteStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';

/** How many messages of the conversation the session shows when it opens. */
const recentMessages = 10;

export interface ChatSessionOptions {
  chat: ChatService;
  notes: NoteStore;
  /** The conversation to start in. */
  conversation: string;
  context: CliContext;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Approves or rejects an approval request, printing the outcome (`assistant approve|reject`'s code path). */
  decide: (id: string, decision: 'approve' | 'reject') => Promise<void>;
}

const help = [
  'Type a message and press Enter; the reply streams below it. Commands:',
  '  /new             start a new conversation',
  '  /mode [MODE]     show or set the mode: steer, followup, collect or interrupt',
  '  /stop            stop the running turn (its partial reply is kept)',
  '  /approve ID      approve an approval request (as `assistant approve ID`)',
  '  /reject ID       reject one',
  '  /help            this list',
  '  /quit            leave (Ctrl-D too); start a line with // to send one that begins with /',
].join('\n');

/**
 * The interactive `assistant chat`: shows the conversation's recent messages, then posts each line typed and
 * prints the conversation's events as the worker writes them (reply tokens as they come, tool steps dimmed,
 * questions, approvals, errors on stderr) until the turn that answers it is done, or it asks something.
 */
export async function runChatSession(options: ChatSessionOptions): Promise<void> {
  const { chat, context } = options;
  const out = context.stdout;
  const terminal = options.stdin.isTTY === true && out.isTTY === true;
  const dim = (text: string) => (out.isTTY ? `\x1b[2m${text}\x1b[22m` : text);
  let conversation = options.conversation;

  // Where the output is: a reply's text may be mid-line when a step or a question must start on its own.
  let midLine = false;
  const line = (text: string) => {
    out.write(`${midLine ? '\n' : ''}${text}\n`);
    midLine = false;
  };
  let replyStarted = false;
  /**
   * What this session posted, so that its `message` events are not echoed: by id once `post` returned, and by text
   * while it runs (the event is written before `post` returns the id).
   */
  const posted = new Set<string>();
  const posting: string[] = [];
  /** What the prompt waits for: the turn answering these ids, or one that asks the owner something. */
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
          out.write(`${midLine ? '\n' : ''}assistant> `);
          replyStarted = true;
        }
        out.write(text);
        midLine = !text.endsWith('\n');
        return;
      }
      case 'step': {
        const tool = String(event.tool ?? 'a tool');
        const summary = typeof event.summary === 'string' && event.summary !== '' ? `: ${event.summary}` : '';
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
        line(`? ${String(event.question ?? '')}`);
        line(dim('  (your next message answers it)'));
        stopWaiting();
        return;
      case 'approval': {
        const id = String(event.id ?? '');
        const summary = typeof event.summary === 'string' && event.summary !== '' ? ` — ${event.summary}` : '';
        line(`approval ${id}: ${String(event.title ?? 'an action waits for you')}${summary}`);
        // What will happen, as the chat's event carries it (whole, or saying how much more); else where to read it.
        if (typeof event.rendering === 'string' && event.rendering !== '') {
          for (const text of event.rendering.split('\n')) line(`  ${text}`);
        } else {
          line(dim(`  what it will do, in full: assistant approvals show ${id}`));
        }
        line(dim(`  /approve ${id} or /reject ${id}`));
        stopWaiting();
        return;
      }
      case 'error': {
        if (midLine) out.write('\n');
        midLine = false;
        const code = typeof event.code === 'string' ? ` (${event.code})` : '';
        context.stderr.write(`error: ${String(event.message ?? 'the turn failed')}${code}\n`);
        if (typeof event.message_id !== 'string' || waiting?.ids.has(event.message_id)) stopWaiting();
        return;
      }
      case 'message': {
        const message = event.message as { id?: string; role?: string; text?: string } | undefined;
        if (!message || posted.has(message.id ?? '')) return;
        if (message.role === 'user' && posting.includes(message.text ?? '')) {
          posting.splice(posting.indexOf(message.text ?? ''), 1);
          return;
        }
        if (message.role === 'assistant') {
          // Streamed already, token by token; a reply without tokens (or from a model that does not stream) is shown.
          if (!replyStarted) line(`assistant> ${message.text ?? ''}`);
        } else line(dim(`you (elsewhere): ${message.text ?? ''}`));
        return;
      }
      case 'turn_done': {
        if (midLine) out.write('\n');
        midLine = false;
        replyStarted = false;
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
    const done = (async () => {
      try {
        for await (const { event } of chat.follow(id, { fromOffset, signal: controller.signal })) onEvent(event);
      } catch (error) {
        if (!controller.signal.aborted) {
          context.stderr.write(`error: the conversation's events broke off: ${(error as Error).message}\n`);
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
    line(`conversation ${current.id} · ${current.title} · mode ${current.mode}`);
    for (const message of current.messages.slice(-recentMessages)) {
      line(
        `${dim(message.at.slice(0, 16).replace('T', ' '))} ${message.role === 'user' ? 'you' : 'assistant'}> ${message.text}`,
      );
    }
    line(dim('/help lists the commands'));
  };

  const report = (error: unknown) => {
    if (!isAssistantError(error)) throw error;
    context.stderr.write(`error: ${error.message}\n${error.hint ? `hint: ${error.hint}\n` : ''}`);
  };

  const send = async (text: string) => {
    // The inbox stores the text trimmed, as its event carries it.
    const stored = text.trim();
    posting.push(stored);
    const message = await chat.post(conversation, { text, clientId: `cli-${randomUUID()}` }).finally(() => {
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
    const note = said[message.delivery];
    if (note) line(dim(`  (${note})`));
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
      case 'stop': {
        const stopped = await chat.stop(conversation, 'stopped from the terminal');
        line(stopped.task ? `asked turn ${stopped.task} to stop` : 'no turn is running');
        stopWaiting();
        return;
      }
      case 'approve':
      case 'reject':
        if (argument === '') {
          context.stderr.write(`error: /${name} needs the approval id, e.g. /${name} ap-3f2c9d1e0a4b\n`);
          return;
        }
        await options.decide(argument, name);
        return;
      default:
        context.stderr.write(`error: unknown command /${name}; /help lists them\n`);
        return;
    }
  };

  await show();
  await follow();
  const rl = readline.createInterface({
    input: options.stdin,
    ...(terminal ? { output: out as unknown as NodeJS.WritableStream, terminal: true, historySize: 500 } : {}),
    terminal,
    prompt: 'you> ',
  });
  // Ctrl-C: stop waiting for a reply (the turn goes on; /stop stops it), or leave when not waiting.
  rl.on('SIGINT', () => {
    if (waiting) {
      line(dim('  (stopped waiting; the turn goes on: /stop stops it)'));
      stopWaiting();
    } else rl.close();
  });
  try {
    if (terminal) rl.prompt();
    for await (const raw of rl) {
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
      if (terminal) rl.prompt();
    }
  } finally {
    rl.close();
    stopWaiting();
    await unfollow();
  }
}

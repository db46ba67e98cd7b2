import { randomUUID } from 'node:crypto';
import type { ChatMessage, ChatService, PostMessageResult } from '@assistant/chat';
import { parseDuration } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import type { TaskQueue } from '@assistant/queue';
import { configuredChatService } from '@assistant/server';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { openCliRuntime, writeJson } from '../open-cli-queue.ts';
import { approvalDecideCommand } from './approval-commands.ts';
import { noWorkerNotice, runChatSession } from './chat-session.ts';

/** Conversations `assistant chat` starts are the owner's, on the terminal. */
const cliChannel = 'cli';
const cliPeer = 'owner';

const defaultTimeout = '120s';

export interface ChatCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** The conversation; default: the newest `cli` one, or a new one. */
  id?: string | undefined;
  once?: boolean;
  json?: boolean;
  /** --once: how long to wait for the reply. */
  timeout?: string;
  /** `CONV@MESSAGE`: start a new conversation from that message of CONV (its history up to and including it). */
  fork?: string | undefined;
}

/**
 * `assistant chat [ID | --fork CONV@MESSAGE] [--once [--json] [--timeout D]]`: talks to the assistant over the
 * files of the configured data directory, as the server does (no server needed): a message is stored in the inbox,
 * its turn enqueued, and the reply read from the conversation's event log as the worker writes it. `--fork` first
 * makes a new conversation holding CONV's messages up to and including MESSAGE (docs/chat.md, "Forking").
 */
export async function chatCommand(options: ChatCommandOptions): Promise<void> {
  const timeoutMs = parseDuration(options.timeout ?? defaultTimeout);
  if (timeoutMs === undefined || timeoutMs <= 0) {
    throw new AssistantError('USAGE', `--timeout \`${options.timeout}\` is not a duration`, {
      hint: 'e.g. --timeout 30s or --timeout 5m',
    });
  }
  if (options.json && !options.once) {
    throw new AssistantError('USAGE', '--json goes with --once', {
      hint: 'echo "what is urgent?" | assistant chat --once --json',
    });
  }
  const forkFrom = options.fork === undefined ? undefined : parseForkTarget(options.fork);
  if (forkFrom && options.id !== undefined) {
    throw new AssistantError(
      'USAGE',
      `--fork starts a new conversation; it takes no conversation id (got ${options.id})`,
      {
        hint: 'assistant chat --fork CONV@MESSAGE',
      },
    );
  }
  const stdin = options.context.stdin ?? process.stdin;
  const { queue, registry, config } = await openCliRuntime(options);
  try {
    const notes = new FileNoteStore({ root: config.paths.notes });
    const chat = configuredChatService({
      config,
      notes,
      queue,
      registry,
      warn: (message) => options.context.stderr.write(`warning: ${message}\n`),
    });
    let text: string | undefined;
    let conversation: string;
    if (forkFrom) {
      // --once reads its message first: an empty one is refused before a fork is created.
      if (options.once) text = await readMessage(stdin);
      const fork = await chat.fork({ ...forkFrom, channel: cliChannel, peer: cliPeer });
      conversation = fork.id;
      const said = `forked ${forkFrom.conversation} at ${forkFrom.message}: new conversation ${fork.id}\n`;
      // With --once on stderr, so stdout stays the reply alone (--json names it as `conversation`).
      if (!options.once) options.context.stdout.write(said);
      else if (!options.json) options.context.stderr.write(said);
    } else {
      conversation =
        options.id === undefined
          ? await chat.conversationFor({ channel: cliChannel, peer: cliPeer })
          : (await chat.get(options.id)).id;
      if (options.once) text = await readMessage(stdin);
    }
    if (text !== undefined) {
      if (!(await workerRunning(queue))) {
        // Said at once rather than after the timeout; the message is still sent, for a worker that is starting.
        options.context.stderr.write(
          `warning: ${noWorkerNotice}; waiting up to ${timeoutMs / 1000} s for one to answer\n`,
        );
      }
      const { message, reply } = await askOnce(chat, conversation, text, timeoutMs);
      if (options.json) {
        return writeJson(options.context, {
          conversation,
          ...(forkFrom ? { forked_from: forkFrom } : {}),
          message,
          reply,
        });
      }
      options.context.stdout.write(reply.text.endsWith('\n') ? reply.text : `${reply.text}\n`);
      return;
    }
    await runChatSession({
      chat,
      notes,
      conversation,
      context: options.context,
      stdin,
      // The same code path as `assistant approve|reject ID`.
      decide: (id, decision, output) =>
        approvalDecideCommand({ globals: options.globals, context: output, id, decision }),
      workerRunning: () => workerRunning(queue),
    });
  } finally {
    await (queue as TaskQueue).close();
  }
}

/** `CONV@MESSAGE` as --fork takes it: a conversation id and one of its message ids. */
function parseForkTarget(value: string): { conversation: string; message: string } {
  const match = /^([a-z0-9][a-z0-9-]{0,63})@([a-z0-9][a-z0-9-]{0,63})$/.exec(value);
  if (!match) {
    throw new AssistantError(
      'USAGE',
      `--fork expects CONV@MESSAGE (a conversation id and one of its message ids, [a-z0-9-]), got ${JSON.stringify(value)}`,
      { hint: 'GET /api/chats/CONV lists the message ids of a conversation; its note is notes/chats/CONV.md' },
    );
  }
  return { conversation: match[1] ?? '', message: match[2] ?? '' };
}

/** --once: the message on stdin, refused when empty. */
async function readMessage(stdin: NodeJS.ReadableStream): Promise<string> {
  const text = await readAll(stdin);
  if (text.trim() === '') {
    throw new AssistantError('USAGE', '`assistant chat --once` reads the message from stdin, and it was empty', {
      hint: 'echo "what is urgent?" | assistant chat --once',
    });
  }
  return text;
}

/** Posts one message and waits for the turn that answers it; fails with the turn's error or after `timeoutMs`. */
async function askOnce(
  chat: ChatService,
  conversation: string,
  text: string,
  timeoutMs: number,
): Promise<{ message: PostMessageResult; reply: ChatMessage }> {
  // Read from before the message is stored, so no event about it can be missed.
  const fromOffset = await chat.end(conversation);
  const message = await chat.post(conversation, { text, clientId: `cli-${randomUUID()}` });
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const errors: string[] = [];
  let streamed = '';
  try {
    for await (const { event } of chat.follow(conversation, { fromOffset, signal: controller.signal })) {
      if (event.type === 'token' && typeof event.text === 'string') {
        streamed = event.restart === true ? '' : streamed + event.text;
      }
      // The worker could not reach the model and put the turn back to try again later (whichever message of the
      // conversation the turn started with: ours waits behind it). No reply comes in any useful time, and "no
      // reply" would blame the worker: say what is down, now.
      if (event.type === 'error' && modelOutageCodes.has(String(event.code))) {
        throw new AssistantError(
          'CHAT_NO_REPLY',
          `the model is down: ${String(event.message ?? 'it cannot be reached')}`,
          {
            hint: `the message ${message.id} is stored and answered once the model is back (\`assistant chat\` shows it); \`assistant doctor\` checks the model`,
          },
        );
      }
      if (event.type === 'error' && (event.message_id === undefined || event.message_id === message.id)) {
        errors.push(`${String(event.message ?? 'the turn failed')}${event.code ? ` (${String(event.code)})` : ''}`);
      }
      if (event.type !== 'turn_done' || !asIds(event.reply_to).includes(message.id)) continue;
      const replyId = typeof event.reply === 'string' ? event.reply : undefined;
      const found = (await chat.get(conversation)).messages.find((entry) => entry.id === replyId);
      const reply: ChatMessage = found ?? {
        id: replyId ?? '',
        role: 'assistant',
        text: streamed,
        at: event.at,
        reply_to: asIds(event.reply_to),
        status: (typeof event.status === 'string' ? event.status : 'complete') as ChatMessage['status'],
      };
      const status = typeof event.status === 'string' ? event.status : reply.status;
      if (status === 'failed' || (replyId === undefined && errors.length > 0)) {
        throw new AssistantError('CHAT_NO_REPLY', `the reply to ${message.id} failed: ${errors.join('; ') || status}`, {
          hint: `the conversation is chats/${conversation}.md under the notes folder`,
        });
      }
      return { message, reply };
    }
  } finally {
    clearTimeout(timer);
  }
  throw new AssistantError(
    'CHAT_NO_REPLY',
    `no reply to ${message.id} within ${timeoutMs / 1000} s${errors.length > 0 ? `: ${errors.join('; ')}` : ''}`,
    {
      hint: 'is the worker running (`assistant start` or `assistant work`)? The message is stored and will be answered; `assistant chat` shows it',
    },
  );
}

/** The codes of the `error` event a chat turn writes when it cannot reach the model and will try again. */
const modelOutageCodes = new Set(['LLM_REQUEST_FAILED', 'LLM_UNAVAILABLE']);

/**
 * Whether some worker runs: a heartbeat within its lease whose process is still there (a worker on this machine that
 * crashed is gone at once, not when its lease runs out), as /health's `worker.alive` counts them.
 */
async function workerRunning(queue: TaskQueue): Promise<boolean> {
  for (const worker of await queue.workers.list()) {
    if (worker.alive && (await queue.workers.liveness(worker)) === 'alive') return true;
  }
  return false;
}

function asIds(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((entry): entry is string => typeof entry === 'string') : [];
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

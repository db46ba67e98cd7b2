import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { fitRendering } from '@assistant/actions';
import {
  memo,
  mustShow,
  serviceApprovalId,
  toolCallApprovalId,
  writeSurfaceApprovals,
} from '@assistant/actions/testing';
import { ChatService, type InboxMessage } from '@assistant/chat';
import { type LoadedConfig, loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { runCli } from '../run-cli.ts';

let dir: string;
let configPath: string;
let config: LoadedConfig;
let queue: TaskQueue;
/** The test's own view of the data directory: it answers as the worker's turn would. */
let worker: ChatService;
const testWorker = { id: `${os.hostname()}-${process.pid}-chattest`, pid: process.pid, host: os.hostname() };

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-cli-'));
  configPath = path.join(dir, 'config.yaml');
  await writeFile(configPath, 'data_dir: ./data\n');
  config = (await loadConfig({ configPath })).config;
  queue = await openFileTaskQueue({ directory: config.paths.queue, dataDirectory: config.paths.dataDir });
  worker = new ChatService({
    notes: new FileNoteStore({ root: config.paths.notes }),
    dataDir: config.paths.dataDir,
    controlRoot: config.paths.control,
    queue,
  });
  // The test answers as the worker would, so it says a worker runs: as one does, with a heartbeat of this process.
  await queue.workers.heartbeat(testWorker, new Date().toISOString());
});
afterEach(async () => {
  await queue.close();
  await rm(dir, { recursive: true, force: true });
});

function context(stdin: string[]): CliContext & { out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    env: {},
    cwd: dir,
    stdin: Readable.from(stdin.map((chunk) => Buffer.from(chunk))),
    out: () => out,
    err: () => err,
  };
}

async function waitUntil<T>(check: () => Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The next message no reply answered yet, in any conversation, once the CLI has stored one. */
async function nextPending(): Promise<{ conversation: string; message: InboxMessage }> {
  return waitUntil(async () => {
    for (const conversation of await worker.list()) {
      const [message] = await worker.inbox.pending(conversation.id);
      if (message) return { conversation: conversation.id, message };
    }
    return undefined;
  }, 'the CLI to store a message');
}

/**
 * Answers the next pending message as a turn does: tokens on the event log, the messages in the transcript, the
 * inbox marked, then `message` and `turn_done` events. With `fail`, an error and a failed turn instead.
 */
async function answerAsWorker(tokens: string[], options: { fail?: string } = {}) {
  const { conversation, message } = await nextPending();
  await worker.events.append(conversation, { type: 'turn_started', turn: 't-1', reply_to: [message.id] });
  for (const text of tokens) await worker.events.append(conversation, { type: 'token', step: 1, text });
  await worker.events.append(conversation, { type: 'step', tool: 'search_notes', status: 'finished', succeeded: true });
  const text = tokens.join('');
  await worker.conversations.appendMessage(conversation, { id: message.id, role: 'user', text: message.text });
  const reply = await worker.conversations.appendMessage(conversation, {
    role: 'assistant',
    text: options.fail ? '' : text,
    reply_to: [message.id],
    status: options.fail ? 'failed' : 'complete',
  });
  await worker.inbox.markAnswered(conversation, { ids: [message.id], replyId: reply.id });
  if (options.fail) {
    await worker.events.append(conversation, { type: 'error', message: options.fail, message_id: message.id });
  }
  await worker.events.append(conversation, {
    type: 'message',
    message: { id: reply.id, role: 'assistant', text, reply_to: [message.id] },
  });
  await worker.events.append(conversation, {
    type: 'turn_done',
    reply: reply.id,
    reply_to: [message.id],
    status: options.fail ? 'failed' : 'complete',
  });
  return { conversation, message, reply: reply.id };
}

describe('assistant chat --once', () => {
  it('sends stdin as one message of a cli conversation and prints the reply', async () => {
    const piped = context(["what's urgent?\n"]);
    const [code, answered] = await Promise.all([
      runCli({ argv: ['chat', '--once', '--config', configPath], context: piped }),
      answerAsWorker(['Nothing ', 'is urgent.']),
    ]);
    expect({ code, err: piped.err() }).toEqual({ code: 0, err: '' });
    expect(piped.out()).toBe('Nothing is urgent.\n');
    expect(answered.message.text).toBe("what's urgent?");
    const [conversation] = await worker.list();
    expect(conversation).toMatchObject({ id: answered.conversation, channel: 'cli', peer: 'owner' });
    // Its turn is on the queue, at priority 1.
    const turns = await queue.list({ type: 'chat.turn' });
    expect(turns).toHaveLength(1);

    // The next --once goes to the same conversation, and --json says what was sent and what answered it.
    const again = context(['and tomorrow?']);
    const [jsonCode, second] = await Promise.all([
      runCli({ argv: ['chat', '--once', '--json', '--config', configPath], context: again }),
      answerAsWorker(['The dentist at 9.']),
    ]);
    expect(jsonCode).toBe(0);
    expect(JSON.parse(again.out())).toEqual({
      conversation: answered.conversation,
      message: { id: second.message.id, delivery: 'started', duplicate: false },
      reply: expect.objectContaining({
        id: second.reply,
        role: 'assistant',
        text: 'The dentist at 9.',
        reply_to: [second.message.id],
      }),
    });
  });

  it('exits 1 with the error when the reply failed, and when nothing answered in time', async () => {
    const failing = context(['book the flight']);
    const [code] = await Promise.all([
      runCli({ argv: ['chat', '--once', '--config', configPath], context: failing }),
      answerAsWorker([], { fail: 'the model endpoint refused the request' }),
    ]);
    expect(code).toBe(1);
    expect(failing.out()).toBe('');
    expect(failing.err()).toContain('the model endpoint refused the request');

    const unanswered = context(['anyone there?']);
    expect(
      await runCli({ argv: ['chat', '--once', '--timeout', '300ms', '--config', configPath], context: unanswered }),
    ).toBe(1);
    expect(unanswered.err()).toContain('no reply to');
    expect(unanswered.err()).toContain('is the worker running');
    // The message stays stored, for the worker to answer when it runs.
    const { message } = await nextPending();
    expect(message.text).toBe('anyone there?');

    const empty = context(['  \n']);
    expect(await runCli({ argv: ['chat', '--once', '--config', configPath], context: empty })).toBe(2);
    expect(empty.err()).toContain('stdin');
    const missing = context(['hello']);
    expect(await runCli({ argv: ['chat', 'c-nothing', '--once', '--config', configPath], context: missing })).toBe(1);
    expect(missing.err()).toContain('No conversation c-nothing');
  });

  it('says the model is down as soon as the turn reports it could not reach it, not after the timeout (issue 31)', async () => {
    const piped = context(['are you there?']);
    const outage = (async () => {
      const { conversation, message } = await nextPending();
      await worker.events.append(conversation, { type: 'turn_started', turn: 't-1', reply_to: [message.id] });
      // What the turn writes before it puts itself back to wait for the model (integrations/chat turn-runner).
      await worker.events.append(conversation, {
        type: 'error',
        code: 'LLM_REQUEST_FAILED',
        message_id: message.id,
        message: 'The model cannot be reached (connect ECONNREFUSED); trying again in 15 s. Your messages are kept.',
      });
    })();
    // A timeout far beyond the test's own: only the outage event can end the command in time.
    const [code] = await Promise.all([
      runCli({ argv: ['chat', '--once', '--timeout', '1h', '--config', configPath], context: piped }),
      outage,
    ]);
    expect(code).toBe(1);
    expect(piped.out()).toBe('');
    expect(piped.err()).toContain('the model is down: The model cannot be reached (connect ECONNREFUSED)');
    expect(piped.err()).not.toContain('is the worker running');
    // The message stays, for the turn that answers it once the model is back.
    expect((await nextPending()).message.text).toBe('are you there?');
  });

  it('says at once that no worker runs, and still sends the message (issue 31)', async () => {
    await queue.workers.remove(testWorker.id);
    const piped = context(['anyone?']);
    const answered = (async () => {
      await nextPending();
      // Only once the warning is out does the "worker" answer: the warning came before any reply.
      await waitUntil(async () => (piped.err().includes('no worker is running') ? true : undefined), 'the warning');
      return answerAsWorker(['Here.']);
    })();
    const [code] = await Promise.all([
      runCli({ argv: ['chat', '--once', '--config', configPath], context: piped }),
      answered,
    ]);
    expect(code).toBe(0);
    expect(piped.out()).toBe('Here.\n');
  });
});

describe('assistant chat (interactive)', () => {
  it('says when it opens that no worker runs, before any reply could come, and when one starts (issue 31)', async () => {
    await queue.workers.remove(testWorker.id);
    const input = new PassThrough();
    const session = { ...context([]), stdin: input };
    let out = '';
    session.stdout = { write: (text: string) => (out += text) };
    const running = runCli({ argv: ['chat', '--config', configPath], context: session });
    input.write('hello\n');
    // The message is stored and nothing answers it (no worker), yet the session says why: no wait for a reply.
    await nextPending();
    await waitUntil(async () => (out.includes('warning: no worker is running') ? true : undefined), 'the warning');
    await waitUntil(
      async () => (out.includes('(stored: no worker is running to answer it yet)') ? true : undefined),
      'the note',
    );
    // A worker starts: the session says so (it looks every 1.5 s), and its answer comes.
    await queue.workers.heartbeat(testWorker, new Date().toISOString());
    await waitUntil(async () => (out.includes('a worker runs now') ? true : undefined), 'the worker to be noticed');
    await answerAsWorker(['Hello.']);
    await waitUntil(async () => (out.includes('assistant> Hello.') ? true : undefined), 'the reply');
    input.end('/quit\n');
    expect(await running).toBe(0);
    expect(out.match(/warning: no worker is running/g)).toHaveLength(1);
  });

  it("shows what a proposed approval will do in full on its card: a 5,000-character argument, a service's inputs (issue 30)", {
    timeout: 120_000,
  }, async () => {
    const written = await writeSurfaceApprovals(new FileNoteStore({ root: config.paths.notes }));
    /** What the session prints for one `approval` event of a turn (it waits for the owner then: /quit follows). */
    const card = async (event: Record<string, unknown>) => {
      const session = context(['file it\n', '/quit\n']);
      const worked = (async () => {
        const { conversation, message } = await nextPending();
        await worker.events.append(conversation, { type: 'turn_started', turn: 't-1', reply_to: [message.id] });
        await worker.events.append(conversation, { type: 'approval', ...event });
        await worker.conversations.appendMessage(conversation, { id: message.id, role: 'user', text: message.text });
        const reply = await worker.conversations.appendMessage(conversation, {
          role: 'assistant',
          text: 'Asked.',
          reply_to: [message.id],
          status: 'complete',
        });
        await worker.inbox.markAnswered(conversation, { ids: [message.id], replyId: reply.id });
        await worker.events.append(conversation, {
          type: 'turn_done',
          reply: reply.id,
          reply_to: [message.id],
          status: 'complete',
        });
      })();
      const [code] = await Promise.all([runCli({ argv: ['chat', '--config', configPath], context: session }), worked]);
      expect(code).toBe(0);
      return session.out();
    };
    // As the chat's `propose` tool shows a request: its rendering, fitted to a chat card.
    const shown = async (request: typeof written.service) =>
      card({
        id: request.id,
        title: request.title,
        summary: request.reason,
        rendering: fitRendering({ rendering: request.rendering ?? '', maxChars: 16_000, id: request.id }),
      });
    const call = await shown(written.toolCall);
    expect(call).toContain(`approval ${toolCallApprovalId}`);
    expect(call).toContain(JSON.stringify(memo));
    expect(call).toContain(mustShow[0]);
    const service = await shown(written.service);
    expect(service).toContain(`approval ${serviceApprovalId}`);
    for (const line of mustShow.slice(1)) expect(service).toContain(line);
    // One announced without it (a tool call waiting in the chat's own loop): the card says where to read it.
    const bare = await card({ id: 'ap-00000000cafe', title: 'call x', summary: '' });
    expect(bare).toContain('what it will do, in full: assistant approvals show ap-00000000cafe');
  });

  it('shows a reply on a terminal without its control characters (issue 31)', async () => {
    const session = context(['hi\n', '/quit\n']);
    session.stdout = { ...session.stdout, isTTY: true };
    const [code] = await Promise.all([
      runCli({ argv: ['chat', '--config', configPath], context: session }),
      answerAsWorker(['Hello\x1b]0;owned\x07', '\x1b[2J there.']),
    ]);
    expect(code).toBe(0);
    expect(session.out()).toContain('assistant> Hello there.\n');
    expect(session.out()).not.toContain('\x1b]0;');
    expect(session.out()).not.toContain('\x1b[2J');
  });

  it('runs the typed commands and messages in order, streaming each reply before the next line', async () => {
    const first = await worker.create({ channel: 'cli', peer: 'owner', title: 'Earlier' });
    await worker.conversations.appendMessage(first.id, { role: 'user', text: 'an old question' });
    const session = context([
      '/mode\n',
      '/new\n',
      '/mode steer\n',
      'hello there\n',
      '/stop\n',
      '/approve ap-000000000000\n',
      '/frobnicate\n',
      '/quit\n',
      'never sent\n',
    ]);
    const [code, answered] = await Promise.all([
      runCli({ argv: ['chat', '--config', configPath], context: session }),
      answerAsWorker(['Hi', ', owner.']),
    ]);
    expect({ code, err: session.err() }).toMatchObject({ code: 0 });
    const out = session.out();
    // The newest cli conversation opens with its recent messages.
    expect(out).toContain(`conversation ${first.id} · Earlier · mode followup`);
    expect(out).toContain('you> an old question');
    expect(out).toContain('mode followup\n');
    expect(answered.conversation).not.toBe(first.id);
    expect(out).toContain(`new conversation ${answered.conversation}`);
    expect(out).toContain('mode steer\n');
    expect(out).not.toContain('elsewhere');
    expect((await worker.get(answered.conversation)).mode).toBe('steer');
    // The reply streamed, its step dimmed (plain here: no terminal), before the next command ran.
    const reply = out.indexOf('assistant> Hi, owner.\n');
    expect(reply).toBeGreaterThan(-1);
    expect(out.indexOf('· search_notes done')).toBeGreaterThan(reply);
    expect(out.indexOf('no turn is running')).toBeGreaterThan(reply);
    // An unknown approval is the same error as `assistant approve`, and the session goes on.
    expect(session.err()).toContain('ap-000000000000');
    expect(session.err()).toContain('unknown command /frobnicate');
    // Nothing after /quit was sent; the conversation holds the one message, answered.
    expect((await worker.get(answered.conversation)).messages.map((message) => [message.role, message.text])).toEqual([
      ['user', 'hello there'],
      ['assistant', 'Hi, owner.'],
    ]);
    expect(await worker.inbox.pending(answered.conversation)).toEqual([]);
  });
});

describe('assistant chat --fork', () => {
  async function threeTurns() {
    const original = await worker.create({ channel: 'api', peer: 'owner', title: 'Trip' });
    await worker.conversations.appendMessage(original.id, { id: 'm1', role: 'user', text: 'Train or plane?' });
    await worker.conversations.appendMessage(original.id, {
      id: 'm2',
      role: 'assistant',
      text: 'The train.',
      reply_to: ['m1'],
    });
    await worker.conversations.appendMessage(original.id, { id: 'm3', role: 'user', text: 'Book it.' });
    return original;
  }

  it('--once sends the piped message into a new conversation forked at the message, the original untouched', async () => {
    const original = await threeTurns();
    const file = path.join(config.paths.notes, original.path);
    const before = await readFile(file);
    const piped = context(['What about the ferry?']);
    const [code, answered] = await Promise.all([
      runCli({ argv: ['chat', '--fork', `${original.id}@m2`, '--once', '--config', configPath], context: piped }),
      answerAsWorker(['The ferry takes a day.']),
    ]);
    expect(code).toBe(0);
    expect(piped.out()).toBe('The ferry takes a day.\n');
    expect(piped.err()).toBe(`forked ${original.id} at m2: new conversation ${answered.conversation}\n`);
    expect(await readFile(file)).toEqual(before);
    const fork = await worker.get(answered.conversation);
    expect(fork).toMatchObject({
      channel: 'cli',
      peer: 'owner',
      forked_from: { conversation: original.id, message: 'm2' },
    });
    expect(fork.messages.map((message) => message.text)).toEqual([
      'Train or plane?',
      'The train.',
      'What about the ferry?',
      'The ferry takes a day.',
    ]);

    // --json names the fork and where it came from.
    const json = context(['And the bus?']);
    const [jsonCode, second] = await Promise.all([
      runCli({
        argv: ['chat', '--fork', `${original.id}@m1`, '--once', '--json', '--config', configPath],
        context: json,
      }),
      answerAsWorker(['No bus.']),
    ]);
    expect(jsonCode).toBe(0);
    expect(JSON.parse(json.out())).toMatchObject({
      conversation: second.conversation,
      forked_from: { conversation: original.id, message: 'm1' },
      reply: { text: 'No bus.' },
    });
  });

  it('opens the interactive session in the fork and prints its id', async () => {
    const original = await threeTurns();
    const session = context(['/quit\n']);
    expect(
      await runCli({ argv: ['chat', '--fork', `${original.id}@m2`, '--config', configPath], context: session }),
    ).toBe(0);
    const fork = (await worker.list()).find((conversation) => conversation.forked_from !== undefined);
    expect(fork).toBeDefined();
    expect(session.out()).toContain(`forked ${original.id} at m2: new conversation ${fork?.id}\n`);
    expect(session.out()).toContain(
      `conversation ${fork?.id} · Trip (fork) · mode followup · forked from ${original.id} at m2\n`,
    );
    expect(session.out()).toContain('you> Train or plane?');
    expect(session.out()).not.toContain('Book it.');
  });

  it('refuses a malformed target, an id beside it, an unknown conversation or message, creating nothing', async () => {
    const original = await threeTurns();
    const run = async (argv: string[]) => {
      const output = context(['hello']);
      const code = await runCli({ argv: ['chat', ...argv, '--config', configPath], context: output });
      return { code, err: output.err() };
    };
    expect(await run(['--fork', original.id])).toMatchObject({ code: 2, err: expect.stringContaining('CONV@MESSAGE') });
    expect(await run(['other', '--fork', `${original.id}@m1`])).toMatchObject({ code: 2 });
    expect(await run(['--fork', 'c-nothing@m1', '--once'])).toMatchObject({
      code: 1,
      err: expect.stringContaining('No conversation c-nothing'),
    });
    expect(await run(['--fork', `${original.id}@m9`, '--once'])).toMatchObject({
      code: 1,
      err: expect.stringContaining(`Conversation ${original.id} has no message m9`),
    });
    expect((await worker.list()).map((conversation) => conversation.id)).toEqual([original.id]);
  });
});

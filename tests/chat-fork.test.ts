// Forking a conversation end to end: a real worker (`assistant work`) answers `assistant chat --once` turns through
// a fake OpenAI-compatible model; `assistant chat --fork CONV@MESSAGE --once` starts a new conversation from the
// second reply, and the model request of the fork's first turn holds the history up to that reply and nothing after.
// The original note stays byte for byte what it was.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

interface WireMessage {
  role: string;
  content: string | null;
}

/** A message's text without the time the worker puts before it (`[2026-11-28 10:26] one`). */
const text = (message: WireMessage) => (message.content ?? '').replace(/^\[[^\]]*\] /, '');

/** The conversation as the model was sent it, without the system prompt. */
const said = (request: FakeChatRequest) =>
  (request.body.messages as WireMessage[])
    .filter((message) => message.role !== 'system')
    .map((message) => [message.role, text(message)]);

/** Each reply names the owner's messages the model saw, so a reply says which history its turn had. */
function respond(request: FakeChatRequest) {
  const users = (request.body.messages as WireMessage[]).filter((message) => message.role === 'user');
  return { text: `saw: ${users.map(text).join(' | ')}` };
}

interface OnceResult {
  conversation: string;
  forked_from?: { conversation: string; message: string };
  message: { id: string };
  reply: { id: string; text: string };
}

describe('assistant chat --fork through a real worker', () => {
  it("answers the fork's first message from the history up to the fork's message, leaving the original as it was", {
    timeout: 120_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({ respond });
    await using dir = await tempDir();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
`,
    );
    /** `text | assistant chat --once --json ARGS`, bounded; the parsed JSON. */
    const once = async (message: string, args: string[] = []): Promise<OnceResult> => {
      const run = startNode({
        args: [cliMain, 'chat', '--once', '--json', '--timeout', '60s', ...args, '--config', configPath],
        cwd: dir.path,
        stdin: 'pipe',
      });
      run.child.stdin?.end(`${message}\n`);
      const outcome = await run.exited;
      if (outcome.code !== 0) throw new Error(`assistant chat exited ${outcome.code}\n${outcome.stderr}`);
      return JSON.parse(outcome.stdout) as OnceResult;
    };

    const worker = startNode({ args: [cliMain, 'work', '--config', configPath], cwd: dir.path });
    try {
      await worker.waitForOutput(/worker ready/, { timeoutMs: 90_000 });
      const first = await once('one');
      const conversation = first.conversation;
      const second = await once('two', [conversation]);
      const third = await once('three', [conversation]);
      expect([first, second, third].map((result) => result.reply.text)).toEqual([
        'saw: one',
        'saw: one | two',
        'saw: one | two | three',
      ]);
      const note = path.join(dir.path, 'data/notes/chats', `${conversation}.md`);
      const before = await readFile(note);
      const requestsBefore = model.requests.length;

      const fork = await once('four', ['--fork', `${conversation}@${second.reply.id}`]);

      expect(fork.conversation).not.toBe(conversation);
      expect(fork.forked_from).toEqual({ conversation, message: second.reply.id });
      expect(fork.reply.text).toBe('saw: one | two | four');
      const forkRequests = model.requests.slice(requestsBefore);
      expect(forkRequests).toHaveLength(1);
      expect(said(forkRequests[0] as FakeChatRequest)).toEqual([
        ['user', 'one'],
        ['assistant', 'saw: one'],
        ['user', 'two'],
        ['assistant', 'saw: one | two'],
        ['user', 'four'],
      ]);
      expect(await readFile(note)).toEqual(before);
      const forkNote = await readFile(path.join(dir.path, 'data/notes/chats', `${fork.conversation}.md`), 'utf8');
      expect(forkNote).toContain(`forked_from:\n  conversation: ${conversation}\n  message: ${second.reply.id}\n`);
      expect(forkNote).toContain('\npersona: assistant\n');
      expect(forkNote).not.toContain('three');

      // The original goes on as before: its next turn sees its own whole history, not the fork's.
      const fifth = await once('five', [conversation]);
      expect(fifth.reply.text).toBe('saw: one | two | three | five');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it("runs a conversation's turns as the persona it recorded (its instructions, its grants), which a fork keeps", {
    timeout: 120_000,
  }, async () => {
    // The model reads a note unless a tool result came back, then says what that result was.
    const model = await FakeOpenAiServer.start({
      respond: (request) => {
        const last = (request.body.messages as WireMessage[]).at(-1);
        if (last?.role === 'tool') return { text: `tool said: ${last.content}` };
        return { toolCalls: [{ name: 'read_note', arguments: { path: 'plans.md' } }] };
      },
    });
    await using _model = model;
    await using dir = await tempDir();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
integrations:
  - {type: chat, name: chat, persona: searcher}
`,
    );
    await dir.write('personas/searcher.md', '---\ntools:\n  allow: [search_notes]\n---\nYou search notes.\n');
    await dir.write('data/notes/plans.md', '---\ntitle: Plans\n---\nThe secret plan.\n');
    const once = async (message: string, args: string[] = []): Promise<OnceResult> => {
      const run = startNode({
        args: [cliMain, 'chat', '--once', '--json', '--timeout', '60s', ...args, '--config', configPath],
        cwd: dir.path,
        stdin: 'pipe',
      });
      run.child.stdin?.end(`${message}\n`);
      const outcome = await run.exited;
      if (outcome.code !== 0) throw new Error(`assistant chat exited ${outcome.code}\n${outcome.stderr}`);
      return JSON.parse(outcome.stdout) as OnceResult;
    };
    const worker = startNode({ args: [cliMain, 'work', '--config', configPath], cwd: dir.path });
    try {
      await worker.waitForOutput(/worker ready/, { timeoutMs: 90_000 });
      const first = await once('what are the plans?');
      expect(first.reply.text).toContain('PERSONA_TOOL_DENIED');
      expect(first.reply.text).not.toContain('The secret plan');
      const note = await readFile(path.join(dir.path, 'data/notes/chats', `${first.conversation}.md`), 'utf8');
      expect(note).toContain('\npersona: searcher\n');
      // The turn spoke as the persona: its instructions follow the chat's own in the system prompt.
      const system = ((model.requests[0]?.body.messages ?? []) as WireMessage[]).find(
        (message) => message.role === 'system',
      );
      expect(system?.content).toContain('You speak as the persona searcher. Its instructions, from the owner:');
      expect(system?.content).toContain('You search notes.');

      const fork = await once('and now?', ['--fork', `${first.conversation}@${first.message.id}`]);
      expect(fork.reply.text).toContain('PERSONA_TOOL_DENIED');
      const forkNote = await readFile(path.join(dir.path, 'data/notes/chats', `${fork.conversation}.md`), 'utf8');
      expect(forkNote).toContain('\npersona: searcher\n');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});

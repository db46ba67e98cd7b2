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
});

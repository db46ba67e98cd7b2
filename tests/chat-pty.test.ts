// The interactive `assistant chat` in a real terminal (tmux), against `assistant start` (server and worker) and a
// slow model on loopback: input is read while a reply streams, the prompt stays apart from the streamed text, and a
// `/stop` or a new message typed mid-reply acts at once, as the conversation's mode says (issue 31).
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { startTerminal, type TerminalSession } from './helpers/tmux.ts';
import { waitUntil } from './helpers/wait-until.ts';

/** `count` numbered words (`w1 w2 …`) and an end mark: the reply streams a word at a time. */
const words = (prefix: string, count: number, end: string) =>
  `${Array.from({ length: count }, (_, index) => `${prefix}${index + 1}`).join(' ')} ${end}`;

// Each reply a word every 100 ms: the story and the essay take 60 s to stream, so a test that sees them cut short
// sees a stop, never a stream that ended. The count (20 s) gives the steer time to land while it streams, on a
// loaded machine too; a steer that came after it would be told `started`, not `sent into the running turn`.
const story = words('w', 600, 'STORY-END');
const counting = words('c', 200, 'COUNT-END');
const essay = words('e', 600, 'ESSAY-END');
const slowMs = 100;

interface WireMessage {
  role: string;
  content: string | null;
}

/** The model's side, from the conversation it is sent. */
function respond(request: FakeChatRequest): FakeReply {
  const messages = request.body.messages as WireMessage[];
  if (messages.some((message) => message.content?.includes('ALSO-BANANA'))) {
    return { text: 'Counted, and noted the banana.' };
  }
  const lastUser = messages.filter((message) => message.role === 'user').at(-1)?.content ?? '';
  if (lastUser.includes('tell me a long story')) return { text: story, chunkDelayMs: slowMs };
  if (lastUser.includes('count slowly')) return { text: counting, chunkDelayMs: slowMs };
  if (lastUser.includes('write an essay')) return { text: essay, chunkDelayMs: slowMs };
  if (lastUser.includes('never mind, just say hi')) return { text: 'Hi!' };
  return { text: 'ok' };
}

interface ConversationBody {
  mode: string;
  messages: { id: string; role: string; text: string; status: string; reply_to?: string[] }[];
}

/** The highest word number `prefix` of a streamed reply on screen. */
function lastWord(screen: string[], prefix: string): number {
  let highest = 0;
  for (const line of screen) {
    for (const match of line.matchAll(new RegExp(`\\b${prefix}(\\d+)\\b`, 'g'))) {
      highest = Math.max(highest, Number(match[1]));
    }
  }
  return highest;
}

async function screenShows(terminal: TerminalSession, what: RegExp, timeoutMs = 25_000): Promise<string[]> {
  return waitUntil(
    async () => {
      const screen = await terminal.screen();
      return screen.some((line) => what.test(line)) ? screen : undefined;
    },
    { what: `the terminal to show ${what}`, timeoutMs },
  ).catch(async (error: Error) => {
    throw new Error(`${error.message}\n--- screen ---\n${(await terminal.screen()).join('\n')}`);
  });
}

describe('assistant chat in a terminal', () => {
  it('reads input while a reply streams: the prompt stays apart, /stop and Ctrl-C stop at once, steer and interrupt act mid-reply', {
    timeout: 180_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({ respond });
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
server: {port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
`,
    );
    // The chat opens before any worker runs: it says so at once, and again when one starts.
    await using terminal = await startTerminal({
      command: [process.execPath, cliMain, 'chat', '--config', configPath],
      cwd: dir.path,
    });
    let screen = await screenShows(terminal, /^warning: no worker is running/);
    const conversation = /^conversation (\S+) /.exec(
      screen.find((line) => line.startsWith('conversation ')) ?? '',
    )?.[1];
    expect(conversation).toBeDefined();
    await waitUntil(async () => (await terminal.cursorLine()) === 'you>', { what: 'the prompt' });

    const assistant = startNode({ args: [cliMain, 'start', '--config', configPath], cwd: dir.path });
    try {
      await assistant.waitForOutput(/listening on/, { timeoutMs: 90_000 });
      await assistant.waitForOutput(/worker ready/, { timeoutMs: 90_000 });
      await screenShows(terminal, /a worker runs now/);
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const read = async (id: string) =>
        (await (await api(`http://127.0.0.1:${port}/api/chats/${id}`)).json()) as ConversationBody;

      // 1. Typing while a reply streams: the typed text stays on the prompt line, the reply goes on above it.
      await terminal.type('tell me a long story');
      await terminal.press('Enter');
      await screenShows(terminal, /^assistant> w1 w2/);
      await terminal.type('zzq typed');
      await waitUntil(async () => (await terminal.cursorLine()) === 'you> zzq typed', {
        what: 'the typed text on the prompt line',
      });
      const wordsWhenTyped = lastWord(await terminal.screen(), 'w');
      screen = await waitUntil(
        async () => {
          const now = await terminal.screen();
          return lastWord(now, 'w') >= wordsWhenTyped + 5 ? now : undefined;
        },
        { what: 'more of the reply to stream while the typed text waits' },
      );
      const replyLines = screen.filter((line) => line.startsWith('assistant> '));
      expect(replyLines).toHaveLength(1);
      expect(replyLines[0]).not.toContain('zzq');
      expect(screen.filter((line) => line.includes('zzq'))).toEqual(['you> zzq typed']);
      expect(await terminal.cursorLine()).toBe('you> zzq typed');

      // 2. `/stop` mid-reply stops the turn now: its reply is kept partial, and the 60 s stream never finished.
      await terminal.press('C-e', 'C-u');
      await terminal.type('/stop');
      await terminal.press('Enter');
      await screenShows(terminal, /^asked turn \S+ to stop$/);
      await screenShows(terminal, /\(stopped: the reply above is what it had said\)/);
      const stopped = await read(conversation as string);
      const storyReply = stopped.messages.find((message) => message.role === 'assistant');
      expect(storyReply?.status).toBe('partial');
      expect(storyReply?.text).toMatch(/^w1 w2/);
      expect(storyReply?.text).not.toContain('STORY-END');
      expect(storyReply?.text).not.toContain('zzq');
      expect((await terminal.screen()).join('\n')).not.toContain('STORY-END');

      // 3. Steer: a message typed mid-reply goes into the running turn, whose one reply answers both.
      await terminal.type('/new');
      await terminal.press('Enter');
      screen = await screenShows(terminal, /^new conversation \S+/);
      const steered = /^new conversation (\S+)/.exec(
        screen.findLast((line) => line.startsWith('new conversation')) ?? '',
      )?.[1];
      await terminal.type('/mode steer');
      await terminal.press('Enter');
      await screenShows(terminal, /^mode steer$/);
      await terminal.type('count slowly');
      await terminal.press('Enter');
      await screenShows(terminal, /^assistant> c1 c2/);
      await terminal.type('ALSO-BANANA');
      await terminal.press('Enter');
      await screenShows(terminal, /\(sent into the running turn\)/);
      // The turn's second model call, after it read the interjection (its tokens go on from the first call's text,
      // wrapped over rows: read as one).
      await waitUntil(async () => (await terminal.screen()).join('').includes('Counted, and noted the banana.'), {
        what: 'the reply to the interjection on screen (after the 20 s count)',
        timeoutMs: 60_000,
      });
      const steer = await waitUntil(
        async () => {
          const body = await read(steered as string);
          return body.messages.some((message) => message.role === 'assistant') ? body : undefined;
        },
        { what: 'the steered turn to reply' },
      );
      const asked = steer.messages.filter((message) => message.role === 'user');
      expect(asked.map((message) => message.text)).toEqual(['count slowly', 'ALSO-BANANA']);
      const steerReplies = steer.messages.filter((message) => message.role === 'assistant');
      expect(steerReplies).toHaveLength(1);
      expect(steerReplies[0]).toMatchObject({ status: 'complete', text: 'Counted, and noted the banana.' });
      expect(steerReplies[0]?.reply_to?.sort()).toEqual(asked.map((message) => message.id).sort());

      // 4. Interrupt: a message typed mid-reply stops the running turn, and the next turn answers it.
      await terminal.type('/new');
      await terminal.press('Enter');
      await waitUntil(
        async () => {
          const all = (await terminal.screen()).filter((line) => line.startsWith('new conversation'));
          return all.length === 2 ? all : undefined;
        },
        { what: 'the second new conversation' },
      );
      const interrupted = /^new conversation (\S+)/.exec(
        (await terminal.screen()).findLast((line) => line.startsWith('new conversation')) ?? '',
      )?.[1];
      await terminal.type('/mode interrupt');
      await terminal.press('Enter');
      await screenShows(terminal, /^mode interrupt$/);
      await terminal.type('write an essay');
      await terminal.press('Enter');
      await screenShows(terminal, /^assistant> e1 e2/);
      await terminal.type('never mind, just say hi');
      await terminal.press('Enter');
      await screenShows(terminal, /\(interrupts the running turn/);
      await screenShows(terminal, /^assistant> Hi!$/);
      const interrupt = await waitUntil(
        async () => {
          const body = await read(interrupted as string);
          return body.messages.filter((message) => message.role === 'assistant').length === 2 ? body : undefined;
        },
        { what: 'both turns of the interrupted conversation to reply' },
      );
      expect(interrupt.messages.map((message) => [message.role, message.status])).toEqual([
        ['user', 'answered'],
        ['assistant', 'partial'],
        ['user', 'answered'],
        ['assistant', 'complete'],
      ]);
      expect(interrupt.messages[1]?.text).not.toContain('ESSAY-END');
      expect(interrupt.messages[3]?.text).toBe('Hi!');
      // Nothing typed ever landed in a streamed reply on screen.
      for (const line of (await terminal.screen()).filter((entry) => entry.startsWith('assistant> '))) {
        expect(line).not.toMatch(/zzq|ALSO-BANANA|never mind|\/stop|\/mode|\/new/);
      }

      // 5. Ctrl-C: with text typed it clears the line; on an empty line it stops the running turn.
      await terminal.type('/new');
      await terminal.press('Enter');
      await waitUntil(
        async () => (await terminal.screen()).filter((line) => line.startsWith('new conversation')).length === 3,
        { what: 'the third new conversation' },
      );
      await terminal.type('tell me a long story');
      await terminal.press('Enter');
      await waitUntil(
        async () => (await terminal.screen()).filter((line) => line.startsWith('assistant> w1 w2')).length === 2,
        { what: 'the second story to stream' },
      );
      await terminal.type('half a thought');
      await waitUntil(async () => (await terminal.cursorLine()) === 'you> half a thought', { what: 'the typed text' });
      await terminal.press('C-c');
      await waitUntil(async () => (await terminal.cursorLine()) === 'you>', { what: 'Ctrl-C to clear the line' });
      await terminal.press('C-c');
      await waitUntil(
        async () => (await terminal.screen()).filter((line) => /^asked turn \S+ to stop$/.test(line)).length === 2,
        { what: 'Ctrl-C on an empty line to stop the turn' },
      );
      expect(await terminal.exited()).toBe(false);

      await terminal.type('/quit');
      await terminal.press('Enter');
      await waitUntil(() => terminal.exited(), { what: 'the chat to exit' });
    } finally {
      assistant.child.kill('SIGTERM');
      await assistant.exited;
    }
  });
});

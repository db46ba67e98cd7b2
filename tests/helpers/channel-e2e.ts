// One chat channel end to end (issue 37): `assistant start` (supervisor, server with the channel's listener, worker)
// against the channel's local fake platform and a fake OpenAI-compatible model. The owner writes in; the model
// proposes an irreversible action (the greeter fixture's `send_card`) and its reply streams out by edits; the
// approval request reaches the owner with buttons; pressing Approve runs the action once — also when the platform
// delivers the message and the press again.
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { expect } from 'vitest';
import { freePort } from './free-port.ts';
import { cliMain, repoRoot, startNode } from './node-process.ts';
import { tempDir } from './temp-dir.ts';
import { waitUntil } from './wait-until.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');

/** A message the bot sent, with every text it showed (`texts[0]` as sent, the last current) and its buttons. */
export interface EndToEndMessage {
  id: string;
  texts: string[];
  buttons: { label: string; data: string }[];
}

/** A channel's fake platform as the end-to-end test drives it (started by the caller, closed by the caller). */
export interface EndToEndChannel {
  /** For messages: "Telegram". */
  label: string;
  /**
   * The chat instance's settings for the channel, YAML at four spaces' indent (under `- type: chat`), with the
   * platform's credentials as `!secret <name>` from {@link secrets}.
   */
  settings: string;
  /** secrets.yaml's entries. */
  secrets: Record<string, string>;
  /** The credentials' value: no output of `assistant start` may hold it. */
  secret: string;
  /** The allowed user, as the platform's id. */
  owner: string;
  /** The platform delivers a text message from the owner in their direct conversation; returns a handle. */
  deliver(text: string): string;
  /** The platform delivers that message (or press) again, as its retry does. */
  redeliver(handle: string): void;
  /** What the bot sent the owner, in order. */
  messagesTo(peer: string): EndToEndMessage[];
  /**
   * The owner presses a button (by label or data) of a message the bot sent; returns a handle for redeliver. A
   * channel without buttons (email) has none: the owner approves by writing `/approve ID`, and that message is
   * delivered again instead.
   */
  press?(options: { message: EndToEndMessage; button: string }): string;
  /**
   * False for a channel that cannot edit (email): the reply arrives once, whole, instead of streaming by edits.
   * @default true
   */
  streaming?: boolean;
  /** Called once the server listens, with its URL (a platform that POSTs to a webhook learns where). */
  started?(url: string): void;
}

interface WireMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; function: { name: string } }[];
  tool_call_id?: string;
}

/** The streamed reply, a word every 400 ms: the platform shows it before it is complete. */
const replyDelayMs = 400;

function respond(request: FakeChatRequest): FakeReply {
  const messages = request.body.messages as WireMessage[];
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    const call = messages
      .flatMap((message) => message.tool_calls ?? [])
      .find((candidate) => candidate.id === last.tool_call_id);
    if (call?.function.name === 'propose') {
      const approval = /ap-[0-9a-f]{12}/.exec(last.content ?? '')?.[0] ?? 'none';
      return {
        text: `I proposed a friendly card for Ada (${approval}): it waits for you.`,
        chunkDelayMs: replyDelayMs,
      };
    }
    return { text: `unexpected tool ${call?.function.name}` };
  }
  if ((last?.content ?? '').includes('Thanks')) return { text: 'You are welcome.' };
  return {
    toolCalls: [
      {
        name: 'propose',
        arguments: {
          instance: 'friendly',
          platform: 'cards',
          item: 'greeter/friendly/ada.md',
          action: { kind: 'platform', name: 'send_card' },
          reason: 'the owner asked for a birthday card for Ada',
        },
      },
    ],
  };
}

/** The user messages of the model's requests that hold `text`: how often the model was asked about it. */
function askedAbout(model: FakeOpenAiServer, text: string): number {
  return model.requests.filter((request) => {
    const messages = request.body.messages as WireMessage[];
    const last = messages.at(-1);
    return last?.role === 'user' && (last.content ?? '').includes(text);
  }).length;
}

export async function channelEndToEnd(channel: EndToEndChannel): Promise<void> {
  await using model = await FakeOpenAiServer.start({ respond });
  await using dir = await tempDir();
  const port = await freePort();
  await dir.write(
    'secrets.yaml',
    Object.entries(channel.secrets)
      .map(([name, value]) => `${name}: ${JSON.stringify(value)}\n`)
      .join(''),
    0o600,
  );
  const configPath = await dir.write(
    'config.yaml',
    `data_dir: ./data
integration_dirs: [${JSON.stringify(greeter)}]
memory: {consolidate: []}
llms:
  default: {base_url: "${model.url}", model: fake-model}
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        names: [Ada]
  - type: chat
    name: chat
${channel.settings}
`,
  );
  const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
  await notes.create('greeter/friendly/ada.md', {
    data: { name: 'Ada', is_friend: true },
    body: 'Ada Lovelace. Birthday: 10 December.\n',
  });
  const applied = async () => {
    const note = await notes.read('greeter/friendly/ada.md');
    return Array.isArray(note?.data.applied) ? (note.data.applied as string[]) : [];
  };

  const assistant = startNode({ args: [cliMain, 'start', '--config', configPath], cwd: dir.path });
  try {
    await assistant.waitForOutput(/listening on/, { timeoutMs: 25_000 });
    await assistant.waitForOutput(/worker ready/, { timeoutMs: 25_000 });
    channel.started?.(`http://127.0.0.1:${port}`);

    // A message in; the reply streams out by edits.
    const asked = channel.deliver('Send Ada a birthday card.');
    const reply = await waitUntil(
      () =>
        channel
          .messagesTo(channel.owner)
          .find((message) =>
            /^I proposed a friendly card for Ada \(ap-[0-9a-f]{12}\): it waits for you\.$/.test(
              message.texts.at(-1) ?? '',
            ),
          ),
      { what: `the streamed reply in the owner's ${channel.label} conversation`, timeoutMs: 30_000 },
    );
    const full = reply.texts.at(-1) ?? '';
    if (channel.streaming === false) {
      expect(reply.texts).toEqual([full]);
    } else {
      expect(reply.texts.length).toBeGreaterThan(1);
      expect(full.startsWith(reply.texts[0] ?? 'x')).toBe(true);
      expect(reply.texts[0]?.length).toBeLessThan(full.length);
    }
    const approval = /ap-[0-9a-f]{12}/.exec(full)?.[0];

    // The approval request reaches the owner with its buttons (or, without buttons, its `/approve ID`); Approve runs
    // the card once.
    const press = channel.press?.bind(channel);
    const request = await waitUntil(
      () =>
        channel
          .messagesTo(channel.owner)
          .find((message) =>
            press
              ? message.buttons.some((button) => button.data.includes(approval ?? 'none'))
              : (message.texts.at(-1) ?? '').includes(`/approve ${approval}`),
          ),
      { what: `the approval request ${approval} with ${press ? 'buttons' : '/approve'}`, timeoutMs: 25_000 },
    );
    expect(await applied()).toEqual([]);
    let pressed: string;
    if (press) {
      const approve = request.buttons.find((button) => /approve/i.test(button.label));
      expect(approve, 'an Approve button').toBeDefined();
      pressed = press({ message: request, button: approve?.data ?? '' });
    } else {
      pressed = channel.deliver(`/approve ${approval}`);
    }
    expect(
      await waitUntil(async () => ((await applied()).length > 0 ? applied() : undefined), {
        what: 'the card sent after Approve',
        timeoutMs: 30_000,
      }),
    ).toEqual(['send_card']);
    const decided = await notes.read(`approvals/${approval}.md`);
    expect(decided?.data.status).toBe('approved');

    // The platform delivers the message and the press again, then a new message: the new one is answered (so the
    // repeats were handled before it), the repeats gave nothing — no second model call, no second card.
    channel.redeliver(asked);
    channel.redeliver(pressed);
    channel.deliver('Thanks!');
    await waitUntil(
      () => channel.messagesTo(channel.owner).find((message) => message.texts.at(-1) === 'You are welcome.'),
      { what: 'the answer to the next message', timeoutMs: 30_000 },
    );
    expect(askedAbout(model, 'Send Ada a birthday card.')).toBe(1);
    expect(await applied()).toEqual(['send_card']);
    const replies = channel
      .messagesTo(channel.owner)
      .filter((message) => message.texts.at(-1)?.startsWith('I proposed'));
    expect(replies).toHaveLength(1);
  } finally {
    if (assistant.child.exitCode === null && assistant.child.signalCode === null) assistant.child.kill('SIGTERM');
  }
  const run = await assistant.exited;
  expect(run.code).toBe(0);
  const output = run.stdout + run.stderr;
  expect(output).not.toContain(channel.secret);
  expect(output).not.toContain('Send Ada a birthday card.');
}

import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatService } from '@assistant/chat';
import type { ListenerApprovalSummary, ListenerApprovals, ListenerCondition, ListenerContext } from '@assistant/sdk';
import { beforeEach, describe, expect, it } from 'vitest';
import { answerAsWorker } from './answer-as-worker.ts';
import { dentistApproval } from './approval-request.ts';
import { channelTestBed, type RunningListener, until } from './channel-test-bed.ts';

/**
 * One channel's local fake platform, started for one test, and the way to run the channel's listener against it.
 * Peer ids are the platform's, as strings (the adapter's `peer`).
 */
export interface ConformancePlatform {
  /** The channel's name: conversations' `channel`, the state folder `data/chat/<channel>/`. */
  readonly channel: string;
  /** The platform's longest message, in characters (the adapter's `maxMessageChars`). */
  readonly maxMessageChars: number;
  /** The channel's credentials as configured: no log line may hold them. */
  readonly secret: string;
  /** A peer in the channel's allowed users, and one who is not. */
  readonly owner: string;
  readonly stranger: string;
  /**
   * Runs the channel's listener in this process, as the server's supervisor would (the instance is `chat`, its
   * data under `dataDir`, allowing {@link owner} only), until `signal` aborts. With `wrongSecret` it is configured
   * with credentials the platform refuses (their value must not be logged either).
   */
  listen(options: {
    chat: ChatService;
    dataDir: string;
    logger: ListenerContext['logger'];
    signal: AbortSignal;
    wrongSecret?: string;
    /** The approvals service the server hands listeners (here the suite's stand-in). */
    approvals?: ListenerApprovals;
    /** Where the listener reports the platform's condition (the supervisor's `context.condition`). */
    condition?: (condition: ListenerCondition) => void;
  }): Promise<void>;
  /** The platform delivers a text message from `from` in its direct conversation with the bot; returns a handle. */
  deliver(options: { from: string; text: string }): string;
  /** The platform delivers that message again (its retry: the bot's acknowledgement did not arrive). */
  redeliver(handle: string): void;
  /** The messages the bot sent to a peer's direct conversation, in order, each with every text it showed. */
  messagesTo(peer: string): ConformanceMessage[];
  /**
   * For a platform with buttons: `from` presses a message's button (by its label or data); returns a handle for
   * {@link redeliver}.
   */
  press?(options: { from: string; message: ConformanceMessage; button: string }): string;
  /**
   * For an adapter that keeps its own acknowledged position next to the runner's state (Matrix's /sync token): forgets
   * it, as a crash before it was stored would (the suite resets the runner's cursor itself).
   */
  forgetAcknowledgements?(dataDir: string): Promise<void>;
  /** How many calls the platform refused for wrong credentials. */
  refusedCredentials(): number;
  /** Takes the platform down (every call fails as a platform outage does) or brings it back. */
  setDown(down: boolean): void;
  close(): Promise<void>;
}

/** A message the bot sent, with every text it showed and its buttons (none on a platform without). */
export interface ConformanceMessage {
  /** The platform's message id. */
  id: string;
  texts: string[];
  buttons: { label: string; data: string }[];
}

export interface ConformanceHarness {
  /** Whether the channel sends approvals with buttons (then the platform has `press`). */
  readonly buttons: boolean;
  /**
   * False for a platform that cannot edit (email, the adapter's `streaming: false`): the streaming checks then check
   * that a turn's reply is sent once, final, and never a message per token. @default true
   */
  readonly streaming?: boolean;
  /** Starts the fake platform for one test (a free port, nothing shared with another test). */
  start(): Promise<ConformancePlatform>;
}

/**
 * The conformance suite of a chat channel (docs/channels.md): the adapter and the channel runner against the
 * platform's local fake, through the chat service's real stores in a temporary directory. The test stands in for
 * the worker: it writes the turn's events and the reply as the turn runner does. Call it at the top level of a test
 * file: `describeChannelConformance('Telegram', { start: … })`.
 */
export function describeChannelConformance(name: string, harness: ConformanceHarness): void {
  describe(`the ${name} channel (conformance)`, () => {
    const bed = channelTestBed({
      prefix: 'assistant-channel-',
      start: () => harness.start(),
      secrets: (platform) => [platform.secret],
    });
    /** What the listener reported of the platform's condition, in order. */
    let conditions: ListenerCondition[];

    beforeEach(() => {
      conditions = [];
    });

    function listen(
      chat: ChatService,
      options: { wrongSecret?: string; approvals?: ListenerApprovals } = {},
    ): RunningListener {
      return bed.run((context) =>
        bed.platform.listen({
          chat,
          ...context,
          condition: (condition) => conditions.push(condition),
          ...options,
        }),
      );
    }

    async function conversationOf(chat: ChatService, peer: string) {
      return (await chat.list()).find((one) => one.channel === bed.platform.channel && one.peer === peer);
    }

    async function storedTexts(chat: ChatService, conversation: string): Promise<string[]> {
      return (await chat.inbox.messages(conversation)).map((message) => message.text);
    }

    /** Delivers a message from the owner and waits until it is in the inbox; the conversation's id. */
    async function ownerSays(chat: ChatService, text: string, count = 1): Promise<string> {
      bed.platform.deliver({ from: bed.platform.owner, text });
      const conversation = await until(() => conversationOf(chat, bed.platform.owner), 'the owner’s conversation');
      await until(async () => (await storedTexts(chat, conversation.id)).length >= count, `"${text}" stored`);
      return conversation.id;
    }

    /** Forgets every acknowledgement, as a crash before they were stored would: the runner's cursor and the adapter's. */
    async function forgetAcknowledgements(): Promise<void> {
      const stateFile = path.join(bed.root, 'data', 'chat', bed.platform.channel, 'chat.json');
      const state = JSON.parse(await readFile(stateFile, 'utf8')) as { offset: number };
      state.offset = 0;
      await writeFile(stateFile, JSON.stringify(state));
      await bed.platform.forgetAcknowledgements?.(path.join(bed.root, 'data'));
    }

    const textsTo = (peer: string) => bed.platform.messagesTo(peer).map((message) => message.texts.at(-1) ?? '');

    it('answers an allowed user: the message is in the inbox with its turn, the reply reaches the user', async () => {
      const chat = bed.chatService();
      listen(chat);
      const id = await ownerSays(chat, 'what is urgent?');
      expect(await storedTexts(chat, id)).toEqual(['what is urgent?']);
      await until(async () => (await bed.queue.list({ type: 'chat.turn' })).length === 1, 'the turn enqueued');
      await answerAsWorker(chat, id, 'The dentist invoice.');
      await until(() => textsTo(bed.platform.owner).includes('The dentist invoice.'), 'the reply sent');
      expect(textsTo(bed.platform.owner)).toEqual(['The dentist invoice.']);
    });

    it('ignores a stranger: nothing stored or sent, one log line with the user id and not the text', async () => {
      const chat = bed.chatService();
      listen(chat);
      bed.platform.deliver({ from: bed.platform.stranger, text: 'my bank password is hunter2' });
      // Deliveries are handled in order: once the owner's message is stored, the stranger's was dealt with.
      await ownerSays(chat, 'hello');
      expect(await conversationOf(chat, bed.platform.stranger)).toBeUndefined();
      expect(bed.platform.messagesTo(bed.platform.stranger)).toEqual([]);
      expect(bed.logs.filter((line) => line.includes(bed.platform.stranger))).toHaveLength(1);
      expect(bed.logs.join('\n')).not.toContain('hunter2');
    });

    it('gives one answer to a message delivered again, after the acknowledgement or after a restart that lost it', async () => {
      const chat = bed.chatService();
      const first = listen(chat);
      const once = bed.platform.deliver({ from: bed.platform.owner, text: 'once' });
      const id = await until(() => conversationOf(chat, bed.platform.owner), 'the owner’s conversation').then(
        (conversation) => conversation.id,
      );
      await until(async () => (await storedTexts(chat, id)).length === 1, 'the first message stored');
      // The platform retries a delivery the bot handled.
      bed.platform.redeliver(once);
      await ownerSays(chat, 'next', 2);
      await answerAsWorker(chat, id, 'One answer.');
      await until(() => textsTo(bed.platform.owner).includes('One answer.'), 'the answer sent');
      // A command is no inbox message: it is answered once too.
      const help = bed.platform.deliver({ from: bed.platform.owner, text: '/help' });
      await until(() => textsTo(bed.platform.owner).length === 2, 'the help sent');
      bed.platform.redeliver(help);
      await first.stop();

      // As if the server died after storing the messages and sending the answer, before the acknowledgements (the
      // runner's cursor) were stored: the platform hands everything out again.
      await forgetAcknowledgements();
      listen(chat);
      bed.platform.redeliver(once);
      await ownerSays(chat, 'last', 3);
      expect(await storedTexts(chat, id)).toEqual(['once', 'next', 'last']);
      expect(textsTo(bed.platform.owner)).toEqual(['One answer.', expect.stringContaining('/new')]);
    });

    (harness.streaming === false ? it.skip : it)(
      'streams a reply by edits: one message, sent on the first token, edited, then final',
      async () => {
        const chat = bed.chatService();
        listen(chat);
        const id = await ownerSays(chat, 'tell me');
        await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
        await chat.events.append(id, { type: 'token', step: 0, text: 'The dentist' });
        await until(() => textsTo(bed.platform.owner).includes('The dentist'), 'the first token sent');
        await chat.events.append(id, { type: 'token', step: 0, text: ' invoice is due' });
        await until(
          () => textsTo(bed.platform.owner).includes('The dentist invoice is due'),
          'the text so far edited in',
        );
        await answerAsWorker(chat, id, 'The dentist invoice is due tomorrow.');
        await until(
          () => textsTo(bed.platform.owner).includes('The dentist invoice is due tomorrow.'),
          'the final text',
        );
        expect(bed.platform.messagesTo(bed.platform.owner).map((message) => message.texts)).toEqual([
          ['The dentist', 'The dentist invoice is due', 'The dentist invoice is due tomorrow.'],
        ]);
      },
    );

    (harness.streaming === false ? it : it.skip)(
      'sends a reply once, final, on a platform that cannot edit: no message per token',
      async () => {
        const chat = bed.chatService();
        const first = listen(chat);
        const id = await ownerSays(chat, 'tell me');
        await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
        await chat.events.append(id, { type: 'token', step: 0, text: 'The dentist' });
        await chat.events.append(id, { type: 'token', step: 0, text: ' invoice is due' });
        // A restart mid-reply: the reply is still sent once.
        await first.stop();
        listen(chat);
        await chat.events.append(id, { type: 'token', step: 0, text: ' tomorrow' });
        await answerAsWorker(chat, id, 'The dentist invoice is due tomorrow.');
        await until(
          () => textsTo(bed.platform.owner).includes('The dentist invoice is due tomorrow.'),
          'the final text',
        );
        // Once the help (sent after) is there, nothing of the reply is still on its way.
        bed.platform.deliver({ from: bed.platform.owner, text: '/help' });
        await until(() => textsTo(bed.platform.owner).some((text) => text.includes('/new')), 'the help');
        expect(bed.platform.messagesTo(bed.platform.owner).map((message) => message.texts)).toEqual([
          ['The dentist invoice is due tomorrow.'],
          [expect.stringContaining('/new')],
        ]);
      },
    );

    (harness.streaming === false ? it.skip : it)(
      'neither repeats nor skips after a restart mid-reply: the streamed message goes on being edited',
      async () => {
        const chat = bed.chatService();
        const first = listen(chat);
        const id = await ownerSays(chat, 'tell me');
        await chat.events.append(id, { type: 'turn_started', turn: 't1', reply_to: [] });
        await chat.events.append(id, { type: 'token', step: 0, text: 'Once upon' });
        await until(() => textsTo(bed.platform.owner).includes('Once upon'), 'the first token sent');
        // The platform shows the message a moment before the runner has its answer (and records what it streams into).
        const stateFile = path.join(bed.root, 'data', 'chat', bed.platform.channel, 'chat.json');
        await until(async () => {
          const state = JSON.parse(await readFile(stateFile, 'utf8').catch(() => '{}')) as {
            conversations?: Record<string, { preview?: unknown }>;
          };
          return state.conversations?.[id]?.preview !== undefined;
        }, 'the streamed message recorded');
        await first.stop();
        await chat.events.append(id, { type: 'token', step: 0, text: ' a time' });
        listen(chat);
        await until(() => textsTo(bed.platform.owner).includes('Once upon a time'), 'the whole text edited in');
        await answerAsWorker(chat, id, 'Once upon a time, the end.');
        await until(() => textsTo(bed.platform.owner).includes('Once upon a time, the end.'), 'the final text');
        expect(bed.platform.messagesTo(bed.platform.owner).map((message) => message.texts)).toEqual([
          ['Once upon', 'Once upon a time', 'Once upon a time, the end.'],
        ]);
      },
    );

    it('splits a reply longer than the platform’s limit into messages that each fit, losing nothing', async () => {
      const chat = bed.chatService();
      listen(chat);
      const id = await ownerSays(chat, 'the long one');
      const max = bed.platform.maxMessageChars;
      const lines: string[] = [];
      for (let line = 0; Array.from(lines.join('\n')).length < 2.5 * max; line += 1) {
        lines.push(`line ${line}: ${'é'.repeat(60)}`);
      }
      const text = lines.join('\n');
      await answerAsWorker(chat, id, text);
      await until(
        () =>
          textsTo(bed.platform.owner)
            .at(-1)
            ?.endsWith(lines.at(-1) ?? '?'),
        'the last piece sent',
      );
      const sent = textsTo(bed.platform.owner);
      expect(sent.length).toBeGreaterThanOrEqual(3);
      for (const piece of sent) expect(Array.from(piece).length).toBeLessThanOrEqual(max);
      expect(sent.join('')).toBe(text);
    });

    it('logs refused credentials once, without them, and keeps trying', async () => {
      const chat = bed.chatService();
      const wrong = `${bed.platform.secret.slice(0, 3)}wrong-credentials-value`;
      listen(chat, { wrongSecret: wrong });
      await until(() => bed.platform.refusedCredentials() >= 1, 'the credentials refused');
      await until(() => bed.logs.some((line) => line.startsWith('error ')), 'the error line');
      expect(bed.logs.filter((line) => line.startsWith('error '))).toHaveLength(1);
      expect(bed.logs.join('\n')).not.toContain('wrong-credentials-value');
      // Reported for /health: refused credentials, how it waits, and not the credentials.
      expect(conditions.map((one) => one.state)).toEqual(['credentials_refused']);
      expect(conditions[0]?.detail).toMatch(/trying again every 60 s$/);
      expect(JSON.stringify(conditions)).not.toContain('wrong-credentials-value');
    });

    it('reports an outage while the platform is down and ok once it answers again, then takes messages in', async () => {
      const chat = bed.chatService();
      bed.platform.setDown(true);
      listen(chat);
      const outage = await until(() => conditions.find((one) => one.state === 'outage'), 'the outage reported');
      expect(outage.detail).toMatch(/; next try at \d{4}-\d\d-\d\dT[\d:.]+Z$/);
      bed.platform.setDown(false);
      await until(() => conditions.at(-1)?.state === 'ok', 'ok reported after the outage');
      expect([...new Set(conditions.map((one) => one.state))]).toEqual(['outage', 'ok']);
      expect(JSON.stringify(conditions)).not.toContain(bed.platform.secret);
      bed.platform.deliver({ from: bed.platform.owner, text: 'after the outage' });
      await until(
        async () => (await chat.list()).some((one) => one.channel === bed.platform.channel),
        'the message after the outage stored',
      );
    });

    (harness.buttons ? it : it.skip)(
      'approves by button: the full rendering (or where to read it) above the buttons, allowed presses only, once, that rendering only',
      async () => {
        const press = bed.platform.press?.bind(bed.platform);
        if (!press) throw new Error('a harness with buttons gives its platform `press`');
        const short = dentistApproval;
        const long: ListenerApprovalSummary = {
          ...short,
          id: 'ap-00000000000b',
          title: 'A long one',
          rendering: `${'x'.repeat(30_000)}\nthe last line`,
        };
        let pending = [short, long];
        const decided: string[] = [];
        const approvals: ListenerApprovals = {
          pending: async () => pending,
          decide: async (id, decision, by) => {
            decided.push(`${decision} ${id} by ${by}`);
            pending = pending.filter((one) => one.id !== id);
            return { status: 'approved', kind: 'action', tasks: ['t1'], actions: 'send_reply', title: short.title };
          },
        };
        const chat = bed.chatService();
        const first = listen(chat, { approvals });
        const withButtons = (id: string) =>
          bed.platform
            .messagesTo(bed.platform.owner)
            .find((message) => message.buttons.some((button) => button.data.includes(id)));
        const shortMessage = await until(() => withButtons(short.id), 'the short request’s buttons');
        const longMessage = await until(() => withButtons(long.id), 'the long request’s buttons');
        const all = textsTo(bed.platform.owner).join('');
        expect(all).toContain(short.rendering);
        expect(all).toMatch(new RegExp(`\\d+ more characters: open the request .*${long.id}`));
        expect(all).not.toContain('the last line');
        for (const text of textsTo(bed.platform.owner)) {
          expect(Array.from(text).length).toBeLessThanOrEqual(bed.platform.maxMessageChars);
        }
        expect(shortMessage.buttons).toHaveLength(2);
        const approve = shortMessage.buttons[0]?.label ?? '';

        // A stranger's press counts for nothing; the owner's decides once, whatever the platform redelivers.
        press({ from: bed.platform.stranger, message: shortMessage, button: approve });
        const owners = press({ from: bed.platform.owner, message: shortMessage, button: approve });
        await until(() => decided.length === 1, 'the owner’s press decided');
        bed.platform.redeliver(owners);
        // What the long request would do changes after its buttons went out: its button decides nothing.
        pending = pending.map((one) =>
          one.id === long.id ? { ...one, rendering: `${one.rendering}, and more` } : one,
        );
        press({ from: bed.platform.owner, message: longMessage, button: approve });
        await until(() => textsTo(bed.platform.owner).some((text) => text.startsWith('Not decided')), 'the refusal');
        expect(decided).toEqual([`approve ${short.id} by ${bed.platform.channel}:${bed.platform.owner}`]);
        expect(textsTo(bed.platform.owner).filter((text) => text.startsWith(`Approved ${short.id}`))).toHaveLength(1);
        expect(bed.logs.filter((line) => line.includes(bed.platform.stranger))).toHaveLength(1);

        // As if the server died before the presses' acknowledgements were stored: the platform hands them out again,
        // and none of them acts or is answered again.
        await first.stop();
        await forgetAcknowledgements();
        listen(chat, { approvals });
        bed.platform.redeliver(owners);
        bed.platform.deliver({ from: bed.platform.owner, text: '/help' });
        await until(
          () => textsTo(bed.platform.owner).some((text) => text.includes('/new')),
          'the help after the presses',
        );
        expect(decided).toHaveLength(1);
        expect(textsTo(bed.platform.owner).filter((text) => text.startsWith('Not decided'))).toHaveLength(1);
        expect(textsTo(bed.platform.owner).some((text) => text.includes('no longer waiting'))).toBe(false);
      },
    );
  });
}

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isAssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConversationStore } from './conversation-store.ts';
import { ChatInbox } from './inbox.ts';

let root: string;
let notes: FileNoteStore;
let store: ConversationStore;
let clock: number;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-chat-'));
  notes = new FileNoteStore({ root: path.join(root, 'notes') });
  clock = Date.parse('2026-11-23T18:00:00.000Z');
  store = new ConversationStore({
    notes,
    now: () => {
      clock += 1000;
      return new Date(clock);
    },
  });
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const noteFile = (id: string) => path.join(root, 'notes', 'chats', `${id}.md`);

describe('ConversationStore', () => {
  it('writes a conversation as notes/chats/<id>.md and reads its messages back from the transcript', async () => {
    const created = await store.create({ title: 'Morning', channel: 'cli', mode: 'collect' });
    expect(created.path).toBe(`chats/${created.id}.md`);
    await store.appendMessage(created.id, { id: 'm1', role: 'user', text: "What's urgent?" });
    await store.appendMessage(created.id, {
      id: 'm2',
      role: 'assistant',
      text: 'The invoice.',
      reply_to: ['m1'],
      steps: [{ tool: 'search_notes', summary: 'urgent → 1 note' }],
    });
    await store.appendMessage(created.id, { id: 'm3', role: 'user', text: 'Thanks' });

    const text = await readFile(noteFile(created.id), 'utf8');
    expect(text).toMatch(/^---\nid: \S+\ntitle: Morning\nchannel: cli\npeer: owner\nmode: collect\n/);
    expect(text).toContain("### user · 2026-11-23T18:00:02.000Z · m1\n\nWhat's urgent?\n\n### assistant");

    const conversation = await store.get(created.id);
    expect(conversation).toMatchObject({ id: created.id, title: 'Morning', mode: 'collect', problems: [] });
    expect(conversation.updated).toBe('2026-11-23T18:00:04.000Z');
    expect(conversation.messages).toEqual([
      { id: 'm1', role: 'user', text: "What's urgent?", at: '2026-11-23T18:00:02.000Z', status: 'answered' },
      {
        id: 'm2',
        role: 'assistant',
        text: 'The invoice.',
        at: '2026-11-23T18:00:03.000Z',
        reply_to: ['m1'],
        status: 'complete',
        steps: [{ tool: 'search_notes', summary: 'urgent → 1 note' }],
      },
      { id: 'm3', role: 'user', text: 'Thanks', at: '2026-11-23T18:00:04.000Z', status: 'received' },
    ]);
  });

  it('appends a message id once: a rerun append writes nothing', async () => {
    const { id } = await store.create();
    expect(await store.appendMessage(id, { id: 'm1', role: 'user', text: 'one' })).toEqual({
      id: 'm1',
      appended: true,
    });
    const before = await readFile(noteFile(id), 'utf8');
    expect(await store.appendMessage(id, { id: 'm1', role: 'user', text: 'one' })).toEqual({
      id: 'm1',
      appended: false,
    });
    expect(await readFile(noteFile(id), 'utf8')).toBe(before);
  });

  it('returns the title and mode a person edited in the frontmatter, and keeps their edits on the next append', async () => {
    const { id } = await store.create({ title: 'Old', mode: 'followup' });
    await store.appendMessage(id, { id: 'm1', role: 'user', text: 'first' });
    const file = noteFile(id);
    const edited = (await readFile(file, 'utf8'))
      .replace('title: Old', 'title: Taxes 2026 # renamed by hand')
      .replace('mode: followup', 'mode: steer')
      .replace('first\n', 'first (a note I added)\n\nA paragraph of my own.\n');
    await writeFile(file, edited);

    expect(await store.get(id)).toMatchObject({ title: 'Taxes 2026', mode: 'steer' });
    await store.appendMessage(id, { id: 'm2', role: 'assistant', text: 'ok', reply_to: ['m1'] });
    const after = await readFile(file, 'utf8');
    expect(after.startsWith(edited.slice(0, edited.indexOf('updated:')))).toBe(true);
    expect(after).toContain('title: Taxes 2026 # renamed by hand');
    expect(after).toContain('first (a note I added)\n\nA paragraph of my own.\n\n### assistant');
    const conversation = await store.get(id);
    expect(conversation.messages.map((message) => [message.id, message.text, message.status])).toEqual([
      ['m1', 'first (a note I added)\n\nA paragraph of my own.', 'answered'],
      ['m2', 'ok', 'complete'],
    ]);
  });

  it('reports a broken section and an unknown mode with path and line, and never rewrites them', async () => {
    const { id } = await store.create();
    await store.appendMessage(id, { id: 'm1', role: 'user', text: 'one' });
    await store.appendMessage(id, { id: 'm2', role: 'user', text: 'two' });
    const file = noteFile(id);
    const broken = (await readFile(file, 'utf8')).replace('· m1', '· M1!').replace('mode: followup', 'mode: whenever');
    await writeFile(file, broken);
    const brokenLine = broken.split('\n').findIndex((line) => line.includes('M1!')) + 1;

    const conversation = await store.get(id);
    expect(conversation.mode).toBe('followup');
    expect(conversation.messages.map((message) => message.id)).toEqual(['m2']);
    expect(conversation.problems).toEqual([
      { path: `chats/${id}.md`, line: 1, message: expect.stringContaining('`mode` is "whenever"') },
      { path: `chats/${id}.md`, line: brokenLine, message: expect.stringContaining('message id `M1!`') },
    ]);

    await store.appendMessage(id, { id: 'm3', role: 'user', text: 'three' });
    const after = await readFile(file, 'utf8');
    expect(after).toContain('### user · 2026-11-23T18:00:02.000Z · M1!\n\none\n');
    expect(after).toContain('mode: whenever');
  });

  it('lists conversations newest first, reporting a broken note instead of failing', async () => {
    const first = await store.create({ title: 'first' });
    const second = await store.create({ title: 'second' });
    await store.appendMessage(first.id, { role: 'user', text: 'bump' });
    await writeFile(path.join(root, 'notes', 'chats', 'broken.md'), '---\nid: [oops\n---\n');
    const broken: string[] = [];
    const listed = await store.list({ onBroken: (error) => broken.push(error.message) });
    expect(listed.map((conversation) => conversation.title)).toEqual(['first', 'second']);
    expect(second.created < first.created).toBe(false);
    expect(broken).toEqual([expect.stringMatching(/^chats\/broken\.md:3:1: Flow sequence/)]);
  });

  it('shows accepted messages that are not in the transcript yet as pending', async () => {
    const inbox = new ChatInbox({ directory: path.join(root, 'data', 'chat', 'inbox') });
    const withInbox = new ConversationStore({ notes, inbox });
    const { id } = await withInbox.create();
    const accepted = await inbox.accept(id, { text: 'hello?' });
    const conversation = await withInbox.get(id);
    expect(conversation.messages).toEqual([
      { id: accepted.id, role: 'user', text: 'hello?', at: expect.any(String), status: 'pending' },
    ]);
    await withInbox.appendMessage(id, { id: accepted.id, role: 'user', text: 'hello?' });
    expect((await withInbox.get(id)).messages.map((message) => message.status)).toEqual(['received']);
  });

  it('refuses unknown conversations, unsafe ids and unknown modes with chat error codes', async () => {
    await expect(store.get('nope')).rejects.toSatisfy((error) => isAssistantError(error, 'CHAT_NOT_FOUND'));
    await expect(store.appendMessage('nope', { role: 'user', text: 'x' })).rejects.toSatisfy((error) =>
      isAssistantError(error, 'CHAT_NOT_FOUND'),
    );
    await expect(store.get('../escape')).rejects.toSatisfy((error) => isAssistantError(error, 'CHAT_INPUT_INVALID'));
    // @ts-expect-error: a mode from outside, not checked by the compiler
    await expect(store.create({ mode: 'loud' })).rejects.toThrow(
      /one of steer, followup, collect, interrupt, got "loud"/,
    );
  });

  describe('fork', () => {
    async function fourMessages() {
      const original = await store.create({ title: 'Plans', channel: 'telegram', peer: '42', mode: 'steer' });
      await store.appendMessage(original.id, { id: 'm1', role: 'user', text: 'Where shall we eat?' });
      await store.appendMessage(original.id, {
        id: 'm2',
        role: 'assistant',
        text: 'The Italian place.',
        reply_to: ['m1'],
        steps: [{ tool: 'search_notes', summary: 'restaurants → 2 notes' }],
      });
      await store.appendMessage(original.id, { id: 'm3', role: 'user', text: 'Book it for eight.' });
      await store.appendMessage(original.id, { id: 'm4', role: 'assistant', text: 'Booked.', reply_to: ['m3'] });
      return original;
    }

    it('copies the messages up to and including the one named, links the original, and leaves it byte for byte', async () => {
      const original = await fourMessages();
      const before = await readFile(noteFile(original.id));

      const fork = await store.fork({ conversation: original.id, message: 'm2', channel: 'cli', peer: 'owner' });

      expect(await readFile(noteFile(original.id))).toEqual(before);
      expect(fork).toMatchObject({
        title: 'Plans (fork)',
        channel: 'cli',
        peer: 'owner',
        mode: 'steer',
        forked_from: { conversation: original.id, message: 'm2' },
        path: `chats/${fork.id}.md`,
      });
      expect(fork.id).not.toBe(original.id);
      const copied = await store.get(fork.id);
      const source = await store.get(original.id);
      expect(copied.messages).toEqual(source.messages.slice(0, 2));
      expect(copied).toMatchObject({ forked_from: { conversation: original.id, message: 'm2' }, problems: [] });
      const text = await readFile(noteFile(fork.id), 'utf8');
      expect(text).toMatch(new RegExp(`\nforked_from:\n  conversation: ${original.id}\n  message: m2\n`));
      expect(text).not.toContain('Book it');
    });

    it('forks at a user message: the fork ends with it, not yet answered there', async () => {
      const original = await fourMessages();
      const fork = await store.fork({ conversation: original.id, message: 'm3' });
      expect((await store.get(fork.id)).messages.map((message) => [message.id, message.status])).toEqual([
        ['m1', 'answered'],
        ['m2', 'complete'],
        ['m3', 'received'],
      ]);
      // Without a channel of its own, the fork stays where the original is.
      expect(fork).toMatchObject({ channel: 'telegram', peer: '42' });
    });

    it('records the persona: the original’s, else the store default', async () => {
      const withPersona = new ConversationStore({ notes, defaultPersona: 'assistant' });
      const plain = await store.create();
      await store.appendMessage(plain.id, { id: 'm1', role: 'user', text: 'hi' });
      expect((await withPersona.fork({ conversation: plain.id, message: 'm1' })).persona).toBe('assistant');
      const researcher = await withPersona.create({ persona: 'researcher' });
      await withPersona.appendMessage(researcher.id, { id: 'm1', role: 'user', text: 'hi' });
      const fork = await withPersona.fork({ conversation: researcher.id, message: 'm1' });
      expect(fork.persona).toBe('researcher');
      expect((await withPersona.get(fork.id)).persona).toBe('researcher');
    });

    it('refuses an unknown conversation, an unknown message and one still in the inbox, creating nothing', async () => {
      const inbox = new ChatInbox({ directory: path.join(root, 'data', 'chat', 'inbox') });
      const withInbox = new ConversationStore({ notes, inbox });
      const original = await fourMessages();
      const waiting = await inbox.accept(original.id, { text: 'and dessert?' });
      await expect(withInbox.fork({ conversation: 'nope', message: 'm1' })).rejects.toSatisfy((error) =>
        isAssistantError(error, 'CHAT_NOT_FOUND'),
      );
      await expect(withInbox.fork({ conversation: original.id, message: 'm9' })).rejects.toSatisfy(
        (error) =>
          isAssistantError(error, 'CHAT_MESSAGE_NOT_FOUND') &&
          error.message === `Conversation ${original.id} has no message m9 (its transcript holds 4 messages, m1 to m4)`,
      );
      await expect(withInbox.fork({ conversation: original.id, message: waiting.id })).rejects.toSatisfy(
        (error) => isAssistantError(error, 'CHAT_MESSAGE_NOT_FOUND') && /waits in the inbox/.test(error.message),
      );
      await expect(withInbox.fork({ conversation: original.id, message: '../x' })).rejects.toSatisfy((error) =>
        isAssistantError(error, 'CHAT_INPUT_INVALID'),
      );
      expect((await store.list()).map((conversation) => conversation.id)).toEqual([original.id]);
    });
  });

  it('reports a persona or forked_from a person broke, and reads the rest', async () => {
    const created = await store.create({ persona: 'researcher' });
    expect(await readFile(noteFile(created.id), 'utf8')).toContain('\npersona: researcher\n');
    const file = noteFile(created.id);
    await writeFile(
      file,
      (await readFile(file, 'utf8')).replace('persona: researcher', 'persona: "a b"\nforked_from: somewhere'),
    );
    const conversation = await store.get(created.id);
    expect(conversation.persona).toBeUndefined();
    expect(conversation.forked_from).toBeUndefined();
    expect(conversation.problems.map((problem) => problem.message)).toEqual([
      expect.stringMatching(/^frontmatter `persona` is "a b", not a persona name/),
      expect.stringMatching(/^frontmatter `forked_from` is "somewhere"/),
    ]);
    await expect(store.create({ persona: '../etc' })).rejects.toSatisfy((error) =>
      isAssistantError(error, 'CHAT_INPUT_INVALID'),
    );
  });
});

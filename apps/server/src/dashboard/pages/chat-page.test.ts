import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../../create-server.ts';

const token = 'dashboard-chat-test-token-0123456789abcdef';
const bearer = { authorization: `Bearer ${token}` };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-dashboard-chat-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server() {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const app = createServer({ config, token });
  await app.ready();
  // The test's own view of the files, to write a transcript as turns would.
  const chat = new ChatService({
    notes: new FileNoteStore({ root: config.paths.notes }),
    dataDir: config.paths.dataDir,
    controlRoot: config.paths.control,
    queue: { enqueue: async () => ({ status: 'enqueued' }) } as never,
  });
  return Object.assign(app, { chat, notesPath: config.paths.notes });
}

describe('the chat page: Fork from here', () => {
  it('forks at a message into a new dashboard conversation and opens it; the original stays as it was', async () => {
    await using app = await server();
    const original = await app.chat.create({ title: 'Trip', channel: 'api', peer: 'owner' });
    await app.chat.conversations.appendMessage(original.id, { id: 'm1', role: 'user', text: 'Train or plane?' });
    await app.chat.conversations.appendMessage(original.id, {
      id: 'm2',
      role: 'assistant',
      text: 'The train.',
      reply_to: ['m1'],
    });
    await app.chat.conversations.appendMessage(original.id, { id: 'm3', role: 'user', text: 'Book it.' });
    const page = await app.inject({ method: 'GET', url: `/chat/${original.id}`, headers: bearer });
    expect(page.statusCode).toBe(200);
    expect(page.body.match(/Fork from here/g)).toHaveLength(3);
    expect(page.body).toContain(`action="/chat/${original.id}/fork"`);
    expect(page.body).toContain('name="message" value="m2"');
    const before = await readFile(path.join(app.notesPath, original.path));

    const forked = await app.inject({
      method: 'POST',
      url: `/chat/${original.id}/fork`,
      headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'message=m2',
    });
    expect(forked.statusCode).toBe(303);
    const fork = (await app.chat.list()).find((conversation) => conversation.forked_from !== undefined);
    expect(fork).toMatchObject({
      channel: 'dashboard',
      peer: 'owner',
      forked_from: { conversation: original.id, message: 'm2' },
    });
    expect(forked.headers.location).toBe(`/chat/${fork?.id}#message-form`);
    expect(await readFile(path.join(app.notesPath, original.path))).toEqual(before);
    const forkPage = await app.inject({ method: 'GET', url: `/chat/${fork?.id}`, headers: bearer });
    expect(forkPage.body).toContain(`forked from <a href="/chat/${original.id}#message-m2">${original.id}</a>`);
    expect(forkPage.body).toContain('The train.');
    expect(forkPage.body).not.toContain('Book it.');

    const unknown = await app.inject({
      method: 'POST',
      url: `/chat/${original.id}/fork`,
      headers: { ...bearer, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'message=m9',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.body).toContain('has no message m9');
  });

  it('offers no fork in the notifications conversation', async () => {
    await using app = await server();
    await app.chat.create({ id: 'notifications', channel: 'notifications', peer: 'owner' });
    await app.chat.conversations.appendMessage('notifications', { id: 'n1', role: 'assistant', text: 'a mail said…' });
    const page = await app.inject({ method: 'GET', url: '/chat/notifications', headers: bearer });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('a mail said');
    expect(page.body).not.toContain('Fork from here');
  });
});

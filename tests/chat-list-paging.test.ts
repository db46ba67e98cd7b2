// 3,000 conversation notes written straight to disk, listed over real loopback HTTP: `GET /api/chats` pages them
// from the index, each exactly once and newest first; the dashboard's /chat shows the first page and a "More" link
// to the next; a conversation started afterwards comes first.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { createServer } from '@assistant/server';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { tempDir } from './helpers/temp-dir.ts';

const conversations = 3_000;
const summary = z.object({ id: z.string(), title: z.string(), updated: z.string(), created: z.string() });
const page = z.object({ chats: z.array(summary), broken: z.array(z.string()), next_cursor: z.string().nullable() });

describe('the conversation list at 3,000 conversations', () => {
  it('pages every conversation exactly once, newest first, over the API and on /chat', {
    timeout: 120_000,
  }, async () => {
    await using dir = await tempDir();
    const configPath = await dir.write('config.yaml', 'data_dir: ./data\nserver:\n  port: 0\n');
    const { config } = await loadConfig({ configPath });
    const folder = path.join(config.paths.notes, 'chats');
    await mkdir(folder, { recursive: true });
    for (let start = 0; start < conversations; start += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, conversations - start) }, (_, offset) => {
          const index = start + offset;
          const id = `c${String(index).padStart(5, '0')}`;
          // Not in file order, and some share `updated` (ties go by created, then id).
          const updated = new Date(Date.UTC(2026, 0, 1) + ((index * 7919) % 2_500) * 60_000).toISOString();
          const created = new Date(Date.UTC(2025, 0, 1) + (index % 13) * 60_000).toISOString();
          return writeFile(
            path.join(folder, `${id}.md`),
            `---\nid: ${id}\ntitle: Conversation ${index}\nchannel: api\npeer: owner\nmode: followup\ncreated: ${created}\nupdated: ${updated}\n---\n`,
          );
        }),
      );
    }
    const token = 'test-token-for-the-chat-list-test-0123456';
    await using app = createServer({ config, token });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const get = (url: string) => fetch(`${address}${url}`, { headers: { authorization: `Bearer ${token}` } });

    const seen: z.infer<typeof summary>[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < 100; pages += 1) {
      const response = await get(`/api/chats?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(response.status).toBe(200);
      const body = page.parse(await response.json());
      expect(body.chats.length).toBeLessThanOrEqual(200);
      expect(body.broken).toEqual([]);
      seen.push(...body.chats);
      cursor = body.next_cursor;
      if (cursor === null) break;
    }
    expect(seen).toHaveLength(conversations);
    expect(new Set(seen.map((chat) => chat.id)).size).toBe(conversations);
    const newestFirst = [...seen].sort(
      (left, right) =>
        right.updated.localeCompare(left.updated) ||
        right.created.localeCompare(left.created) ||
        right.id.localeCompare(left.id),
    );
    expect(seen.map((chat) => chat.id)).toEqual(newestFirst.map((chat) => chat.id));

    // Without a limit, a page of 50; bad paging input is refused by name.
    expect(page.parse(await (await get('/api/chats')).json()).chats).toHaveLength(50);
    for (const query of ['limit=0', 'limit=501', 'limit=ten', 'cursor=nonsense']) {
      const refused = await get(`/api/chats?${query}`);
      expect(refused.status).toBe(400);
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('CHAT_INPUT_INVALID');
    }

    // The dashboard shows the first 50 and links to the next 50.
    const first = await (await get('/chat')).text();
    const shownIds = (html: string) => [...html.matchAll(/href="\/chat\/(c\d{5})"/g)].map((match) => match[1]);
    expect(shownIds(first)).toEqual(seen.slice(0, 50).map((chat) => chat.id));
    const more = /href="(\/chat\?cursor=[^"]+)">More/.exec(first)?.[1];
    if (!more) throw new Error('no "More" link on /chat');
    const second = await (await get(more.replaceAll('&amp;', '&'))).text();
    expect(shownIds(second)).toEqual(seen.slice(50, 100).map((chat) => chat.id));

    // A conversation started now is the newest: the index took it in.
    const created = await fetch(`${address}/api/chats`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ title: 'Just now' }),
    });
    const { id } = z.object({ id: z.string() }).parse(await created.json());
    const top = page.parse(await (await get('/api/chats?limit=1')).json());
    expect(top.chats.map((chat) => chat.id)).toEqual([id]);
  });
});

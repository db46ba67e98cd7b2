import { mkdir, mkdtemp, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatService, conversationIndexPaths } from './chat-service.ts';
import { ConversationChanges, ConversationIndex } from './conversation-index.ts';
import { ConversationStore, type ConversationSummary } from './conversation-store.ts';

let root: string;
let notes: FileNoteStore;
let chats: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-conversation-index-'));
  notes = new FileNoteStore({ root: path.join(root, 'notes') });
  chats = path.join(root, 'notes', 'chats');
  await mkdir(chats, { recursive: true });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A conversation note written straight to disk, as a person (or an older version) would leave it. */
function noteText(index: number): string {
  // Some share their `updated` (ties are ordered by created, then id), and the order is not the file order.
  const updated = new Date(Date.UTC(2026, 0, 1) + ((index * 7919) % 2_500) * 60_000).toISOString();
  const created = new Date(Date.UTC(2025, 0, 1) + (index % 13) * 60_000).toISOString();
  return `---\nid: c${String(index).padStart(5, '0')}\ntitle: Conversation ${index}\nchannel: api\npeer: owner\nmode: followup\ncreated: ${created}\nupdated: ${updated}\n---\n`;
}

async function writeConversations(count: number): Promise<void> {
  for (let start = 0; start < count; start += 200) {
    await Promise.all(
      Array.from({ length: Math.min(200, count - start) }, (_, offset) => {
        const index = start + offset;
        return writeFile(path.join(chats, `c${String(index).padStart(5, '0')}.md`), noteText(index));
      }),
    );
  }
}

/** A person's edit, saved the way editors and Assistant save: a new file renamed over the old one. */
async function editByHand(id: string, text: string): Promise<void> {
  const file = path.join(chats, `${id}.md`);
  await writeFile(`${file}.swp`, text);
  await rename(`${file}.swp`, file);
}

function newestFirst(left: ConversationSummary, right: ConversationSummary): number {
  return (
    right.updated.localeCompare(left.updated) ||
    right.created.localeCompare(left.created) ||
    right.id.localeCompare(left.id)
  );
}

/** An index over the temp notes whose note reads are counted. */
function countedIndex(store: ConversationStore) {
  const reads: string[] = [];
  const index = new ConversationIndex({
    ...conversationIndexPaths(path.join(root, 'data'), notes.root),
    readSummary: (notePath) => {
      reads.push(notePath);
      return store.summaryOf(notePath);
    },
  });
  return { index, reads };
}

describe('the conversation list index', () => {
  it('pages conversations written as files: each exactly once, newest first, from the index', async () => {
    // 300 here; tests/chat-list-paging.test.ts pages 3,000 over HTTP.
    await writeConversations(300);
    const chat = new ChatService({
      notes,
      dataDir: path.join(root, 'data'),
      controlRoot: path.join(root, 'data/control'),
      queue: { enqueue: async () => ({ status: 'rate_limited', type: 'x', reason: 'unused', retryAt: '' }) as never },
    });
    const seen: ConversationSummary[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 100; pages += 1) {
      const page = await chat.page({ limit: 32, ...(cursor === undefined ? {} : { cursor }) });
      seen.push(...page.chats);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    expect(seen).toHaveLength(300);
    expect(new Set(seen.map((summary) => summary.id)).size).toBe(300);
    expect(seen).toEqual([...seen].sort(newestFirst));
    // The page holds what the old list held for each conversation.
    expect(seen).toEqual(await chat.list());
    expect((await stat(path.join(root, 'data/chat/index/conversations.json'))).isFile()).toBe(true);

    await expect(chat.page({ limit: 0 })).rejects.toMatchObject({ code: 'CHAT_INPUT_INVALID' });
    await expect(chat.page({ limit: 501 })).rejects.toMatchObject({ code: 'CHAT_INPUT_INVALID' });
    await expect(chat.page({ cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'CHAT_INPUT_INVALID' });
  });

  it('reads a note only when it changed: journaled writes name it, a hand edit is found by a rescan', async () => {
    await writeConversations(300);
    const paths = conversationIndexPaths(path.join(root, 'data'), notes.root);
    const store = new ConversationStore({ notes, changes: new ConversationChanges(paths) });
    const first = countedIndex(store);
    // No index yet: built by reading every note once.
    expect((await first.index.page({ limit: 10 })).chats).toHaveLength(10);
    expect(first.reads).toHaveLength(300);
    first.reads.length = 0;
    await first.index.page({ limit: 10 });
    expect(first.reads).toEqual([]);

    // A message appended through the store (as the worker does): only that conversation is read again, and it is
    // now the newest.
    const oldest = (await first.index.all()).chats.at(-1);
    if (!oldest) throw new Error('no conversations');
    await store.appendMessage(oldest.id, { role: 'user', text: 'hello again' });
    const afterAppend = await first.index.page({ limit: 1 });
    expect(afterAppend.chats[0]?.id).toBe(oldest.id);
    expect(first.reads).toEqual([`chats/${oldest.id}.md`]);
    first.reads.length = 0;

    // A person's edit journals nothing: the folder's mtime gives it away, and only the changed note is read again.
    await editByHand('c00007', noteText(7).replace('title: Conversation 7', 'title: Renamed by hand'));
    const all = (await first.index.all()).chats;
    expect(all.find((summary) => summary.id === 'c00007')?.title).toBe('Renamed by hand');
    expect(first.reads).toEqual(['chats/c00007.md']);
    first.reads.length = 0;

    // A note created, one removed and one broken by hand are found too.
    await editByHand('c99999', noteText(99_999));
    await rm(path.join(chats, 'c00001.md'));
    await editByHand('c00002', '---\nid: [broken\n---\n');
    const changed = await first.index.all();
    expect(changed.chats.map((summary) => summary.id)).toContain('c99999');
    expect(changed.chats.map((summary) => summary.id)).not.toContain('c00001');
    expect(changed.chats.map((summary) => summary.id)).not.toContain('c00002');
    expect(changed.broken).toEqual([expect.stringContaining('chats/c00002.md')]);
    expect(first.reads.sort()).toEqual(['chats/c00002.md', 'chats/c99999.md']);

    // Another process (a restarted server) takes the index from its file: no note read.
    const second = countedIndex(store);
    expect((await second.index.all()).chats).toEqual(changed.chats);
    expect(second.reads).toEqual([]);
    // The index is derived: removed, it is built again from the notes.
    await rm(path.join(paths.directory, 'conversations.json'));
    const third = countedIndex(store);
    expect((await third.index.all()).chats).toEqual(changed.chats);
    expect(third.reads).toHaveLength(300);
  });

  it('lists asked for at once refresh one after another: the same answer, one snapshot that reads back', async () => {
    await writeConversations(120);
    const store = new ConversationStore({ notes });
    const { index, reads } = countedIndex(store);
    const pages = await Promise.all(Array.from({ length: 20 }, () => index.page({ limit: 120 })));
    for (const page of pages) expect(page.chats).toEqual(pages[0]?.chats);
    // Built once, not once per caller.
    expect(reads).toHaveLength(120);
    const snapshot = JSON.parse(await readFile(index.file, 'utf8')) as { entries: unknown[] };
    expect(snapshot.entries).toHaveLength(120);
  });
});

// The memory tools over the real stores and index (temp notes folder, the offline hashing embedder): what the model
// remembers or adds is found again by recall and list_tasks in the same turn.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Tool, ToolContext } from '@assistant/agent';
import { HashingEmbedder, MemoryIndex, memoryStores } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MemoryContext } from './memory-context.ts';
import { memoryTools } from './memory-tools.ts';

let root: string;
let index: MemoryIndex | undefined;
beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'memory-tools-'));
});
afterEach(async () => {
  await index?.close();
  index = undefined;
  await rm(root, { recursive: true, force: true });
});

async function setup(owner: boolean) {
  const notes = new FileNoteStore({ root: path.join(root, 'notes') });
  const stores = memoryStores({ notes });
  index = new MemoryIndex({ notes, dataDir: path.join(root, 'data'), embedder: new HashingEmbedder() });
  await index.start();
  const started = index;
  const memory: MemoryContext = {
    consolidate: [],
    llm: 'default',
    timeZone: 'UTC',
    context: { facts: 5, guidance: 2 },
    stores,
    index: async () => started,
  };
  const byName = new Map(
    memoryTools({ memory, owner, source: 'chats/c-1.md', nowMs: () => Date.parse('2026-11-28T10:00:00Z') }).map(
      (tool) => [tool.name, tool],
    ),
  );
  const call = async (name: string, input: unknown) => {
    const tool = byName.get(name) as Tool;
    return tool.run(tool.input.parse(input), { signal: new AbortController().signal } as ToolContext);
  };
  return { call, stores };
}

describe('the memory tools over the real stores and index', () => {
  it('remember then recall finds the fact at once; lookup_contact finds the contact with it', async () => {
    const { call, stores } = await setup(true);
    await stores.contacts.create({ name: 'Alice Martin', emails: ['alice@acme.example'] }, { by: 'owner' });
    const remembered = (await call('remember', {
      fact: 'Alice Martin prefers phone calls after 4pm',
      about: ['Alice Martin'],
    })) as { path: string; trust: string; about: string[] };
    expect(remembered).toMatchObject({ trust: 'owner', about: ['contact:alice-martin'] });
    const recalled = (await call('recall', { query: 'when to phone Alice' })) as {
      hits: Array<{ path: string; superseded: boolean }>;
    };
    expect(recalled.hits[0]).toMatchObject({ path: remembered.path, superseded: false });
    const found = (await call('lookup_contact', { address: 'alice@acme.example' })) as {
      contacts: Array<{ slug: string; facts: Array<{ path: string }> }>;
    };
    expect(found.contacts[0]?.slug).toBe('alice-martin');
    expect(found.contacts[0]?.facts.map((fact) => fact.path)).toEqual([remembered.path]);
  });

  it("a peer's remember is extracted; add_task then list_tasks shows the owner's task, by due", async () => {
    const { call } = await setup(false);
    expect(await call('remember', { fact: 'The office closes on Friday', about: ['office'] })).toMatchObject({
      trust: 'extracted',
      about: ['topic:office'],
    });
    await call('add_task', { title: 'Send Bob the contract', due: '2026-11-27' });
    await call('add_task', { title: 'Book the dentist', due: '2026-12-20' });
    const overdue = (await call('list_tasks', { due: 'overdue' })) as { tasks: Array<{ title: string }> };
    expect(overdue.tasks.map((task) => task.title)).toEqual(['Send Bob the contract']);
    const all = (await call('list_tasks', {})) as { tasks: Array<{ title: string; created_by: string }> };
    expect(all.tasks.map((task) => [task.title, task.created_by])).toEqual([
      ['Send Bob the contract', 'chat'],
      ['Book the dentist', 'chat'],
    ]);
  });
});

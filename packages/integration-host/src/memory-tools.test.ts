import type { Tool, ToolContext } from '@assistant/agent';
import { describe, expect, it } from 'vitest';
import { memoryToolNames, memoryTools } from './memory-tools.ts';
import { contactFixture, factFixture, fakeMemory } from './testing/fake-memory.ts';

const alice = contactFixture({
  slug: 'alice-martin',
  name: 'Alice Martin',
  emails: ['alice@acme.example'],
  handles: { github: ['alice-a'] },
  organisation: 'Acme',
});

function tools(memory: ReturnType<typeof fakeMemory>, owner = true, nowMs = Date.parse('2026-11-28T10:00:00Z')) {
  const byName = new Map(
    memoryTools({ memory, owner, source: 'chats/c-1.md', nowMs: () => nowMs, timeZone: 'Europe/Berlin' }).map(
      (tool) => [tool.name, tool],
    ),
  );
  return async (name: string, input: unknown) => {
    const tool = byName.get(name) as Tool;
    return tool.run(tool.input.parse(input), { signal: new AbortController().signal } as ToolContext);
  };
}

describe('the memory tools', () => {
  it('are the five the issue names, none of them trusted (their output is fenced), reading ones read_only', () => {
    const made = memoryTools({ memory: fakeMemory(), owner: true, source: 'chats/c-1.md' });
    expect(made.map((tool) => tool.name)).toEqual([...memoryToolNames]);
    expect(made.filter((tool) => tool.trusted)).toEqual([]);
    expect(Object.fromEntries(made.map((tool) => [tool.name, tool.tier]))).toEqual({
      recall: 'read_only',
      remember: 'soft',
      lookup_contact: 'read_only',
      add_task: 'soft',
      list_tasks: 'read_only',
    });
  });

  it('recall answers path, title, snippet, the superseded flag and why', async () => {
    const memory = fakeMemory({
      hits: [
        {
          path: 'facts/f-2.md',
          score: 0.9,
          parts: { lexical: 0.5, vector: 0.4 },
          title: 'The dentist moved to Friday',
          snippet: 'moved to Friday',
        },
        {
          path: 'facts/f-1.md',
          score: 0.5,
          parts: { lexical: 0.5 },
          superseded: true,
          title: 'The dentist is on Thursday',
          snippet: 'Thursday',
        },
      ],
    });
    const answer = await tools(memory)('recall', { query: 'when is the dentist?' });
    expect(answer).toEqual({
      hits: [
        {
          path: 'facts/f-2.md',
          title: 'The dentist moved to Friday',
          snippet: 'moved to Friday',
          superseded: false,
          why: 'words, meaning',
        },
        {
          path: 'facts/f-1.md',
          title: 'The dentist is on Thursday',
          snippet: 'Thursday',
          superseded: true,
          why: 'words',
        },
      ],
      degraded: 'fake index',
    });
    expect(memory.searches[0]).toMatchObject({ query: 'when is the dentist?', limit: 5 });
  });

  it('remember writes an owner fact for the owner and an extracted one for anyone else, about a known contact or a topic', async () => {
    const memory = fakeMemory({ contacts: [alice] });
    const written = await tools(memory, true)('remember', {
      fact: 'Alice prefers calls after 4pm',
      about: ['Alice Martin', 'phone calls'],
    });
    expect(written).toMatchObject({ trust: 'owner', about: ['contact:alice-martin', 'topic:phone-calls'] });
    expect(memory.facts[0]).toMatchObject({ statement: 'Alice prefers calls after 4pm', source: 'chats/c-1.md' });
    // The index sees the new fact at once: a recall in the same turn finds it.
    expect(memory.refreshed).toEqual(['facts/f-1.md']);

    await tools(memory, false)('remember', { fact: 'Alice works from Lyon', about: ['contact:alice-martin'] });
    expect(memory.facts[1]).toMatchObject({ trust: 'extracted', about: ['contact:alice-martin'] });
  });

  it('lookup_contact finds by address, by handle with or without a platform, and by name, with current facts only', async () => {
    const memory = fakeMemory({
      contacts: [alice],
      facts: [
        factFixture({ id: 'f-old', statement: 'Alice is at Initech', about: ['contact:alice-martin'] }),
        factFixture({
          id: 'f-new',
          statement: 'Alice is at Acme',
          about: ['contact:alice-martin'],
          supersedes: ['f-old'],
        }),
      ],
    });
    const call = tools(memory);
    for (const query of [{ address: 'alice@acme.example' }, { handle: 'github:alice-a' }, { handle: '@alice-a' }]) {
      const { contacts } = (await call('lookup_contact', query)) as { contacts: Array<Record<string, unknown>> };
      expect(contacts, JSON.stringify(query)).toHaveLength(1);
      expect(contacts[0]).toMatchObject({ slug: 'alice-martin', organisation: 'Acme' });
      expect(contacts[0]?.facts).toEqual([expect.objectContaining({ id: 'f-new' })]);
    }
    expect(await call('lookup_contact', { name: 'Nobody Known' })).toEqual({ contacts: [] });
    expect(() => memoryTools({ memory, owner: true, source: 'x' })[2]?.input.parse({})).toThrow(
      /a name, an address or a handle/,
    );
  });

  it('add_task makes an owner task made by chat, and refuses a due date that is not one, saying what is valid', async () => {
    const memory = fakeMemory({ contacts: [alice] });
    const call = tools(memory);
    expect(await call('add_task', { title: 'Answer Alice', due: '2026-12-01', about: ['Alice Martin'] })).toMatchObject(
      {
        title: 'Answer Alice',
        due: '2026-12-01',
        status: 'open',
        created_by: 'chat',
        about: ['contact:alice-martin'],
      },
    );
    expect(memory.refreshed).toEqual(['tasks/t-1.md']);
    await expect(call('add_task', { title: 'x', due: 'next monday' })).rejects.toThrow(/YYYY-MM-DD/);
  });

  it("list_tasks filters the owner's open tasks by due: overdue, today (in the owner's zone), this week, all", async () => {
    const task = (id: string, due: string | undefined, status: 'open' | 'done' = 'open') => ({
      path: `tasks/${id}.md`,
      id,
      title: id,
      ...(due === undefined ? {} : { due }),
      status,
      created_by: 'owner' as const,
      about: [],
    });
    const memory = fakeMemory({
      tasks: [
        task('yesterday', '2026-11-27'),
        task('today', '2026-11-28'),
        // 23:30 UTC on the 28th is the 29th in Berlin: not today there.
        task('tonight-utc', '2026-11-28T23:30:00Z'),
        task('in-five-days', '2026-12-03'),
        task('next-month', '2026-12-28'),
        task('undated', undefined),
        task('done', '2026-11-01', 'done'),
      ],
    });
    const call = tools(memory);
    const ids = async (input: Record<string, unknown>) =>
      ((await call('list_tasks', input)) as { tasks: Array<{ id: string }> }).tasks.map((entry) => entry.id);
    expect(await ids({ due: 'overdue' })).toEqual(['yesterday']);
    expect(await ids({ due: 'today' })).toEqual(['yesterday', 'today']);
    expect(await ids({ due: 'week' })).toEqual(['yesterday', 'today', 'tonight-utc', 'in-five-days']);
    expect(await ids({})).toHaveLength(6);
    expect(await ids({ status: 'done' })).toEqual(['done']);
  });
});

import type { MemoryDomain } from '@assistant/config';
import type { Contact, Fact, Guidance, MemorySearchHit, MemorySearchOptions, OwnerTask } from '@assistant/memory';
import type { MemoryContext, MemorySearch } from '../memory-context.ts';

/**
 * A MemoryContext over arrays, for tests of what uses memory (tools, the chat context, the due check): the stores'
 * and the index's behaviour is tested in @assistant/memory; here only what the callers do with their answers.
 * `hits` answers every search (filtered by folder); `refreshed` records the index refreshes.
 */
export function fakeMemory(
  init: {
    contacts?: Contact[];
    facts?: Fact[];
    tasks?: OwnerTask[];
    guidance?: Guidance[];
    hits?: MemorySearchHit[];
    consolidate?: MemoryDomain[];
    context?: { facts: number; guidance: number };
    timeZone?: string;
  } = {},
): MemoryContext & {
  contacts: Contact[];
  facts: Fact[];
  tasks: OwnerTask[];
  refreshed: string[];
  searches: MemorySearchOptions[];
} {
  const contacts = [...(init.contacts ?? [])];
  const facts = [...(init.facts ?? [])];
  const tasks = [...(init.tasks ?? [])];
  const guidance = [...(init.guidance ?? [])];
  const refreshed: string[] = [];
  const searches: MemorySearchOptions[] = [];
  const superseded = () => new Set(facts.flatMap((fact) => fact.supersedes));
  const index: MemorySearch = {
    search: (options) => {
      searches.push(options);
      const hits = (init.hits ?? []).filter(
        (hit) => options.folders === undefined || options.folders.some((folder) => hit.path.startsWith(`${folder}/`)),
      );
      return { hits: hits.slice(0, options.limit ?? 10), mode: 'lexical', degraded: 'fake index' };
    },
    refresh: (notePath) => {
      refreshed.push(notePath);
    },
    rebuild: async () => undefined,
    status: () => ({ notes: 0, embedded: 0, pending: 0, model: 'fake' }),
  };
  const normalise = (text: string) =>
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, ' ')
      .trim();
  return {
    contacts,
    facts,
    tasks,
    refreshed,
    searches,
    consolidate: init.consolidate ?? ['email', 'github', 'chat'],
    llm: 'default',
    timeZone: init.timeZone ?? 'UTC',
    context: init.context ?? { facts: 5, guidance: 2 },
    index: async () => index,
    stores: {
      contacts: {
        list: async () => ({ contacts, problems: [] }),
        get: async (slug) => contacts.find((contact) => contact.slug === slug),
        resolve: async (slug) => {
          let contact = contacts.find((candidate) => candidate.slug === slug);
          while (contact?.merged_into !== undefined) {
            const into: string = contact.merged_into;
            contact = contacts.find((candidate) => candidate.slug === into);
          }
          return contact;
        },
        find: async (query) =>
          contacts
            .filter(
              (contact) =>
                (query.email !== undefined && contact.emails.includes(query.email.toLowerCase())) ||
                (query.name !== undefined && normalise(contact.name) === normalise(query.name)) ||
                (query.handle !== undefined &&
                  (contact.handles[query.handle.platform] ?? []).includes(query.handle.value.toLowerCase())),
            )
            .map((contact) => ({ contact, score: 1, why: 'exact' })),
      },
      facts: {
        list: async (options = {}) => ({
          facts: facts.filter(
            (fact) =>
              (options.about === undefined || fact.about.includes(options.about)) &&
              (options.includeSuperseded === true || !superseded().has(fact.id)),
          ),
          problems: [],
        }),
        get: async (id) => facts.find((fact) => fact.id === id),
        add: async (input) => {
          const id = `f-${facts.length + 1}`;
          const fact: Fact = {
            path: `facts/${id}.md`,
            id,
            statement: input.statement,
            about: input.about,
            source: input.source,
            trust: input.trust,
            observed_at: input.observedAt ?? '2026-11-28T10:00:00.000Z',
            confidence: input.confidence ?? 1,
            supersedes: input.supersedes ?? [],
          };
          facts.push(fact);
          return fact;
        },
      },
      tasks: {
        list: async (options = {}) => ({
          tasks: tasks.filter((task) => options.status === undefined || task.status === options.status),
          problems: [],
        }),
        add: async (input) => {
          if (input.due !== undefined && !/^\d{4}-\d{2}-\d{2}/.test(input.due)) {
            throw new Error(`due must be YYYY-MM-DD or an ISO instant, got ${input.due}`);
          }
          const id = `t-${tasks.length + 1}`;
          const task: OwnerTask = {
            path: `tasks/${id}.md`,
            id,
            title: input.title,
            ...(input.due === undefined ? {} : { due: input.due }),
            status: 'open',
            ...(input.source === undefined ? {} : { source: input.source }),
            created_by: input.createdBy,
            about: input.about ?? [],
          };
          tasks.push(task);
          return task;
        },
      },
      guidance: {
        list: async () => ({ guidance, problems: [] }),
        get: async (name) => guidance.find((note) => note.name === name),
      },
    },
  };
}

/** A contact with the fields a test does not care about filled in. */
export function contactFixture(fields: Partial<Contact> & { slug: string; name: string }): Contact {
  return {
    path: `contacts/${fields.slug}.md`,
    aliases: [],
    emails: [],
    handles: {},
    relationships: [],
    observed: [],
    sources: [],
    created_by: 'owner',
    merged_from: [],
    body: '',
    ...fields,
  };
}

/** A fact with the fields a test does not care about filled in. */
export function factFixture(fields: Partial<Fact> & { id: string; statement: string }): Fact {
  return {
    path: `facts/${fields.id}.md`,
    about: [],
    source: 'owner',
    trust: 'owner',
    observed_at: '2026-11-01T09:00:00.000Z',
    confidence: 1,
    supersedes: [],
    ...fields,
  };
}

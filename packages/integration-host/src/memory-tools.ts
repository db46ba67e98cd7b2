import { defineTool, type Tool } from '@assistant/agent';
import { type Contact, dayIn, type Fact, type OwnerTask, tasksDue } from '@assistant/memory';
import * as z from 'zod';
import type { MemoryContext } from './memory-context.ts';

/** The names of the memory tools, for personas' grants and the tool-name list. */
export const memoryToolNames = ['recall', 'remember', 'lookup_contact', 'add_task', 'list_tasks'] as const;

export interface MemoryToolsOptions {
  memory: MemoryContext;
  /**
   * True when the caller is the owner on an authenticated channel (chat's `ownerPeer`): only then is a fact
   * `remember`ed with trust `owner`; anything else (a peer, an agent reading mail) writes `extracted`, which can
   * never supersede what the owner wrote.
   */
  owner: boolean;
  /** Where a remembered fact or an added task came from: a conversation note, a task's transcript. */
  source: string;
  /** Who `add_task` says made the task. @default 'chat' */
  createdBy?: OwnerTask['created_by'];
  /** The owner's time zone: what "today" and "this week" are for `list_tasks`. @default UTC */
  timeZone?: string;
  /** @default Date.now */
  nowMs?: () => number;
}

const aboutSchema = z
  .array(z.string().min(1).max(200))
  .max(10)
  .describe('who or what it is about: contact names or slugs (contact:alice-martin), or topics (topic:dentist)');

/**
 * The memory tools (docs/memory.md): `recall` (hybrid search over the notes), `remember` (a fact), `lookup_contact`,
 * `add_task` and `list_tasks` (the owner's own tasks, `tasks/*.md`, not the queue). Their output reaches the model
 * fenced as untrusted data like every tool's: facts and contacts hold text extracted from mail.
 */
export function memoryTools(options: MemoryToolsOptions): Tool[] {
  const { memory } = options;
  const now = options.nowMs ?? Date.now;
  return [
    defineTool({
      name: 'recall',
      codePath: ['memory', 'recall'],
      description:
        "Searches the owner's memory (facts, contacts, tasks, guidance, mail and other notes) by meaning and words. Returns the best notes with path, title, snippet, whether a fact is superseded by a newer one, and why it matched.",
      tier: 'read_only',
      input: z.object({ query: z.string().min(1).max(2_000), limit: z.int().min(1).max(20).default(5) }),
      run: async ({ query, limit }, tool) => {
        const index = await memory.index();
        const result = await index.search({ query, limit, signal: tool.signal });
        return {
          hits: result.hits.map((hit) => ({
            path: hit.path,
            title: hit.title,
            snippet: hit.snippet,
            superseded: hit.superseded === true,
            why: whyMatched(hit.parts),
          })),
          ...(result.degraded === undefined ? {} : { degraded: result.degraded }),
        };
      },
    }),
    defineTool({
      name: 'remember',
      codePath: ['memory', 'remember'],
      description:
        'Writes down one fact (a single statement) about people or topics, so it can be recalled later. It never replaces an older fact; both stay readable.',
      // A new note, which the owner can read and remove: undoable.
      tier: 'soft',
      input: z.object({ fact: z.string().min(1).max(2_000), about: aboutSchema.default([]) }),
      run: async ({ fact, about }) => {
        const written = await memory.stores.facts.add({
          statement: fact,
          about: await resolveAbout(memory, about),
          source: options.source,
          trust: options.owner ? 'owner' : 'extracted',
        });
        await refresh(memory, written.path);
        return { path: written.path, id: written.id, about: written.about, trust: written.trust };
      },
    }),
    defineTool({
      name: 'lookup_contact',
      codePath: ['contacts', 'lookup'],
      description:
        'Finds a contact by name (similar names match), e-mail address or handle (github:alice-a, or a bare handle on any platform). Returns the best matches with their addresses, handles, organisation and current facts about them.',
      tier: 'read_only',
      input: z
        .object({
          name: z.string().min(1).max(200).optional(),
          address: z.string().min(3).max(320).optional(),
          handle: z.string().min(1).max(200).optional(),
        })
        .refine((value) => value.name !== undefined || value.address !== undefined || value.handle !== undefined, {
          error: 'give a name, an address or a handle',
        }),
      run: async ({ name, address, handle }) => {
        const matches = await findContacts(memory, { name, address, handle });
        const shown = [];
        for (const { contact, score, why } of matches.slice(0, 5)) {
          // Current facts only (a superseded one is left out by the store): the model should not repeat old news.
          const { facts } = await memory.stores.facts.list({ about: `contact:${contact.slug}` });
          shown.push({
            ...contactSummary(contact),
            score: Math.round(score * 100) / 100,
            why,
            facts: facts.slice(0, 10).map((fact) => factSummary(fact)),
          });
        }
        return { contacts: shown };
      },
    }),
    defineTool({
      name: 'add_task',
      codePath: ['tasks', 'add'],
      description:
        "Adds a task to the owner's own to-do list (tasks/), with an optional due date (YYYY-MM-DD) and who or what it is about. Not a queue task.",
      tier: 'soft',
      input: z.object({
        title: z.string().min(1).max(500),
        due: z
          .string()
          .regex(/^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2}))?$/, {
            error: 'a date as YYYY-MM-DD, or an ISO instant such as 2026-12-01T09:00:00Z',
          })
          .optional(),
        about: aboutSchema.optional(),
      }),
      run: async ({ title, due, about }) => {
        const task = await memory.stores.tasks.add({
          title,
          ...(due === undefined ? {} : { due }),
          ...(about === undefined ? {} : { about: await resolveAbout(memory, about) }),
          source: options.source,
          createdBy: options.createdBy ?? 'chat',
        });
        await refresh(memory, task.path);
        return taskSummary(task);
      },
    }),
    defineTool({
      name: 'list_tasks',
      codePath: ['tasks', 'list'],
      description:
        "Lists the owner's own tasks (follow-ups and to-dos under tasks/, not queue tasks): due overdue, today, this week or all; open by default.",
      tier: 'read_only',
      input: z.object({
        due: z.enum(['overdue', 'today', 'week', 'all']).default('all'),
        status: z.enum(['open', 'done', 'dropped']).default('open'),
      }),
      run: async ({ due, status }) => {
        const { tasks, problems } = await memory.stores.tasks.list({ status });
        const timeZone = options.timeZone ?? 'UTC';
        const nowMs = now();
        const today = dayIn(nowMs, timeZone);
        const chosen = tasksDue({ tasks, due, nowMs, timeZone });
        return {
          today,
          tasks: chosen.slice(0, 50).map(taskSummary),
          ...(chosen.length > 50 ? { more: chosen.length - 50 } : {}),
          ...(problems.length === 0 ? {} : { unreadable: problems.map((problem) => problem.path) }),
        };
      },
    }),
  ];
}

function whyMatched(parts: { lexical?: number; vector?: number; entity?: number }): string {
  const reasons = [
    parts.lexical === undefined ? undefined : 'words',
    parts.vector === undefined ? undefined : 'meaning',
    parts.entity === undefined ? undefined : 'a contact in common',
  ].filter((reason) => reason !== undefined);
  return reasons.length === 0 ? 'match' : reasons.join(', ');
}

/** `Alice Martin` → `contact:alice-martin` when a contact matches well, a `topic:` otherwise; prefixed ones as given. */
async function resolveAbout(memory: MemoryContext, about: readonly string[]): Promise<string[]> {
  const resolved: string[] = [];
  for (const entry of about) {
    const trimmed = entry.trim();
    if (/^(contact|topic):/.test(trimmed)) resolved.push(trimmed);
    else {
      const best = (await memory.stores.contacts.find({ name: trimmed }))[0];
      resolved.push(best && best.score >= 0.85 ? `contact:${best.contact.slug}` : `topic:${slugOf(trimmed)}`);
    }
  }
  return [...new Set(resolved)];
}

async function findContacts(
  memory: MemoryContext,
  query: { name: string | undefined; address: string | undefined; handle: string | undefined },
): Promise<Array<{ contact: Contact; score: number; why: string }>> {
  const contacts = memory.stores.contacts;
  if (query.handle !== undefined) {
    const [platform, value] = query.handle.includes(':')
      ? (query.handle.split(':', 2) as [string, string])
      : [undefined, query.handle];
    if (platform !== undefined) return contacts.find({ handle: { platform: platform.toLowerCase(), value } });
    // A bare handle: any platform the contacts have it on.
    const needle = value.replace(/^@/, '').toLowerCase();
    const { contacts: all } = await contacts.list();
    const matched = [];
    for (const contact of all) {
      const platformOf = Object.entries(contact.handles).find(([, handles]) =>
        handles.some((handle) => handle.toLowerCase() === needle),
      )?.[0];
      if (platformOf === undefined) continue;
      const primary = (await contacts.resolve(contact.slug)) ?? contact;
      matched.push({ contact: primary, score: 1, why: `handle ${platformOf}:${needle}` });
    }
    return dedupe(matched);
  }
  return contacts.find({
    ...(query.name === undefined ? {} : { name: query.name }),
    ...(query.address === undefined ? {} : { email: query.address }),
  });
}

function dedupe<T extends { contact: Contact }>(matches: T[]): T[] {
  const seen = new Set<string>();
  return matches.filter((match) => !seen.has(match.contact.slug) && seen.add(match.contact.slug) !== undefined);
}

function contactSummary(contact: Contact) {
  return {
    path: contact.path,
    slug: contact.slug,
    name: contact.name,
    ...(contact.aliases.length === 0 ? {} : { aliases: contact.aliases }),
    emails: contact.emails,
    handles: contact.handles,
    ...(contact.organisation === undefined ? {} : { organisation: contact.organisation }),
    ...(contact.relationships.length === 0 ? {} : { relationships: contact.relationships }),
  };
}

function factSummary(fact: Fact) {
  return { id: fact.id, statement: fact.statement, observed_at: fact.observed_at, trust: fact.trust, path: fact.path };
}

function taskSummary(task: OwnerTask) {
  return {
    id: task.id,
    path: task.path,
    title: task.title,
    ...(task.due === undefined ? {} : { due: task.due }),
    status: task.status,
    ...(task.about.length === 0 ? {} : { about: task.about }),
    created_by: task.created_by,
  };
}

async function refresh(memory: MemoryContext, notePath: string): Promise<void> {
  // The index would see the new note through its watcher a little later; a `recall` in the same turn must find it.
  const index = await memory.index();
  await index.refresh(notePath);
}

function slugOf(text: string): string {
  return (
    text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'general'
  );
}

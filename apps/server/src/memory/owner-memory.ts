import { AssistantError } from '@assistant/errors';
import type {
  Contact,
  ContactBook,
  Fact,
  FactStore,
  MemoryProblem,
  OwnerTask,
  OwnerTaskStore,
} from '@assistant/memory';

// What the owner's surfaces (CLI, REST, dashboard) use of @assistant/memory's stores, and the views the three
// surfaces share: one contact with everything known about them, and an owner's task by id (docs/memory.md).

/** The stores the owner's surfaces read and write: the parts of the real ones (memoryStores()) they call. */
export interface OwnerMemoryStores {
  contacts: Pick<ContactBook, 'list' | 'get' | 'merge' | 'unmerge'>;
  facts: Pick<FactStore, 'list' | 'add' | 'supersededBy'>;
  tasks: Pick<OwnerTaskStore, 'list' | 'get' | 'add' | 'update'>;
}

/** A fact with the id of the fact that replaced it, when one did. */
export interface FactView {
  fact: Fact;
  supersededBy?: string;
}

/** One contact with everything memory knows about them (`contacts show`, `GET /api/memory/contacts/:slug`). */
export interface ContactDetail {
  contact: Contact;
  /** The contact lookups resolve to, when this one was merged into another. */
  primary?: Contact;
  /** The contacts merged into this one (their notes are kept; `contacts unmerge` splits them again). */
  mergedFrom: Contact[];
  /** Facts about this contact or one merged into it, newest first, superseded ones included and marked. */
  facts: FactView[];
  /** Note paths of the items they appear in: their sources, those of contacts merged into them, and their facts'. */
  items: string[];
  problems: MemoryProblem[];
}

const slugPattern = /^[a-z0-9][a-z0-9-]{0,99}$/;

/** Refuses what cannot be a contact's slug before it reaches a path. */
export function checkContactSlug(slug: string): string {
  if (!slugPattern.test(slug)) {
    throw new AssistantError(
      'BAD_REQUEST',
      `\`${slug.slice(0, 60)}\` is not a contact slug (lower-case letters, digits and -, e.g. alice-martin)`,
    );
  }
  return slug;
}

/** The contact as written, or NOT_FOUND naming the slug. */
export async function contactNamed(stores: OwnerMemoryStores, slug: string): Promise<Contact> {
  const contact = await stores.contacts.get(checkContactSlug(slug));
  if (!contact) {
    throw new AssistantError('NOT_FOUND', `no contact \`${slug}\` (contacts/${slug}.md)`, {
      hint: '`assistant contacts ls` lists them',
    });
  }
  return contact;
}

export async function contactDetail(options: { stores: OwnerMemoryStores; slug: string }): Promise<ContactDetail> {
  const { stores } = options;
  const contact = await contactNamed(stores, options.slug);
  const primary = contact.merged_into === undefined ? undefined : await stores.contacts.get(contact.merged_into);
  const mergedFrom = (await Promise.all(contact.merged_from.map((slug) => stores.contacts.get(slug)))).filter(
    (found): found is Contact => found !== undefined,
  );
  const slugs = new Set([contact.slug, ...mergedFrom.map((merged) => merged.slug)]);
  const [{ facts, problems }, supersededBy] = await Promise.all([
    stores.facts.list({ includeSuperseded: true }),
    stores.facts.supersededBy(),
  ]);
  const about = facts
    .filter((fact) => fact.about.some((subject) => subject.startsWith('contact:') && slugs.has(subject.slice(8))))
    .sort((a, b) => b.observed_at.localeCompare(a.observed_at));
  const items = new Set<string>();
  for (const person of [contact, ...mergedFrom]) for (const source of person.sources) items.add(source);
  for (const fact of about) if (fact.source !== 'owner') items.add(fact.source);
  return {
    contact,
    ...(primary === undefined ? {} : { primary }),
    mergedFrom,
    facts: about.map((fact) => {
      const newer = supersededBy.get(fact.id);
      return newer === undefined ? { fact } : { fact, supersededBy: newer };
    }),
    items: [...items].sort(),
    problems,
  };
}

/** Which of the owner's tasks `tasks --due` and `?due=` list. */
/** `YYYY-MM-DD` (a day in the owner's time zone) or an ISO instant with a zone: what a task's `due` may be. */
export const duePattern = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?$/;

/** The due value checked, or BAD_REQUEST saying what would be valid. */
export function checkDue(due: string): string {
  if (!duePattern.test(due) || !Number.isFinite(Date.parse(due.length === 10 ? `${due}T00:00:00Z` : due))) {
    throw new AssistantError(
      'BAD_REQUEST',
      `due must be a day (2026-12-01) or an ISO instant with a zone (2026-12-01T09:00:00Z), got \`${due.slice(0, 40)}\``,
    );
  }
  return due;
}

/** The owner's task of an id, or NOT_FOUND. */
export async function ownerTaskNamed(stores: OwnerMemoryStores, id: string): Promise<OwnerTask> {
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$/.test(id)) {
    throw new AssistantError('BAD_REQUEST', `\`${id.slice(0, 60)}\` is not a task id (e.g. t-20261201-ab12)`);
  }
  const task = await stores.tasks.get(id);
  if (!task) {
    throw new AssistantError('NOT_FOUND', `no task \`${id}\` of yours (tasks/${id}.md)`, {
      hint: '`assistant tasks ls --due all` lists them; queue tasks are `assistant task show`',
    });
  }
  return task;
}

/**
 * What a fact or task is about, as the stores write it: `contact:<slug>` and `topic:<word>` are kept; a bare value is
 * a contact when one has that slug (`alice-martin`), a topic otherwise (`dentist`).
 */
export async function normaliseAbout(stores: OwnerMemoryStores, values: readonly string[]): Promise<string[]> {
  const about: string[] = [];
  for (const raw of values) {
    const value = raw.trim();
    if (value === '') continue;
    if (/^(contact|topic):\S/.test(value)) {
      about.push(value);
      continue;
    }
    const contact = slugPattern.test(value) ? await stores.contacts.get(value) : undefined;
    about.push(contact ? `contact:${contact.slug}` : `topic:${value.toLowerCase()}`);
  }
  return [...new Set(about)];
}

import type { Note, NoteStore } from '@assistant/notes';
import * as z from 'zod';
import { type Contact, type MemoryProblem, memoryFolders } from '../memory-types.ts';
import {
  firstNames,
  loneFirstName,
  nameSimilarity,
  normaliseEmail,
  normaliseHandle,
  organisationAgrees,
} from './contact-matching.ts';
import {
  baseName,
  checkName,
  invalidInput,
  isAlreadyThere,
  isSafeName,
  notFound,
  parseData,
  readFolder,
  readOne,
  slugify,
} from './memory-notes.ts';

/** What `ContactBook.find` looks for: any of a name, an address, a handle on a platform. */
export interface ContactQuery {
  name?: string;
  email?: string;
  handle?: { platform: string; value: string };
  /** Helps name matching: an organisation or a mail domain the person is known by. */
  organisation?: string;
}

export interface ContactMatch {
  /** The primary contact (a merged one is resolved to the contact it was merged into). */
  contact: Contact;
  /** 0..1; 1 for an exact address or handle. */
  score: number;
  /** Why it matched, for logs and `--explain` (`email alice@acme.example`, `name 0.93 + organisation`). */
  why: string;
}

export interface NewContact {
  name: string;
  emails?: string[];
  handles?: Record<string, string[]>;
  organisation?: string;
  /** The note path of the item the contact came from. */
  source?: string;
}

export interface ObservedIdentifier {
  kind: 'email' | 'handle' | 'name';
  value: string;
  platform?: string;
}

export interface ContactBook {
  list(): Promise<{ contacts: Contact[]; problems: MemoryProblem[] }>;
  /** The contact note as written (a merged one is returned as it is, `merged_into` set). */
  get(slug: string): Promise<Contact | undefined>;
  /** Follows `merged_into` to the primary contact. */
  resolve(slug: string): Promise<Contact | undefined>;
  /** Best first. Exact address or handle (also `observed`) = 1; else name similarity, helped by organisation/domain. */
  find(query: ContactQuery): Promise<ContactMatch[]>;
  create(contact: NewContact, options: { by: 'owner' | 'extraction' }): Promise<Contact>;
  /** Adds to `observed` and `sources` only (deduplicated): never an identity field. */
  observe(options: { slug: string; observed: ObservedIdentifier[]; source: string }): Promise<Contact>;
  /** Reversible: `from.merged_into = into`, `into.merged_from += from`; nothing else changes. */
  merge(options: { into: string; from: string }): Promise<{ into: Contact; from: Contact }>;
  /** Removes exactly the links `merge` added, so both notes are byte for byte as before. */
  unmerge(options: { slug: string }): Promise<{ into: Contact; from: Contact }>;
}

const stringList = z.array(z.string());
const contactSchema = z.looseObject({
  name: z.string().trim().min(1),
  aliases: stringList.nullish(),
  emails: stringList.nullish(),
  // A hand-written `github: alice-a` (one handle, not a list) is read as a list of one.
  handles: z.record(z.string(), z.union([z.string(), stringList])).nullish(),
  organisation: z.string().nullish(),
  relationships: z.array(z.object({ contact: z.string(), kind: z.string() })).nullish(),
  observed: z
    .array(
      z.object({
        kind: z.enum(['email', 'handle', 'name']),
        value: z.string(),
        platform: z.string().optional(),
        source: z.string(),
      }),
    )
    .nullish(),
  sources: stringList.nullish(),
  // A contact the owner wrote by hand has no `created_by`: it is the owner's.
  created_by: z.enum(['owner', 'extraction']).nullish(),
  merged_into: z.string().nullish(),
  merged_from: stringList.nullish(),
});

function contactPath(slug: string): string {
  return `${memoryFolders.contacts}/${slug}.md`;
}

/** A contact note as the Contact shape; throws (naming the field) when it does not fit. */
function parseContact(note: Note): Contact {
  const data = parseData(contactSchema, note);
  const handles: Record<string, string[]> = {};
  for (const [platform, value] of Object.entries(data.handles ?? {})) {
    handles[platform.toLowerCase()] = typeof value === 'string' ? [value] : value;
  }
  return {
    path: note.path,
    slug: baseName(note.path),
    name: data.name,
    aliases: data.aliases ?? [],
    emails: data.emails ?? [],
    handles,
    ...(data.organisation ? { organisation: data.organisation } : {}),
    relationships: data.relationships ?? [],
    observed: (data.observed ?? []).map((entry) => ({
      kind: entry.kind,
      value: entry.value,
      ...(entry.platform === undefined ? {} : { platform: entry.platform }),
      source: entry.source,
    })),
    sources: data.sources ?? [],
    created_by: data.created_by ?? 'owner',
    ...(data.merged_into ? { merged_into: data.merged_into } : {}),
    merged_from: data.merged_from ?? [],
    body: note.body,
  };
}

/** How sure a name-only match must be to be returned at all; callers pick their own bar above it. */
const minimumNameScore = 0.6;
/** A lone first name that only one contact has (`Lena` for `Lena Fischer`) scores as an initial does. */
const uniqueFirstNameScore = 0.9;

/**
 * Contacts under `contacts/`. Identity fields (name, aliases, emails, handles, organisation) are written only at
 * creation and by the owner; extraction adds to `observed` and `sources`; a merge adds only the two link fields.
 */
export function contactBook(options: { notes: NoteStore }): ContactBook {
  const { notes } = options;
  const get = async (slug: string) =>
    isSafeName(slug) ? readOne({ notes, path: contactPath(slug), parse: parseContact }) : undefined;
  const list = async () => {
    const { items, problems } = await readFolder({ notes, folder: memoryFolders.contacts, parse: parseContact });
    return { contacts: items, problems };
  };

  async function resolve(slug: string): Promise<Contact | undefined> {
    let contact = await get(slug);
    const seen = new Set<string>();
    // A chain (a merged into b, b into c) ends at c; a loop someone wrote by hand ends where it repeats.
    while (contact?.merged_into && !seen.has(contact.slug)) {
      seen.add(contact.slug);
      const next = await get(contact.merged_into);
      if (!next) break;
      contact = next;
    }
    return contact;
  }

  async function find(query: ContactQuery): Promise<ContactMatch[]> {
    const { contacts } = await list();
    const bySlug = new Map(contacts.map((contact) => [contact.slug, contact]));
    const primary = (contact: Contact): Contact => {
      let current = contact;
      const seen = new Set<string>();
      while (current.merged_into && !seen.has(current.slug)) {
        seen.add(current.slug);
        const next = bySlug.get(current.merged_into);
        if (!next) break;
        current = next;
      }
      return current;
    };
    const email = query.email ? normaliseEmail(query.email) : undefined;
    const handle = query.handle
      ? { platform: query.handle.platform.toLowerCase(), value: normaliseHandle(query.handle.value) }
      : undefined;
    const firstNameCounts = new Map<string, number>();
    for (const contact of contacts) {
      if (contact.merged_into) continue;
      const merged = contacts.filter((other) => other.merged_into === contact.slug);
      for (const token of new Set([contact, ...merged].flatMap(firstNames))) {
        firstNameCounts.set(token, (firstNameCounts.get(token) ?? 0) + 1);
      }
    }
    const best = new Map<string, ContactMatch>();
    const offer = (contact: Contact, score: number, why: string) => {
      const target = primary(contact);
      const known = best.get(target.slug);
      if (!known || known.score < score) {
        best.set(target.slug, {
          contact: target,
          score,
          why: target === contact ? why : `${why} (via ${contact.slug}, merged)`,
        });
      }
    };
    for (const contact of contacts) {
      if (email) {
        if (contact.emails.some((known) => normaliseEmail(known) === email)) offer(contact, 1, `email ${email}`);
        else if (contact.observed.some((seen) => seen.kind === 'email' && normaliseEmail(seen.value) === email)) {
          offer(contact, 1, `observed email ${email}`);
        }
      }
      if (handle) {
        const label = `${handle.platform} handle ${handle.value}`;
        if ((contact.handles[handle.platform] ?? []).some((known) => normaliseHandle(known) === handle.value)) {
          offer(contact, 1, label);
        } else if (
          contact.observed.some(
            (seen) =>
              seen.kind === 'handle' &&
              seen.platform?.toLowerCase() === handle.platform &&
              normaliseHandle(seen.value) === handle.value,
          )
        ) {
          offer(contact, 1, `observed ${label}`);
        }
      }
      if (query.name) {
        const names = [
          contact.name,
          ...contact.aliases,
          ...contact.observed.filter((seen) => seen.kind === 'name').map((seen) => seen.value),
        ];
        let score = Math.max(0, ...names.map((name) => nameSimilarity(query.name ?? '', name)));
        let why = `name ${score.toFixed(2)}`;
        // `Lena` alone for `Lena Fischer` (or the other way round) is as good as an initial when no other contact
        // has that first name; with two Alices it stays a weak hint.
        const firstName = names.map((name) => loneFirstName(query.name ?? '', name)).find(Boolean);
        if (firstName && score < uniqueFirstNameScore && (firstNameCounts.get(firstName) ?? 0) === 1) {
          score = uniqueFirstNameScore;
          why = `the only contact named ${firstName}`;
        }
        if (score < minimumNameScore) continue;
        const agreement = organisationAgrees({
          query: { organisation: query.organisation, email: query.email },
          contact,
        });
        // The same name at the same organisation (or mail domain) is likelier the same person; at another one, less.
        if (agreement === true) {
          score = Math.min(0.99, score + 0.05);
          why += ' + organisation';
        } else if (agreement === false) {
          score -= 0.1;
          why += ' − other organisation';
        }
        if (score >= minimumNameScore) offer(contact, Math.min(score, 0.99), why);
      }
    }
    return [...best.values()].sort(
      (left, right) => right.score - left.score || left.contact.slug.localeCompare(right.contact.slug),
    );
  }

  async function create(contact: NewContact, by: { by: 'owner' | 'extraction' }): Promise<Contact> {
    const name = contact.name.trim();
    if (!name) throw invalidInput(`Expected \`name\` to be a person's name, got ${JSON.stringify(contact.name)}`);
    const emails = [...new Set((contact.emails ?? []).map(normaliseEmail).filter(Boolean))];
    const handles: Record<string, string[]> = {};
    for (const [platform, values] of Object.entries(contact.handles ?? {})) {
      const cleaned = [...new Set(values.map(normaliseHandle).filter(Boolean))];
      if (cleaned.length > 0) handles[platform.toLowerCase()] = cleaned;
    }
    const data: Record<string, unknown> = {
      name,
      aliases: [],
      emails,
      handles,
      ...(contact.organisation?.trim() ? { organisation: contact.organisation.trim() } : {}),
      relationships: [],
      observed: [],
      sources: contact.source ? [contact.source] : [],
      created_by: by.by,
    };
    const base = slugify(name, 'contact');
    // The slug is the first free one: `alice-martin`, `alice-martin-2`, … `create` is exclusive, so two writers
    // racing for the same name get two notes, never one overwritten.
    for (let attempt = 1; ; attempt += 1) {
      const slug = attempt === 1 ? base : `${base}-${attempt}`;
      try {
        const note = await notes.create(contactPath(slug), { data, body: '' });
        return parseContact(note);
      } catch (error) {
        if (!isAlreadyThere(error) || attempt >= 1000) throw error;
      }
    }
  }

  async function observe(observation: {
    slug: string;
    observed: ObservedIdentifier[];
    source: string;
  }): Promise<Contact> {
    const path = contactPath(checkName(observation.slug, 'slug'));
    const before = await get(observation.slug);
    if (!before) throw notFound(`No contact \`${observation.slug}\` (${path})`);
    const note = await notes.update(path, {
      // Decided under the note's lock from what is on disk, so an edit the owner saved a moment ago is kept.
      change: (current) => {
        const contact = parseContact(current);
        const observed = [...contact.observed];
        const key = (entry: { kind: string; value: string; platform?: string | undefined }) =>
          `${entry.kind}\u0000${entry.platform?.toLowerCase() ?? ''}\u0000${entry.value.toLowerCase()}`;
        const seen = new Set(observed.map(key));
        // What the owner already wrote as identity is not news.
        for (const email of contact.emails) seen.add(key({ kind: 'email', value: normaliseEmail(email) }));
        for (const [platform, values] of Object.entries(contact.handles)) {
          for (const value of values) seen.add(key({ kind: 'handle', value: normaliseHandle(value), platform }));
        }
        for (const name of [contact.name, ...contact.aliases]) seen.add(key({ kind: 'name', value: name }));
        let changed = false;
        for (const entry of observation.observed) {
          const value =
            entry.kind === 'email'
              ? normaliseEmail(entry.value)
              : entry.kind === 'handle'
                ? normaliseHandle(entry.value)
                : entry.value.trim();
          if (!value) continue;
          const platform = entry.platform?.toLowerCase();
          const candidate = { kind: entry.kind, value, ...(platform ? { platform } : {}), source: observation.source };
          if (seen.has(key(candidate))) continue;
          seen.add(key(candidate));
          observed.push(candidate);
          changed = true;
        }
        const set: Record<string, unknown> = {};
        if (changed) set.observed = observed;
        if (!contact.sources.includes(observation.source)) set.sources = [...contact.sources, observation.source];
        return { set };
      },
    });
    return parseContact(note);
  }

  async function merge(link: { into: string; from: string }): Promise<{ into: Contact; from: Contact }> {
    checkName(link.into, 'into');
    checkName(link.from, 'from');
    if (link.into === link.from) {
      throw invalidInput(`Cannot merge contact \`${link.from}\` into itself: \`into\` and \`from\` must differ`);
    }
    const into = await get(link.into);
    const from = await get(link.from);
    if (!into) throw notFound(`No contact \`${link.into}\` (${contactPath(link.into)}) to merge into`);
    if (!from) throw notFound(`No contact \`${link.from}\` (${contactPath(link.from)}) to merge`);
    if (from.merged_into) {
      throw invalidInput(`Contact \`${from.slug}\` is already merged into \`${from.merged_into}\`; unmerge it first`);
    }
    if (into.merged_into) {
      throw invalidInput(
        `Contact \`${into.slug}\` is itself merged into \`${into.merged_into}\`; merge into that one instead`,
      );
    }
    // Only the two links are written, each a key of its own, so unmerge can take exactly them out again and both
    // notes (their histories, the owner's formatting) are as they were.
    const fromNote = await notes.update(from.path, { set: { merged_into: into.slug } });
    const intoNote = await notes.update(into.path, {
      change: (current) => {
        const mergedFrom = parseContact(current).merged_from;
        return mergedFrom.includes(from.slug) ? {} : { set: { merged_from: [...mergedFrom, from.slug] } };
      },
    });
    return { into: parseContact(intoNote), from: parseContact(fromNote) };
  }

  async function unmerge(target: { slug: string }): Promise<{ into: Contact; from: Contact }> {
    const from = await get(checkName(target.slug, 'slug'));
    if (!from) throw notFound(`No contact \`${target.slug}\` (${contactPath(target.slug)})`);
    if (!from.merged_into) {
      throw invalidInput(`Contact \`${from.slug}\` is not merged into another contact (it has no \`merged_into\`)`);
    }
    const intoSlug = from.merged_into;
    const into = await get(intoSlug);
    const fromNote = await notes.update(from.path, { set: { merged_into: undefined } });
    if (!into) {
      // The primary was removed by hand: the link on this side is all there is to take out.
      throw notFound(
        `Contact \`${from.slug}\` was unlinked, but the contact it was merged into, \`${intoSlug}\`, is gone`,
      );
    }
    const intoNote = await notes.update(into.path, {
      change: (current) => {
        const rest = parseContact(current).merged_from.filter((slug) => slug !== from.slug);
        // The key was added by the merge when the list was empty: an empty list goes, so the note is as before.
        return { set: { merged_from: rest.length > 0 ? rest : undefined } };
      },
    });
    return { into: parseContact(intoNote), from: parseContact(fromNote) };
  }

  return { list, get, resolve, find, create: (contact, by) => create(contact, by), observe, merge, unmerge };
}

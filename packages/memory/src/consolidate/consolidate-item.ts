import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type ChatModel, Conversation, fenceUntrusted } from '@assistant/llm';
import { withFileLock } from '@assistant/notes';
import * as z from 'zod';
import type { Contact, Fact } from '../memory-types.ts';
import type { ContactQuery, ObservedIdentifier } from '../stores/contact-book.ts';
import { normaliseEmail, normaliseHandle } from '../stores/contact-matching.ts';
import { extractedFactId } from '../stores/fact-store.ts';
import { checkDue, slugify } from '../stores/memory-notes.ts';
import type { MemoryStores } from '../stores/memory-stores.ts';
import { extractedTaskId } from '../stores/owner-task-store.ts';
import type { ConsolidationItem, ItemPerson } from './consolidation-item.ts';
import { relatedFacts } from './related-facts.ts';

export interface ConsolidateItemOptions {
  stores: MemoryStores;
  model: ChatModel;
  item: ConsolidationItem;
  /** The data directory: markers go under `<dataDir>/memory/consolidated/`. */
  dataDir: string;
  signal?: AbortSignal;
  /** For tests. @default Date.now() */
  nowMs?: number;
  /**
   * The owner's own addresses and handles (`me@example.org`, `github:jreyes`): never made or observed as a contact,
   * whoever names them. @default []
   */
  ownerIdentities?: readonly string[];
}

export interface ConsolidateItemResult {
  /** Why nothing was done (`already consolidated`). */
  skipped?: string;
  contacts: { created: string[]; observed: string[] };
  /** `superseded`: ids of older facts a new one now supersedes; `refused`: owner facts it asked to and may not. */
  facts: { created: string[]; superseded: string[]; refused: string[] };
  tasks: { created: string[] };
}

/** What the model is asked for: small, flat, every field a model can manage. */
const consolidationSchema = z.object({
  people: z
    .array(
      z.object({
        name: z.string(),
        email: z.string().nullish(),
        handle: z.string().nullish(),
        platform: z.string().nullish(),
        organisation: z.string().nullish(),
      }),
    )
    .describe('People the text mentions or who wrote it'),
  facts: z
    .array(
      z.object({
        statement: z.string().describe('One self-contained sentence worth remembering'),
        about: z.array(z.string()).describe('Names of the people it is about, or a topic word'),
        supersedes: z.array(z.string()).nullish().describe('Ids of known facts this one replaces'),
        confidence: z.number().min(0).max(1),
      }),
    )
    .describe('Durable facts about people or the owner’s life; not greetings or small talk'),
  followups: z
    .array(
      z.object({
        title: z.string().describe('What the owner has to do'),
        due: z.string().nullish().describe('YYYY-MM-DD when a date is given'),
        about: z.string().nullish().describe('The person it concerns'),
      }),
    )
    .describe('Things the owner promised or was asked to do'),
});
export type ConsolidationAnswer = z.infer<typeof consolidationSchema>;

/** A known contact is taken for the person mentioned from this score up (an exact address or handle is 1). */
const matchScore = 0.9;
/** At most this many known facts are shown to the model: the newest about the item's people, then related ones. */
const maxKnownFacts = 40;
/** Of which at least this many are kept for facts found by the words they share with the item. */
const maxRelatedFacts = 20;

function markersDir(dataDir: string): string {
  return path.join(dataDir, 'memory', 'consolidated');
}

/** One marker per item source (rewritten for each new version), named by a hash of the source. */
function markerPath(dataDir: string, source: string): string {
  const name = createHash('sha256').update(source).digest('hex').slice(0, 32);
  return path.join(markersDir(dataDir), `${name}.json`);
}

/** A marker's temporary file this old was left by a crash between its write and its rename. */
const staleTemporaryMs = 60 * 60_000;

/**
 * Housekeeping of `<dataDir>/memory/consolidated/`: removes the markers whose item note no longer exists (the note of
 * a chat message's source is its conversation), markers that are unreadable or name no source (consolidation treats
 * them as absent anyway), and temporary files a crash left over an hour ago. A marker of an existing note is never
 * removed, whatever version it records: that would consolidate the item again. There is one marker per source, so
 * an older version's marker is already gone (overwritten). Runs under consolidation's lock, so it never races a
 * marker being written; with no notes listed at all (a notes folder not mounted) it removes nothing.
 */
export async function pruneConsolidationMarkers(options: {
  dataDir: string;
  notes: { list(): Promise<string[]> };
  /** For tests. @default Date.now() */
  nowMs?: number;
}): Promise<{ removed: number; kept: number }> {
  const folder = markersDir(options.dataDir);
  const names = await readdir(folder).catch((error: unknown) => {
    if ((error as { code?: unknown }).code === 'ENOENT') return undefined;
    throw error;
  });
  if (names === undefined || names.length === 0) return { removed: 0, kept: 0 };
  const nowMs = options.nowMs ?? Date.now();
  return withFileLock(path.join(options.dataDir, 'memory', 'consolidate'), async () => {
    // Listed under the lock: a marker is written under it too, after its note exists, so every marker read here has
    // its note in the list unless the note is really gone.
    const existing = new Set(await options.notes.list());
    if (existing.size === 0) return { removed: 0, kept: names.length };
    let removed = 0;
    let kept = 0;
    for (const name of names) {
      const file = path.join(folder, name);
      if (name.endsWith('.tmp')) {
        const info = await stat(file).catch(() => undefined);
        if (info && nowMs - info.mtimeMs > staleTemporaryMs) {
          await rm(file, { force: true });
          removed += 1;
        } else kept += 1;
        continue;
      }
      if (!name.endsWith('.json')) {
        kept += 1;
        continue;
      }
      const source = await markerSource(file);
      if (source === null) continue; // gone meanwhile
      if (source !== undefined && existing.has(source.split('#')[0] ?? source)) {
        kept += 1;
        continue;
      }
      await rm(file, { force: true });
      removed += 1;
    }
    return { removed, kept };
  });
}

/** The source a marker records; undefined when it is unreadable or names none; null when the file is gone. */
async function markerSource(file: string): Promise<string | undefined | null> {
  try {
    const parsed = z.object({ source: z.string().min(1) }).safeParse(JSON.parse(await readFile(file, 'utf8')));
    return parsed.success ? parsed.data.source : undefined;
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return null;
    if (error instanceof SyntaxError) return undefined;
    throw error;
  }
}

async function consolidatedVersion(file: string): Promise<string | undefined> {
  try {
    const parsed = z.object({ version: z.string() }).safeParse(JSON.parse(await readFile(file, 'utf8')));
    return parsed.success ? parsed.data.version : undefined;
  } catch (error) {
    // A marker cut short or hand-damaged only costs one more consolidation, which is idempotent anyway.
    if ((error as { code?: unknown }).code === 'ENOENT' || error instanceof SyntaxError) return undefined;
    throw error;
  }
}

async function writeMarker(file: string, record: Record<string, unknown>): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  await writeFile(temporary, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  await rename(temporary, file);
}

function queryFor(person: ItemPerson & { organisation?: string | undefined }): ContactQuery {
  return {
    ...(person.name ? { name: person.name } : {}),
    ...(person.email ? { email: person.email } : {}),
    ...(person.handle ? { handle: person.handle } : {}),
    ...(person.organisation ? { organisation: person.organisation } : {}),
  };
}

function identifiersOf(person: ItemPerson): ObservedIdentifier[] {
  const identifiers: ObservedIdentifier[] = [];
  if (person.email) identifiers.push({ kind: 'email', value: person.email });
  if (person.handle) identifiers.push({ kind: 'handle', value: person.handle.value, platform: person.handle.platform });
  if (person.name) identifiers.push({ kind: 'name', value: person.name });
  return identifiers;
}

/** A name for someone known only by an address or handle: `alice.martin@acme.example` → `alice.martin`. */
function fallbackName(person: ItemPerson): string | undefined {
  return person.name?.trim() || person.email?.split('@')[0] || person.handle?.value || undefined;
}

type Person = ItemPerson & { organisation?: string | undefined };

function withoutAutomated(person: ItemPerson): ItemPerson {
  const { automated: _automated, ...rest } = person;
  return rest;
}

/**
 * Whether the person is the owner: one of their addresses, or a handle written `platform:handle`
 * (`memory.owner_identities` and the mail accounts' logins, docs/memory.md). Case does not matter.
 */
function isOwnerIdentity(person: ItemPerson, identities: readonly string[]): boolean {
  for (const identity of identities) {
    const value = identity.trim().toLowerCase();
    if (value.includes('@')) {
      if (person.email !== undefined && normaliseEmail(person.email) === normaliseEmail(value)) return true;
      continue;
    }
    const separator = value.indexOf(':');
    if (separator <= 0 || person.handle === undefined) continue;
    if (
      person.handle.platform.toLowerCase() === value.slice(0, separator) &&
      normaliseHandle(person.handle.value) === normaliseHandle(value.slice(separator + 1))
    ) {
      return true;
    }
  }
  return false;
}

/**
 * The item's own people first (their identifiers are facts of the item), each completed with what the model said
 * about the same person (same address, handle or name: an organisation, a name the From line lacked); then the
 * other people the model found. So a new contact is created once, with everything the item says about them.
 */
function combinePeople(own: readonly ItemPerson[], mentioned: readonly Person[]): Person[] {
  const rest = [...mentioned];
  const same = (left: Person, right: Person) =>
    (left.email !== undefined && left.email === right.email) ||
    (left.handle !== undefined &&
      left.handle.platform === right.handle?.platform &&
      left.handle.value === right.handle.value) ||
    (left.name !== undefined && left.name.trim().toLowerCase() === right.name?.trim().toLowerCase());
  const combined: Person[] = own.flatMap((person) => {
    const index = rest.findIndex((other) => same(person, other));
    // A no-reply sender, a newsletter, a bot: a contact only when the model names it as a person.
    if (index === -1) return person.automated ? [] : [withoutAutomated(person)];
    const [other] = rest.splice(index, 1);
    return [
      {
        ...other,
        ...withoutAutomated(person),
        ...(person.name ? {} : other?.name ? { name: other.name } : {}),
        ...(other?.organisation ? { organisation: other.organisation } : {}),
      },
    ];
  });
  return [...combined, ...rest];
}

/**
 * Consolidates one item into memory: ONE structured LLM call over the fenced item (and the known facts about its
 * people, fenced too: their text came from outside) extracts people, facts and follow-ups, which are applied through
 * the stores: known people are only observed (a hand edit always wins), unknown ones created; facts get ids from
 * their source and statement (the same item read again writes nothing new) and never supersede an owner fact;
 * follow-ups become tasks created by extraction. A marker per source under `<dataDir>/memory/consolidated/` records
 * the version done, so the same version is skipped and a new one is read again.
 *
 * An answer outside the schema throws LlmOutputError; an outage throws the llm package's error: neither writes the
 * marker, so the task fails visibly or is retried.
 */
export async function consolidateItem(options: ConsolidateItemOptions): Promise<ConsolidateItemResult> {
  const { stores, model, item, signal } = options;
  const result: ConsolidateItemResult = {
    contacts: { created: [], observed: [] },
    facts: { created: [], superseded: [], refused: [] },
    tasks: { created: [] },
  };
  const ownerIdentities = options.ownerIdentities ?? [];
  const notOwner = (person: ItemPerson) => !isOwnerIdentity(person, ownerIdentities);
  const itemPeople = item.people.filter(notOwner);
  const marker = markerPath(options.dataDir, item.source);
  if ((await consolidatedVersion(marker)) === item.version) return { ...result, skipped: 'already consolidated' };
  signal?.throwIfAborted();

  // The people the item names for certain (From, author), matched before the call so their known facts go in it.
  const known = new Map<string, Contact>();
  for (const person of itemPeople) {
    const match = (await stores.contacts.find(queryFor(person)))[0];
    if (match && match.score >= matchScore) known.set(match.contact.slug, match.contact);
  }
  const knownFacts: Fact[] = [];
  for (const slug of known.keys()) {
    const { facts } = await stores.facts.list({ about: `contact:${slug}` });
    for (const fact of facts) if (!knownFacts.some((other) => other.id === fact.id)) knownFacts.push(fact);
  }
  knownFacts.sort((left, right) => right.observed_at.localeCompare(left.observed_at));
  const shownFacts = knownFacts.slice(0, maxKnownFacts - maxRelatedFacts);
  // Facts about a topic (the dentist) or a person the headers do not name are found by the words they share with
  // the item; without them the model could not say that a moved appointment supersedes the old one.
  const { facts: current } = await stores.facts.list();
  const shown = new Set(shownFacts.map((fact) => fact.id));
  for (const fact of relatedFacts({
    text: Object.values(item.fields).join('\n'),
    facts: current.filter((fact) => !shown.has(fact.id)),
    limit: maxKnownFacts - shownFacts.length,
  })) {
    shownFacts.push(fact);
  }

  const fenced = fenceUntrusted(
    {
      ...item.fields,
      ...(shownFacts.length > 0
        ? { known_facts: shownFacts.map((fact) => `[${fact.id}] ${fact.statement}`).join('\n') }
        : {}),
    },
    { maxCharsByField: { body: 8_000, comments: 6_000, known_facts: 6_000 } },
  );
  const system =
    'You keep the memory of a personal assistant: from one item (a mail, a GitHub thread, a chat message) you ' +
    'extract the people it mentions, durable facts worth remembering about them or the owner, and follow-ups the ' +
    'owner has to do. Use only what the item says. A fact that replaces a known fact (a moved appointment, a new ' +
    'address) names the known fact id in `supersedes`. Empty lists are fine. ' +
    fenced.instruction;
  const prompt =
    `Extract memory from this ${item.kind} item, written ${item.observedAt}.` +
    (shownFacts.length > 0 ? ' `known_facts` lists what is already remembered about its people, with ids.' : '') +
    `\n\n${fenced.text}`;
  const answer = await new Conversation(model, { system }).structured(consolidationSchema, prompt, {
    name: 'memory',
    ...(signal ? { signal } : {}),
  });

  // Applied under one lock per data directory: two workers consolidating items about the same new person at once
  // would otherwise both miss the other's contact and create two. The model call above runs outside it.
  await mkdir(path.join(options.dataDir, 'memory'), { recursive: true, mode: 0o700 });
  return withFileLock(path.join(options.dataDir, 'memory', 'consolidate'), async () => {
    // Another worker may have done this version while the model was answering.
    if ((await consolidatedVersion(marker)) === item.version) return { ...result, skipped: 'already consolidated' };
    // People: the item's own first (their identifiers are facts of the item), then the ones the model found.
    const slugByName = new Map<string, string>();
    const remember = (name: string | undefined, slug: string) => {
      if (name) slugByName.set(name.trim().toLowerCase(), slug);
    };
    const mentioned = answer.people.flatMap((person) => {
      const platform = person.platform?.trim().toLowerCase() || (item.kind === 'github' ? 'github' : undefined);
      const found: Person = {
        name: person.name,
        ...(person.email?.includes('@') ? { email: normaliseEmail(person.email) } : {}),
        ...(person.handle && platform ? { handle: { platform, value: normaliseHandle(person.handle) } } : {}),
        organisation: person.organisation ?? undefined,
      };
      // The owner is never a contact of their own, even when the model lists them.
      return notOwner(found) ? [found] : [];
    });
    const people = combinePeople(itemPeople, mentioned);
    for (const person of people) {
      signal?.throwIfAborted();
      const match = (await stores.contacts.find(queryFor(person)))[0];
      if (match && match.score >= matchScore) {
        // Known: a hand edit always wins, so only what was seen and where is added.
        await stores.contacts.observe({
          slug: match.contact.slug,
          observed: identifiersOf(person),
          source: item.source,
        });
        if (
          !result.contacts.observed.includes(match.contact.slug) &&
          !result.contacts.created.includes(match.contact.slug)
        ) {
          result.contacts.observed.push(match.contact.slug);
        }
        remember(person.name, match.contact.slug);
        remember(match.contact.name, match.contact.slug);
        continue;
      }
      const name = fallbackName(person);
      if (!name) continue;
      const created = await stores.contacts.create(
        {
          name,
          ...(person.email ? { emails: [person.email] } : {}),
          ...(person.handle ? { handles: { [person.handle.platform]: [person.handle.value] } } : {}),
          ...(person.organisation ? { organisation: person.organisation } : {}),
          source: item.source,
        },
        { by: 'extraction' },
      );
      result.contacts.created.push(created.slug);
      remember(person.name, created.slug);
      remember(name, created.slug);
    }

    const aboutOf = (entry: string): string | undefined => {
      const trimmed = entry.trim();
      if (!trimmed) return undefined;
      if (/^(contact|topic):/.test(trimmed)) return trimmed;
      const slug = slugByName.get(trimmed.toLowerCase());
      return slug ? `contact:${slug}` : `topic:${slugify(trimmed, 'misc')}`;
    };

    for (const fact of answer.facts) {
      signal?.throwIfAborted();
      const statement = fact.statement.trim();
      if (!statement) continue;
      const supersedes: string[] = [];
      for (const id of new Set(fact.supersedes ?? [])) {
        const old = await stores.facts.get(id);
        // An id the model made up names nothing: dropped. An owner fact is never superseded by extracted text.
        if (!old || old.id === extractedFactId({ source: item.source, statement })) continue;
        if (old.trust === 'owner') {
          if (!result.facts.refused.includes(id)) result.facts.refused.push(id);
          continue;
        }
        supersedes.push(id);
      }
      const id = extractedFactId({ source: item.source, statement });
      const existed = (await stores.facts.get(id)) !== undefined;
      const written = await stores.facts.add({
        statement,
        about: [...new Set(fact.about.map(aboutOf).filter((entry): entry is string => entry !== undefined))],
        source: item.source,
        trust: 'extracted',
        observedAt: item.observedAt,
        confidence: fact.confidence,
        supersedes,
      });
      if (!existed) {
        result.facts.created.push(written.id);
        for (const old of written.supersedes)
          if (!result.facts.superseded.includes(old)) result.facts.superseded.push(old);
      }
    }

    for (const followup of answer.followups) {
      signal?.throwIfAborted();
      const title = followup.title.trim();
      if (!title) continue;
      let due: string | undefined;
      try {
        due = followup.due ? checkDue(followup.due) : undefined;
      } catch {
        // A date the model wrote badly ("next Monday") is left out rather than failing the item: the task still counts.
        due = undefined;
      }
      const about = followup.about ? aboutOf(followup.about) : undefined;
      const id = extractedTaskId({ source: item.source, title: title.replace(/\s+/g, ' ') });
      const existed = (await stores.tasks.get(id)) !== undefined;
      await stores.tasks.add({
        title,
        ...(due ? { due } : {}),
        ...(about ? { about: [about] } : {}),
        source: item.source,
        createdBy: 'extraction',
      });
      if (!existed) result.tasks.created.push(id);
    }

    await writeMarker(marker, {
      source: item.source,
      version: item.version,
      at: new Date(options.nowMs ?? Date.now()).toISOString(),
    });
    return result;
  });
}

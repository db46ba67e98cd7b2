// The memory evaluation (issue 35, "Proof and measure"): every item of the evaluation set goes through the real
// consolidation (`consolidateItem`) with a scripted model — a loopback OpenAI-compatible server that answers each
// item's recorded answer — then a MemoryIndex over the resulting notes answers the recall queries. It measures:
// - retrieval recall@5 of the gold facts, with the hashing embedder and with a fake embeddings server;
// - how often a superseded fact ranks above its replacement;
// - contact dedupe precision, recall and F1 over pairs of person mentions;
// - whether an untrusted item managed to supersede an owner fact (the injection items try).
// Used by tests/memory-eval.test.ts (which asserts the goals) and bench/memory-eval.ts (which prints the figures).
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { type ChatModel, createOpenAiChatModel } from '@assistant/llm';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import {
  type ConsolidationItem,
  type Contact,
  chatMessageItem,
  consolidateItem,
  type Embedder,
  HashingEmbedder,
  itemForConsolidation,
  MemoryIndex,
  memoryStores,
  OpenAiEmbedder,
} from '@assistant/memory';
import { FileNoteStore, type FrontmatterData } from '@assistant/notes';
import { type EvalItem, type EvalSet, loadEvalSet } from './eval-set.ts';
import { startFakeEmbeddingsServer } from './fake-embeddings-server.ts';

type Stores = ReturnType<typeof memoryStores>;

/** A person mention of a scripted answer, with the contact consolidation filed it under. */
interface Mention {
  item: string;
  name: string;
  gold: string;
  /** The contact's slug after following merges; undefined when no contact took the mention. */
  slug: string | undefined;
}

interface DedupeFigures {
  mentions: number;
  /** Pairs of mentions that belong to one person (gold). */
  goldPairs: number;
  /** Pairs of mentions filed under one contact. */
  predictedPairs: number;
  truePairs: number;
  precision: number;
  recall: number;
  f1: number;
  /** Contacts (primary, not merged) after the run, and gold people mentioned. */
  contacts: number;
  people: number;
  /** Where the clustering went wrong: the gold people split over several contacts, the contacts mixing people. */
  split: Array<{ gold: string; contacts: string[] }>;
  mixed: Array<{ contact: string; gold: string[] }>;
}

interface RetrievalFigures {
  /** `hashing-v1-256` or the fake endpoint's model. */
  embedder: string;
  /** Where the queries searched: the memory folders (facts, contacts) or every note (items too). */
  scope: 'memory' | 'all';
  queries: number;
  /** Mean over queries of the share of their gold found in the first 5 hits. */
  recallAt5: number;
  recallAt10: number;
  /** The search mode the index answered with, and why it was lexical when it was. */
  modes: Record<string, number>;
  degraded: string[];
  /**
   * A superseded fact among a query's first 10 hits is "above its replacement" when the replacement (the newest fact
   * of its chain) is ranked lower or is not among the hits. `pairs` counts superseded facts in hits.
   */
  supersededAbove: { pairs: number; above: number; rate: number };
  /** The same, counting only pairs where both the old and the current fact are among the hits. */
  supersededAboveBothHit: { pairs: number; above: number; rate: number };
  /** Queries whose gold was not in the first 5 hits, for a reader tuning retrieval. */
  misses: Array<{ query: string; gold: string[]; top: string[] }>;
}

export interface MemoryEvalReport {
  items: { total: number; email: number; chat: number; github: number; skipped: number };
  /** Model calls made: one per item version; more would mean a scripted answer failed the schema. */
  modelCalls: number;
  facts: { gold: number; written: number; ownerFacts: number; supersedeLinks: number; goldSupersedeLinks: number };
  /**
   * Supersede links requested by a scripted answer (injections aside) whose target fact id was not in that item's
   * prompt: a real model could not have named them, so the supersession figures count on links it would miss.
   */
  supersedeTargetsNotInPrompt: string[];
  injection: { items: number; attempts: number; refused: number; ownerFactsSuperseded: number };
  followups: { gold: number; tasks: number; goldWithTask: number };
  dedupe: DedupeFigures;
  retrieval: RetrievalFigures[];
  /**
   * Contacts no gold person mention went to (the owner's seeded ones aside): a newsletter's or a no-reply sender, the
   * owner's own GitHub handle. Pairwise F1 does not see them; they are clutter in the contact list.
   */
  unmentionedContacts: string[];
  /** Requests the fake embeddings endpoint served: the HTTP path was taken. */
  embeddingRequests: number;
}

interface Consolidated {
  notes: FileNoteStore;
  stores: Stores;
  set: EvalSet;
  /** Gold fact id → the id of the fact written for it. */
  factIds: Map<string, string>;
  ownerFactIds: Set<string>;
  /** Gold cluster → contact slug (the contact most of its mentions went to). */
  clusterSlugs: Map<string, string>;
  mentions: Mention[];
  modelCalls: number;
  skipped: number;
  refused: number;
  supersedeTargetsNotInPrompt: string[];
  goldFollowups: Set<string>;
  followupsWithTask: Set<string>;
}

function round(value: number, digits = 4): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

function contentHash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function normalised(text: string): string {
  return text.toLowerCase().replace(/\s+/g, ' ').trim();
}

/**
 * Writes the item's source note as the email or GitHub integration would (the fields `itemForConsolidation` reads)
 * and returns the consolidation item built from it; a chat turn is built with `chatMessageItem`.
 */
async function consolidationItemFor(notes: FileNoteStore, item: EvalItem, index: number): Promise<ConsolidationItem> {
  if (item.kind === 'chat') {
    return chatMessageItem({
      conversation: item.conversation,
      messageId: item.messageId,
      text: item.text,
      at: item.observedAt,
    });
  }
  let data: FrontmatterData;
  let body: string;
  if (item.kind === 'email') {
    // The fields integrations/email/src/collect.ts writes (mail-facts.ts): the excerpt holds up to 2,000 characters.
    data = {
      message_id: `<${item.id}.${index}@eval.example>`,
      uid: Number(item.source.match(/-(\d+)\.md$/)?.[1] ?? index),
      from: `${item.from.name} <${item.from.email}>`,
      from_address: item.from.email,
      subject: item.subject,
      ...(item.list_unsubscribe ? { has_list_unsubscribe: true } : {}),
      date: item.observedAt,
      content_hash: contentHash(`${item.subject}\n${item.text}`),
      body_excerpt: item.text,
    };
    body = `# ${item.subject}\n\nFrom ${item.from.name} <${item.from.email}>, ${item.observedAt}\n\n${item.text}\n`;
  } else {
    // The fields integrations/github/src/facts.ts writes: the description, then the latest comments. The set writes
    // a thread as paragraphs `handle: text`; the first is the description.
    const [, , owner = '_', repo = '_', folder = 'issues', number = '0'] = item.source.replace(/\.md$/, '').split('/');
    const [description = { author: item.author, text: '' }, ...comments] = item.text
      .trim()
      .split(/\n\s*\n(?=[\w-]+: )/)
      .map((paragraph) => {
        const match = /^([\w-]+): ([\s\S]*)$/.exec(paragraph.trim());
        return { author: match?.[1] ?? item.author, text: (match?.[2] ?? paragraph).trim() };
      });
    data = {
      number: Number(number),
      repository: `${owner}/${repo}`,
      repo: `${owner}/${repo}`,
      kind: folder === 'pulls' ? 'pull' : 'issue',
      title: item.title,
      author: item.author,
      state: 'open',
      url: `https://github.example/${owner}/${repo}/${folder === 'pulls' ? 'pull' : 'issues'}/${number}`,
      updated_at: item.observedAt,
      body_excerpt: description.text,
      latest_comments: comments.map((comment) => ({ ...comment, at: item.observedAt })),
      content_hash: contentHash(`${item.title}\n${item.text}`),
    };
    body = `# ${item.title}\n\n${item.text}\n`;
  }
  const existing = await notes.read(item.source).catch(() => undefined);
  if (existing) await notes.update(item.source, { set: data, body });
  else await notes.create(item.source, { data, body });
  const note = await notes.read(item.source);
  if (!note) throw new Error(`The eval could not read back ${item.source}`);
  const built = itemForConsolidation({ path: item.source, data: note.data, body: note.body });
  if (!built) throw new Error(`itemForConsolidation did not recognise ${item.source} (item ${item.id})`);
  return built;
}

/** The scripted answer of an item as the model sends it: gold annotations dropped, gold ids mapped to fact ids. */
function scriptedAnswer(item: EvalItem, factIds: Map<string, string>): unknown {
  return {
    people: item.answer.people.map(({ gold: _gold, ...person }) => person),
    facts: item.answer.facts.map(({ gold: _gold, supersedes_gold, ...fact }) => {
      const supersedes = (supersedes_gold ?? []).map((goldId) => {
        const id = factIds.get(goldId);
        if (!id) throw new Error(`Item ${item.id} supersedes ${goldId}, which no fact was written for`);
        return id;
      });
      return supersedes.length > 0 ? { ...fact, supersedes } : fact;
    }),
    followups: item.answer.followups.map(({ gold: _gold, ...followup }) => followup),
  };
}

function identifiersOf(contact: Contact): { emails: Set<string>; handles: Set<string>; names: Set<string> } {
  const emails = new Set(contact.emails.map((value) => value.toLowerCase()));
  const handles = new Set(Object.values(contact.handles).flatMap((values) => values.map((v) => v.toLowerCase())));
  const names = new Set([contact.name, ...contact.aliases].map(normalised));
  for (const observed of contact.observed) {
    const value = observed.value.toLowerCase();
    if (observed.kind === 'email') emails.add(value);
    else if (observed.kind === 'handle') handles.add(value);
    else names.add(normalised(observed.value));
  }
  return { emails, handles, names };
}

/**
 * The contact consolidation filed a mention under: among the contacts that name the item as a source, the one
 * holding the mention's address, else its handle, else its name; else whatever `find` answers now.
 */
async function contactOfMention(
  stores: Stores,
  contacts: Contact[],
  source: string,
  person: EvalItem['answer']['people'][number],
): Promise<string | undefined> {
  const resolve = async (slug: string) => (await stores.contacts.resolve(slug))?.slug ?? slug;
  const withSource = contacts.filter(
    (contact) => contact.sources.includes(source) || contact.observed.some((observed) => observed.source === source),
  );
  const email = person.email?.toLowerCase();
  const handle = person.handle?.toLowerCase();
  const name = normalised(person.name);
  for (const test of [
    (contact: Contact) => email !== undefined && identifiersOf(contact).emails.has(email),
    (contact: Contact) => handle !== undefined && identifiersOf(contact).handles.has(handle),
    (contact: Contact) => identifiersOf(contact).names.has(name),
  ]) {
    const match = withSource.find(test);
    if (match) return resolve(match.slug);
  }
  const found = await stores.contacts.find({
    name: person.name,
    ...(person.email ? { email: person.email } : {}),
    ...(person.handle ? { handle: { platform: person.platform ?? 'github', value: person.handle } } : {}),
  });
  const best = found[0];
  return best ? resolve(best.contact.slug) : undefined;
}

/** Feeds every item through consolidation with the scripted model and records what became of it. */
async function consolidateEvalSet(options: {
  workDir: string;
  set: EvalSet;
  signal?: AbortSignal;
}): Promise<Consolidated & { close: () => Promise<void> }> {
  const { set } = options;
  const notesRoot = path.join(options.workDir, 'data', 'notes');
  const dataDir = path.join(options.workDir, 'data');
  await mkdir(notesRoot, { recursive: true });
  const notes = new FileNoteStore({ root: notesRoot });
  const stores = memoryStores({ notes });

  // The owner's own contacts and facts come first, as an owner who set memory up would have them.
  const clusterSlugs = new Map<string, string>();
  for (const contact of set.owner.contacts) {
    const created = await stores.contacts.create(
      {
        name: contact.name,
        ...(contact.emails ? { emails: contact.emails } : {}),
        ...(contact.organisation ? { organisation: contact.organisation } : {}),
      },
      { by: 'owner' },
    );
    clusterSlugs.set(contact.cluster, created.slug);
  }
  const factIds = new Map<string, string>();
  const ownerFactIds = new Set<string>();
  for (const fact of set.owner.facts) {
    const about = fact.about.map((entry) =>
      entry.startsWith('contact:') ? `contact:${clusterSlugs.get(entry.slice(8)) ?? entry.slice(8)}` : entry,
    );
    const written = await stores.facts.add({
      statement: fact.statement,
      about,
      source: 'owner',
      trust: 'owner',
      observedAt: '2026-11-01T08:00:00.000Z',
    });
    factIds.set(fact.gold, written.id);
    ownerFactIds.add(written.id);
  }

  // The scripted model: a real OpenAI-compatible server on loopback answering the current item's recorded answer.
  let current: { answer: unknown; prompt?: string } | undefined;
  const server = await FakeOpenAiServer.start({
    respond: (request) => {
      if (!current) return { error: { status: 500, message: 'The eval asked the model outside an item' } };
      current.prompt = JSON.stringify(request.body.messages ?? '');
      return { json: current.answer };
    },
  });
  const model: ChatModel = createOpenAiChatModel({
    name: 'memory-eval',
    baseUrl: server.url,
    model: 'scripted-memory-eval',
    maxRetries: 0,
    capabilities: { jsonSchema: true, contextWindow: 128_000 },
  });

  const mentions: Mention[] = [];
  const supersedeTargetsNotInPrompt: string[] = [];
  const goldFollowups = new Set<string>();
  const followupsWithTask = new Set<string>();
  let skipped = 0;
  let refused = 0;
  for (const [index, item] of set.items.entries()) {
    const consolidationItem = await consolidationItemFor(notes, item, index);
    const answer = scriptedAnswer(item, factIds);
    current = { answer };
    const result = await consolidateItem({
      stores,
      model,
      item: consolidationItem,
      dataDir,
      ownerIdentities: set.owner.identities,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const prompt = current.prompt ?? '';
    current = undefined;
    if (result.skipped) {
      skipped += 1;
      continue;
    }
    refused += result.facts.refused.length;
    // A model can only name a fact it was shown: a supersede of an id the prompt did not list is one the real
    // pipeline could not have produced, so the figures would flatter it. (The injection items are attacks that name
    // the owner's fact anyway; what counts for them is that the link is refused.)
    for (const fact of item.injection ? [] : item.answer.facts) {
      for (const goldId of fact.supersedes_gold ?? []) {
        const id = factIds.get(goldId);
        if (id && !prompt.includes(id)) supersedeTargetsNotInPrompt.push(`${item.id}: ${goldId} (${id})`);
      }
    }
    const { facts } = await stores.facts.list({ includeSuperseded: true });
    for (const fact of item.answer.facts) {
      const written = facts.find(
        (candidate) =>
          candidate.source === consolidationItem.source &&
          normalised(candidate.statement) === normalised(fact.statement),
      );
      if (!written) throw new Error(`Item ${item.id}: no fact was written for "${fact.statement}"`);
      factIds.set(fact.gold, written.id);
    }
    const { tasks } = await stores.tasks.list({});
    for (const followup of item.answer.followups) {
      goldFollowups.add(followup.gold);
      if (tasks.some((task) => task.source === consolidationItem.source && task.title === followup.title)) {
        followupsWithTask.add(followup.gold);
      }
    }
    const { contacts } = await stores.contacts.list();
    for (const person of item.answer.people) {
      mentions.push({
        item: item.id,
        name: person.name,
        gold: person.gold,
        slug: await contactOfMention(stores, contacts, consolidationItem.source, person),
      });
    }
  }
  const modelCalls = server.requests.length;
  await server.close();

  // A person's contact is the one most of their mentions went to (the owner's contact when seeded).
  const votes = new Map<string, Map<string, number>>();
  for (const mention of mentions) {
    if (!mention.slug) continue;
    const tally = votes.get(mention.gold) ?? new Map<string, number>();
    tally.set(mention.slug, (tally.get(mention.slug) ?? 0) + 1);
    votes.set(mention.gold, tally);
  }
  for (const [gold, tally] of votes) {
    if (clusterSlugs.has(gold)) continue;
    const [best] = [...tally].sort((a, b) => b[1] - a[1]);
    if (best) clusterSlugs.set(gold, best[0]);
  }
  for (const [gold, slug] of clusterSlugs) {
    clusterSlugs.set(gold, (await stores.contacts.resolve(slug))?.slug ?? slug);
  }

  return {
    notes,
    stores,
    set,
    factIds,
    ownerFactIds,
    clusterSlugs,
    mentions,
    modelCalls,
    skipped,
    refused,
    supersedeTargetsNotInPrompt,
    goldFollowups,
    followupsWithTask,
    close: () => server.close(),
  };
}

/** Pairwise precision, recall and F1 of the contacts mentions were filed under, against the gold people. */
function dedupeFigures(mentions: readonly Mention[], contacts: number): DedupeFigures {
  let goldPairs = 0;
  let predictedPairs = 0;
  let truePairs = 0;
  for (let i = 0; i < mentions.length; i += 1) {
    for (let j = i + 1; j < mentions.length; j += 1) {
      const a = mentions[i];
      const b = mentions[j];
      if (!a || !b) continue;
      const sameGold = a.gold === b.gold;
      // A mention no contact took is a cluster of its own.
      const samePredicted = a.slug !== undefined && a.slug === b.slug;
      if (sameGold) goldPairs += 1;
      if (samePredicted) predictedPairs += 1;
      if (sameGold && samePredicted) truePairs += 1;
    }
  }
  const precision = predictedPairs === 0 ? 1 : truePairs / predictedPairs;
  const recall = goldPairs === 0 ? 1 : truePairs / goldPairs;
  const f1 = precision + recall === 0 ? 0 : (2 * precision * recall) / (precision + recall);
  // For a reader tuning the matcher: which mentions (item and name as written) went where.
  const byGold = new Map<string, Map<string, string[]>>();
  const bySlug = new Map<string, Set<string>>();
  for (const mention of mentions) {
    const slug = mention.slug ?? '(none)';
    const slugs = byGold.get(mention.gold) ?? new Map<string, string[]>();
    slugs.set(slug, [...(slugs.get(slug) ?? []), `${mention.item} "${mention.name}"`]);
    byGold.set(mention.gold, slugs);
    bySlug.set(slug, (bySlug.get(slug) ?? new Set()).add(mention.gold));
  }
  return {
    mentions: mentions.length,
    goldPairs,
    predictedPairs,
    truePairs,
    precision: round(precision),
    recall: round(recall),
    f1: round(f1),
    contacts,
    people: byGold.size,
    split: [...byGold]
      .filter(([, slugs]) => slugs.size > 1)
      .map(([gold, slugs]) => ({
        gold,
        contacts: [...slugs].map(([slug, where]) => `${slug} (${where.join(', ')})`),
      })),
    mixed: [...bySlug].filter(([, golds]) => golds.size > 1).map(([contact, golds]) => ({ contact, gold: [...golds] })),
  };
}

/** Builds an index over the consolidated notes with `embedder` and runs every query. */
async function measureRetrieval(options: {
  consolidated: Consolidated;
  embedder: Embedder;
  dataDir: string;
  scope: 'memory' | 'all';
}): Promise<RetrievalFigures> {
  const { consolidated } = options;
  const supersededBy = await consolidated.stores.facts.supersededBy();
  const current = (id: string): string => {
    let head = id;
    for (let step = 0; step < 100; step += 1) {
      const next = supersededBy.get(head);
      if (!next) break;
      head = next;
    }
    return head;
  };
  const index = new MemoryIndex({
    notes: consolidated.notes,
    dataDir: options.dataDir,
    embedder: options.embedder,
    // A loaded machine may take seconds to answer on loopback: the figures are about ranking, so the query's vector
    // is waited for rather than the search falling back to words (which the test would count as a failure).
    queryTimeoutMs: 60_000,
  });
  try {
    await index.start();
    await index.embedPending();
    const pathOf = (gold: string): string => {
      if (gold.startsWith('contact:')) {
        const slug = consolidated.clusterSlugs.get(gold.slice('contact:'.length));
        return `contacts/${slug ?? '(no contact)'}.md`;
      }
      const id = consolidated.factIds.get(gold);
      return `facts/${id ?? '(no fact)'}.md`;
    };
    const factIdOfPath = (notePath: string): string | undefined =>
      notePath.startsWith('facts/') ? path.basename(notePath, '.md') : undefined;
    let recall5 = 0;
    let recall10 = 0;
    const modes: Record<string, number> = {};
    const degraded = new Set<string>();
    const above = { pairs: 0, above: 0 };
    const bothHit = { pairs: 0, above: 0 };
    const misses: RetrievalFigures['misses'] = [];
    for (const query of consolidated.set.queries) {
      const result = await index.search({
        query: query.query,
        limit: 10,
        mode: 'hybrid',
        ...(options.scope === 'memory' ? { folders: ['facts', 'contacts'] } : {}),
      });
      modes[result.mode] = (modes[result.mode] ?? 0) + 1;
      if (result.degraded) degraded.add(result.degraded);
      const paths = result.hits.map((hit) => hit.path);
      const gold = query.gold.map(pathOf);
      const found5 = gold.filter((goldPath) => paths.slice(0, 5).includes(goldPath)).length;
      const found10 = gold.filter((goldPath) => paths.includes(goldPath)).length;
      recall5 += found5 / gold.length;
      recall10 += found10 / gold.length;
      if (found5 < gold.length) misses.push({ query: query.query, gold, top: paths.slice(0, 5) });
      for (const [rank, notePath] of paths.entries()) {
        const id = factIdOfPath(notePath);
        if (!id || !supersededBy.has(id)) continue;
        const replacementRank = paths.indexOf(`facts/${current(id)}.md`);
        above.pairs += 1;
        if (replacementRank === -1 || replacementRank > rank) above.above += 1;
        if (replacementRank !== -1) {
          bothHit.pairs += 1;
          if (replacementRank > rank) bothHit.above += 1;
        }
      }
    }
    const queries = consolidated.set.queries.length;
    return {
      embedder: options.embedder.model,
      scope: options.scope,
      queries,
      recallAt5: round(recall5 / queries),
      recallAt10: round(recall10 / queries),
      modes,
      degraded: [...degraded],
      supersededAbove: { ...above, rate: round(above.pairs === 0 ? 0 : above.above / above.pairs) },
      supersededAboveBothHit: { ...bothHit, rate: round(bothHit.pairs === 0 ? 0 : bothHit.above / bothHit.pairs) },
      misses,
    };
  } finally {
    await index.close();
  }
}

/**
 * Runs the whole evaluation in `workDir` (a fresh directory the caller removes): consolidation of every item, then
 * retrieval with the hashing embedder and with the fake embeddings server, over the memory folders and every note.
 */
export async function runMemoryEval(options: { workDir: string; signal?: AbortSignal }): Promise<MemoryEvalReport> {
  const set = await loadEvalSet();
  const consolidated = await consolidateEvalSet({
    workDir: options.workDir,
    set,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  try {
    const { stores } = consolidated;
    const { facts } = await stores.facts.list({ includeSuperseded: true });
    const supersededBy = await stores.facts.supersededBy();
    const { contacts } = await stores.contacts.list();
    const { tasks } = await stores.tasks.list({});
    const injectionItems = set.items.filter((item) => item.injection);
    const goldFacts = new Set(set.owner.facts.map((fact) => fact.gold));
    let goldSupersedeLinks = 0;
    for (const item of set.items) {
      for (const fact of item.answer.facts) {
        goldFacts.add(fact.gold);
        if (!item.injection) goldSupersedeLinks += fact.supersedes_gold?.length ?? 0;
      }
    }

    const retrieval: RetrievalFigures[] = [];
    const hashing = new HashingEmbedder();
    await using embeddings = await startFakeEmbeddingsServer();
    const endpoint = new OpenAiEmbedder({ baseUrl: embeddings.url, model: 'eval-stems-512' });
    for (const [name, embedder] of [
      ['hashing', hashing],
      ['endpoint', endpoint],
    ] as const) {
      for (const scope of ['memory', 'all'] as const) {
        retrieval.push(
          await measureRetrieval({
            consolidated,
            embedder,
            scope,
            dataDir: path.join(options.workDir, `index-${name}-${scope}`),
          }),
        );
      }
    }

    return {
      items: {
        total: set.items.length,
        email: set.items.filter((item) => item.kind === 'email').length,
        chat: set.items.filter((item) => item.kind === 'chat').length,
        github: set.items.filter((item) => item.kind === 'github').length,
        skipped: consolidated.skipped,
      },
      modelCalls: consolidated.modelCalls,
      facts: {
        gold: goldFacts.size,
        written: facts.length,
        ownerFacts: consolidated.ownerFactIds.size,
        supersedeLinks: supersededBy.size,
        goldSupersedeLinks,
      },
      supersedeTargetsNotInPrompt: consolidated.supersedeTargetsNotInPrompt,
      injection: {
        items: injectionItems.length,
        attempts: injectionItems.reduce(
          (sum, item) =>
            sum +
            item.answer.facts.filter((fact) =>
              (fact.supersedes_gold ?? []).some((goldId) => set.owner.facts.some((owner) => owner.gold === goldId)),
            ).length,
          0,
        ),
        refused: consolidated.refused,
        ownerFactsSuperseded: [...consolidated.ownerFactIds].filter((id) => supersededBy.has(id)).length,
      },
      followups: {
        gold: consolidated.goldFollowups.size,
        tasks: tasks.length,
        goldWithTask: consolidated.followupsWithTask.size,
      },
      dedupe: dedupeFigures(consolidated.mentions, contacts.filter((contact) => !contact.merged_into).length),
      retrieval,
      embeddingRequests: embeddings.requests,
      unmentionedContacts: contacts
        .filter((contact) => !contact.merged_into)
        .map((contact) => contact.slug)
        .filter(
          (slug) =>
            !consolidated.mentions.some((mention) => mention.slug === slug) &&
            ![...consolidated.clusterSlugs.values()].includes(slug),
        ),
    };
  } finally {
    await consolidated.close();
  }
}

function percent(value: number): string {
  return `${(value * 100).toFixed(1)} %`;
}

/** The report as the bench prints it: one line per figure. */
export function formatMemoryEvalReport(report: MemoryEvalReport): string {
  const lines = [
    `items: ${report.items.total} (${report.items.email} mails, ${report.items.chat} chat turns, ${report.items.github} GitHub threads), skipped ${report.items.skipped}; model calls ${report.modelCalls}`,
    `facts: ${report.facts.gold} gold (${report.facts.ownerFacts} owner), ${report.facts.written} written; supersede links ${report.facts.supersedeLinks} (gold ${report.facts.goldSupersedeLinks})`,
    `supersede targets not shown in the prompt: ${report.supersedeTargetsNotInPrompt.length}${report.supersedeTargetsNotInPrompt.length ? ` (${report.supersedeTargetsNotInPrompt.join('; ')})` : ''}`,
    `injection: ${report.injection.items} items, ${report.injection.attempts} attempts, ${report.injection.refused} refused, owner facts superseded ${report.injection.ownerFactsSuperseded} (goal 0)`,
    `fake embeddings endpoint: ${report.embeddingRequests} requests served`,
    `follow-ups: ${report.followups.goldWithTask}/${report.followups.gold} gold follow-ups have a task; ${report.followups.tasks} tasks`,
    `contact dedupe: ${report.dedupe.mentions} mentions of ${report.dedupe.people} people in ${report.dedupe.contacts} contacts; pairs gold ${report.dedupe.goldPairs}, predicted ${report.dedupe.predictedPairs}, true ${report.dedupe.truePairs}; precision ${report.dedupe.precision}, recall ${report.dedupe.recall}, F1 ${report.dedupe.f1} (goal ≥ 0.95)`,
  ];
  lines.push(
    `contacts no person mention went to: ${report.unmentionedContacts.length}${report.unmentionedContacts.length ? ` (${report.unmentionedContacts.join(', ')})` : ''}`,
  );
  for (const split of report.dedupe.split) lines.push(`  split: ${split.gold} → ${split.contacts.join(', ')}`);
  for (const mixed of report.dedupe.mixed) lines.push(`  mixed: ${mixed.contact} ← ${mixed.gold.join(', ')}`);
  for (const figures of report.retrieval) {
    lines.push(
      `retrieval ${figures.embedder} over ${figures.scope === 'memory' ? 'facts+contacts' : 'all notes'}: recall@5 ${percent(figures.recallAt5)}, recall@10 ${percent(figures.recallAt10)} (${figures.queries} queries; modes ${JSON.stringify(figures.modes)}${figures.degraded.length ? `; degraded: ${figures.degraded.join(' | ')}` : ''}); superseded above replacement ${figures.supersededAbove.above}/${figures.supersededAbove.pairs} = ${percent(figures.supersededAbove.rate)} (both hit: ${figures.supersededAboveBothHit.above}/${figures.supersededAboveBothHit.pairs}) (goal ≤ 2 %)`,
    );
  }
  return lines.join('\n');
}

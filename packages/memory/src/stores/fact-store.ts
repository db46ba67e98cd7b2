import { AssistantError } from '@assistant/errors';
import type { Note, NoteStore } from '@assistant/notes';
import * as z from 'zod';
import { type Fact, type MemoryProblem, memoryFolders, type Trust } from '../memory-types.ts';
import {
  baseName,
  datedRandomId,
  invalidInput,
  isAlreadyThere,
  isSafeName,
  normaliseText,
  parseData,
  readFolder,
  readOne,
  shortHash,
} from './memory-notes.ts';

export interface NewFact {
  statement: string;
  /** `contact:<slug>` and `topic:<word>`. */
  about: string[];
  /** The note path of the item, or `owner`. */
  source: string;
  trust: Trust;
  /** @default now */
  observedAt?: string;
  /** 0..1. @default 1 for owner facts, 0.7 for extracted ones */
  confidence?: number;
  supersedes?: string[];
}

export interface FactStore {
  /** Facts, newest observed first; superseded ones only with `includeSuperseded`. */
  list(options?: {
    about?: string;
    includeSuperseded?: boolean;
  }): Promise<{ facts: Fact[]; problems: MemoryProblem[] }>;
  get(id: string): Promise<Fact | undefined>;
  /**
   * Writes a new fact. Extracted facts are idempotent: the id is a hash of source and statement, and a fact already
   * written is returned as it is (never rewritten). Throws `MEMORY_SUPERSEDE_REFUSED` when an extracted fact would
   * supersede an owner fact.
   */
  add(fact: NewFact): Promise<Fact>;
  /** Old id → the id of the fact that supersedes it (the newest observed when several do). */
  supersededBy(): Promise<Map<string, string>>;
}

const factSchema = z.looseObject({
  about: z.array(z.string()).nullish(),
  source: z.string().min(1),
  trust: z.enum(['owner', 'extracted']),
  // YAML reads an unquoted timestamp as a Date: accept both.
  observed_at: z.union([z.string(), z.date().transform((date) => date.toISOString())]),
  confidence: z.number().min(0).max(1).nullish(),
  supersedes: z.array(z.string()).nullish(),
});

function factPath(id: string): string {
  return `${memoryFolders.facts}/${id}.md`;
}

/** A fact note as the Fact shape; throws (naming the field) when it does not fit. */
function parseFact(note: Note): Fact {
  const data = parseData(factSchema, note);
  // The body is the statement; a hand-written fact that put it in a `statement:` key instead is read as well.
  const statement = note.body.trim() || (typeof note.data.statement === 'string' ? note.data.statement.trim() : '');
  if (!statement) throw new Error(`${note.path}: the body (the fact's statement) is empty`);
  return {
    path: note.path,
    id: baseName(note.path),
    statement,
    about: data.about ?? [],
    source: data.source,
    trust: data.trust,
    observed_at: data.observed_at,
    confidence: data.confidence ?? 1,
    supersedes: data.supersedes ?? [],
  };
}

/** The id of an extracted fact: the same statement from the same item is the same fact, however often it is read. */
export function extractedFactId(options: { source: string; statement: string }): string {
  return `f-${shortHash(options.source, normaliseText(options.statement))}`;
}

/**
 * Facts under `facts/`: one statement each, never deleted or rewritten by the system. A newer fact supersedes older
 * ones by naming them; both stay readable. Extracted text never supersedes what the owner wrote.
 */
export function factStore(options: { notes: NoteStore; nowMs?: () => number }): FactStore {
  const { notes } = options;
  const now = options.nowMs ?? Date.now;
  const get = async (id: string) =>
    isSafeName(id) ? readOne({ notes, path: factPath(id), parse: parseFact }) : undefined;

  async function all() {
    const { items, problems } = await readFolder({ notes, folder: memoryFolders.facts, parse: parseFact });
    return { facts: items, problems };
  }

  function replacements(facts: Fact[]): Map<string, string> {
    const map = new Map<string, string>();
    const newestFirst = [...facts].sort((left, right) => right.observed_at.localeCompare(left.observed_at));
    for (const fact of newestFirst) {
      for (const old of fact.supersedes) if (!map.has(old) && old !== fact.id) map.set(old, fact.id);
    }
    return map;
  }

  return {
    get,
    async list(filter = {}) {
      const { facts, problems } = await all();
      const superseded = replacements(facts);
      const chosen = facts
        .filter((fact) => filter.about === undefined || fact.about.includes(filter.about))
        .filter((fact) => filter.includeSuperseded || !superseded.has(fact.id))
        .sort((left, right) => right.observed_at.localeCompare(left.observed_at) || left.id.localeCompare(right.id));
      return { facts: chosen, problems };
    },
    async supersededBy() {
      return replacements((await all()).facts);
    },
    async add(fact) {
      const statement = fact.statement.trim();
      if (!statement)
        throw invalidInput(`Expected \`statement\` to be a sentence, got ${JSON.stringify(fact.statement)}`);
      if (fact.trust !== 'owner' && fact.trust !== 'extracted') {
        throw invalidInput(`Expected \`trust\` to be \`owner\` or \`extracted\`, got ${JSON.stringify(fact.trust)}`);
      }
      const confidence = fact.confidence ?? (fact.trust === 'owner' ? 1 : 0.7);
      if (!(confidence >= 0 && confidence <= 1)) {
        throw invalidInput(
          `Expected \`confidence\` to be a number from 0 to 1, got ${JSON.stringify(fact.confidence)}`,
        );
      }
      const observedAt = fact.observedAt ?? new Date(now()).toISOString();
      if (!Number.isFinite(Date.parse(observedAt))) {
        throw invalidInput(`Expected \`observedAt\` to be an ISO instant, got ${JSON.stringify(fact.observedAt)}`);
      }
      const source = fact.source.trim();
      if (!source)
        throw invalidInput('Expected `source` to be the note path of an item, or `owner`; got an empty string');
      const supersedes = [...new Set(fact.supersedes ?? [])];
      if (fact.trust === 'extracted') {
        for (const id of supersedes) {
          const old = await get(id);
          if (old?.trust === 'owner') {
            throw new AssistantError(
              'MEMORY_SUPERSEDE_REFUSED',
              `A fact extracted from ${source} cannot supersede \`${id}\`, which the owner wrote ("${old.statement.slice(0, 80)}")`,
              { hint: 'extracted text never replaces what the owner wrote; the owner can write a newer fact' },
            );
          }
        }
      }
      const id =
        fact.trust === 'extracted'
          ? extractedFactId({ source, statement })
          : datedRandomId('f', Date.parse(observedAt));
      const data: Record<string, unknown> = {
        id,
        about: [...new Set(fact.about.map((entry) => entry.trim()).filter(Boolean))],
        source,
        trust: fact.trust,
        observed_at: observedAt,
        confidence,
        supersedes,
      };
      try {
        return parseFact(await notes.create(factPath(id), { data, body: `${statement}\n` }));
      } catch (error) {
        // The same statement from the same item: it is written already, and stays as it was.
        if (!isAlreadyThere(error) || fact.trust !== 'extracted') throw error;
        const existing = await get(id);
        if (!existing) throw error;
        return existing;
      }
    },
  };
}

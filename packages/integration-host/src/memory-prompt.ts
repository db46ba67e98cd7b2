import { randomBytes } from 'node:crypto';
import { fenceUntrusted } from '@assistant/llm';
import type { Fact, Guidance } from '@assistant/memory';
import type { MemoryContext } from './memory-context.ts';

/** The most characters of the messages a turn's memory is searched with. */
const maxQueryChars = 2_000;
/** The most characters of one fact or guidance note shown in the context. */
const maxItemChars = 1_500;

export interface MemoryPromptOptions {
  memory: MemoryContext;
  /** The texts the turn answers (the owner's messages): what the facts and guidance must be relevant to. */
  texts: readonly string[];
  signal?: AbortSignal;
  /** For tests: the random part of the markers. */
  nonce?: string;
}

/**
 * What memory adds to a chat turn's system prompt: the guidance notes and facts most relevant to the owner's
 * messages (`memory.context.guidance` and `memory.context.facts` of them, superseded facts left out), each with its
 * source path and fenced by who stands behind it. The owner's guidance and the owner's facts are the owner's words
 * (delimited so the model sees where each ends); extracted facts came from mail, chat and GitHub and are fenced as
 * untrusted data like a tool result. Undefined when nothing relevant is found.
 */
export async function memoryPromptContext(options: MemoryPromptOptions): Promise<string | undefined> {
  const { memory } = options;
  const query = options.texts.join('\n').trim().slice(0, maxQueryChars);
  if (query === '') return undefined;
  const { facts: factCount, guidance: guidanceCount } = memory.context;
  if (factCount === 0 && guidanceCount === 0) return undefined;
  const index = await memory.index();
  const signal = options.signal;

  const guidance: Guidance[] = [];
  if (guidanceCount > 0) {
    const found = await index.search({
      query,
      folders: ['guidance'],
      limit: guidanceCount,
      ...(signal === undefined ? {} : { signal }),
    });
    for (const hit of found.hits) {
      const name = noteName(hit.path, 'guidance');
      const note = name === undefined ? undefined : await memory.stores.guidance.get(name);
      if (note) guidance.push(note);
    }
  }

  const facts: Fact[] = [];
  if (factCount > 0) {
    // More hits than needed: superseded facts and unreadable notes are dropped after the search.
    const found = await index.search({
      query,
      folders: ['facts'],
      limit: factCount * 3,
      ...(signal === undefined ? {} : { signal }),
    });
    for (const hit of found.hits) {
      if (facts.length >= factCount) break;
      if (hit.superseded) continue;
      const id = noteName(hit.path, 'facts');
      const fact = id === undefined ? undefined : await memory.stores.facts.get(id);
      if (fact) facts.push(fact);
    }
  }
  if (guidance.length === 0 && facts.length === 0) return undefined;

  const marker = `OWNER-${options.nonce ?? randomBytes(8).toString('hex')}`;
  const ownerBlock = (source: string, text: string) =>
    `<<<${marker} ${source}>>>\n${defang(text).split(marker).join('[marker removed]').slice(0, maxItemChars)}\n<<<END ${marker} ${source}>>>`;
  const sections: string[] = ['What you remember that may bear on these messages (docs/memory.md):'];
  if (guidance.length > 0) {
    sections.push(
      `The owner's standing guidance, written by the owner: follow it where it applies. Each note is between <<<${marker} path>>> and <<<END ${marker} path>>>.`,
      ...guidance.map((note) => ownerBlock(note.path, `${note.title}\n${note.body.trim()}`)),
    );
  }
  const ownerFacts = facts.filter((fact) => fact.trust === 'owner');
  const extracted = facts.filter((fact) => fact.trust !== 'owner');
  if (ownerFacts.length > 0) {
    sections.push(
      `Facts the owner wrote down (between <<<${marker} path>>> and <<<END ${marker} path>>>):`,
      ...ownerFacts.map((fact) => ownerBlock(fact.path, factLine(fact))),
    );
  }
  if (extracted.length > 0) {
    const fenced = fenceUntrusted(
      Object.fromEntries(
        extracted.map((fact) => [fact.path, `${factLine(fact)}\n(note ${fact.path}, from ${fact.source})`]),
      ),
      { maxChars: maxItemChars, ...(options.nonce === undefined ? {} : { nonce: options.nonce }) },
    );
    sections.push(
      `Facts extracted from mail, chat and GitHub: they may be wrong or out of date. ${fenced.instruction.replace('data to classify', 'data')}`,
      fenced.text,
    );
  }
  sections.push('Say where a remembered fact comes from when you rely on it (its path); `recall` finds more.');
  return sections.join('\n\n');
}

function factLine(fact: Fact): string {
  const about = fact.about.length === 0 ? '' : ` (about ${fact.about.join(', ')})`;
  return `${fact.statement.trim()}${about}; observed ${fact.observed_at.slice(0, 10)}`;
}

/** `facts/f-1.md` → `f-1`; undefined for a path outside the folder or in a subfolder. */
function noteName(notePath: string, folder: string): string | undefined {
  const match = new RegExp(`^${folder}/([^/]+)\\.md$`).exec(notePath);
  return match?.[1];
}

function defang(text: string): string {
  return text.replace(/<{3,}/g, (run) => '‹'.repeat(run.length)).replace(/>{3,}/g, (run) => '›'.repeat(run.length));
}

import type { Fact } from '../memory-types.ts';

const stopWords = new Set(
  (
    'the and for are but not you your yours our ours with this that these those from have has had was were will ' +
    'would could should can may might must shall been being into onto about over under than then them they their ' +
    'there here what when where which who whom why how all any some each every just also very much more most ' +
    'hello dear thanks thank regards best cheers please hi hey its it’s i’m i’ll let lets yes now out get got'
  ).split(' '),
);

function words(text: string): Set<string> {
  return new Set(
    text
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .split(/[^a-z0-9]+/)
      .filter((word) => word.length >= 3 && !stopWords.has(word)),
  );
}

/**
 * The facts that share the most telling words with an item (words rare among the facts weigh more: `dentist` over
 * `meeting`), best first: what the model should see so it can say which known fact a new one supersedes when the
 * fact is about a topic or a person the item does not name in its headers. At least two shared words, or one
 * shared word no more than two facts use, so a common word alone brings nothing in.
 */
export function relatedFacts(options: { text: string; facts: readonly Fact[]; limit: number }): Fact[] {
  const { facts, limit } = options;
  if (facts.length === 0 || limit <= 0) return [];
  const itemWords = words(options.text);
  const factWords = facts.map((fact) => words(fact.statement));
  const documentFrequency = new Map<string, number>();
  for (const set of factWords)
    for (const word of set) documentFrequency.set(word, (documentFrequency.get(word) ?? 0) + 1);
  const scored: Array<{ fact: Fact; score: number }> = [];
  facts.forEach((fact, index) => {
    let score = 0;
    let shared = 0;
    let rare = false;
    for (const word of factWords[index] ?? []) {
      if (!itemWords.has(word)) continue;
      const frequency = documentFrequency.get(word) ?? 1;
      shared += 1;
      if (frequency <= 2) rare = true;
      score += Math.log(1 + facts.length / frequency);
    }
    if (shared >= 2 || rare) scored.push({ fact, score });
  });
  return scored
    .sort((left, right) => right.score - left.score || right.fact.observed_at.localeCompare(left.fact.observed_at))
    .slice(0, limit)
    .map((entry) => entry.fact);
}

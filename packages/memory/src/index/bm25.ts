/** BM25's parameters: the usual ones (Robertson and Zaragoza); `titleWeight` counts a title term as this many. */
const k1 = 1.2;
const b = 0.75;
const titleWeight = 2;

export interface Bm25Hit {
  document: number;
  score: number;
}

/** One term's documents and their weighted frequencies, side by side (arrays of small integers: compact). */
interface Posting {
  documents: number[];
  frequencies: number[];
}

/**
 * An in-memory BM25 index (a BM25F with two fields: a title counted `titleWeight` times, and the rest) over documents
 * numbered by the caller. Postings map each term to the documents holding it, so a query touches only the documents
 * that share a term with it; replacing or removing a document touches only its own terms.
 *
 * Postings are parallel arrays rather than a Map per term: at 10,000 notes there are millions of (term, document)
 * pairs, and a Map entry costs several times a pair of array slots. Removing a document finds it in each of its
 * terms' arrays (a linear scan of small integers, about a millisecond for a note in the worst case) and swaps the
 * last one into its place.
 */
export class Bm25Index {
  readonly #postings = new Map<string, Posting>();
  /** Per document number: the postings it appears in (not the terms: the strings are held once, as keys) and its length. */
  readonly #documents: Array<{ postings: Posting[]; length: number } | undefined> = [];
  #count = 0;
  #totalLength = 0;
  /** Scratch scores per document number, reused across searches; grown as numbers grow. */
  #scores = new Float64Array(1024);

  get size(): number {
    return this.#count;
  }

  /** Indexes (or re-indexes) a document from its title and other terms. */
  set(document: number, fields: { title: readonly string[]; text: readonly string[] }): void {
    this.remove(document);
    const frequencies = new Map<string, number>();
    for (const term of fields.title) frequencies.set(term, (frequencies.get(term) ?? 0) + titleWeight);
    for (const term of fields.text) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
    let length = 0;
    const postings: Posting[] = [];
    for (const [term, frequency] of frequencies) {
      length += frequency;
      let posting = this.#postings.get(term);
      if (!posting) {
        posting = { documents: [], frequencies: [] };
        this.#postings.set(term, posting);
      }
      posting.documents.push(document);
      posting.frequencies.push(frequency);
      postings.push(posting);
    }
    this.#documents[document] = { postings, length };
    this.#count++;
    this.#totalLength += length;
  }

  remove(document: number): void {
    const known = this.#documents[document];
    if (!known) return;
    for (const posting of known.postings) {
      const at = posting.documents.lastIndexOf(document);
      if (at === -1) continue;
      const last = posting.documents.length - 1;
      posting.documents[at] = posting.documents[last] as number;
      posting.frequencies[at] = posting.frequencies[last] as number;
      posting.documents.pop();
      posting.frequencies.pop();
    }
    // Terms left without documents are dropped lazily by `#prune`, not here: finding a posting's key costs a scan.
    this.#emptied += known.postings.filter((posting) => posting.documents.length === 0).length;
    if (this.#emptied > 10_000) this.#prune();
    this.#totalLength -= known.length;
    this.#documents[document] = undefined;
    this.#count--;
  }

  #emptied = 0;

  #prune(): void {
    for (const [term, posting] of this.#postings) if (posting.documents.length === 0) this.#postings.delete(term);
    this.#emptied = 0;
  }

  /** The documents holding `term` (a live view: do not change it). */
  documentsWith(term: string): readonly number[] {
    return this.#postings.get(term)?.documents ?? [];
  }

  /**
   * The best `limit` documents for the query terms (repeats count once), best first; `accept` filters documents
   * (a folder) before they compete for a place.
   */
  search(terms: readonly string[], options: { limit: number; accept?: (document: number) => boolean }): Bm25Hit[] {
    const count = this.#count;
    if (count === 0 || options.limit <= 0) return [];
    const averageLength = this.#totalLength / count;
    const touched: number[] = [];
    for (const term of new Set(terms)) {
      const posting = this.#postings.get(term);
      if (!posting || posting.documents.length === 0) continue;
      const found = posting.documents.length;
      const idf = Math.log(1 + (count - found + 0.5) / (found + 0.5));
      for (let at = 0; at < found; at++) {
        const document = posting.documents[at] as number;
        const frequency = posting.frequencies[at] as number;
        const length = this.#documents[document]?.length ?? averageLength;
        const part = (idf * frequency * (k1 + 1)) / (frequency + k1 * (1 - b + (b * length) / averageLength));
        if (document >= this.#scores.length) this.#grow(document);
        if (this.#scores[document] === 0) touched.push(document);
        this.#scores[document] = (this.#scores[document] as number) + part;
      }
    }
    const hits: Bm25Hit[] = [];
    for (const document of touched) {
      const score = this.#scores[document] as number;
      this.#scores[document] = 0;
      if (options.accept && !options.accept(document)) continue;
      hits.push({ document, score });
    }
    return topByScore(hits, options.limit);
  }

  #grow(document: number): void {
    let size = this.#scores.length;
    while (size <= document) size *= 2;
    const grown = new Float64Array(size);
    grown.set(this.#scores);
    this.#scores = grown;
  }
}

/** The `limit` best by score, best first; ties by the lower number, so results are stable. */
export function topByScore<T extends { score: number; document: number }>(items: T[], limit: number): T[] {
  return items
    .sort((left, right) => right.score - left.score || left.document - right.document)
    .slice(0, Math.max(0, limit));
}

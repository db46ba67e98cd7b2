/** BM25's parameters: the usual ones (Robertson and Zaragoza); `titleWeight` counts a title term as this many. */
const k1 = 1.2;
const b = 0.75;
const titleWeight = 2;

export interface Bm25Hit {
  document: number;
  score: number;
}

/**
 * An in-memory BM25 index (a BM25F with two fields: a title counted `titleWeight` times, and the rest) over documents
 * numbered by the caller. Postings map each term to the documents holding it with their weighted term frequency, so
 * a query touches only the documents that share a term with it; replacing or removing a document touches only its
 * own terms.
 */
export class Bm25Index {
  readonly #postings = new Map<string, Map<number, number>>();
  /** Per document, its distinct terms (to remove it) and its weighted length. */
  readonly #documents = new Map<number, { terms: string[]; length: number }>();
  #totalLength = 0;
  /** Scratch scores per document number, reused across searches; grown as numbers grow. */
  #scores = new Float64Array(1024);

  get size(): number {
    return this.#documents.size;
  }

  /** Indexes (or re-indexes) a document from its title and other terms. */
  set(document: number, fields: { title: readonly string[]; text: readonly string[] }): void {
    this.remove(document);
    const frequencies = new Map<string, number>();
    for (const term of fields.title) frequencies.set(term, (frequencies.get(term) ?? 0) + titleWeight);
    for (const term of fields.text) frequencies.set(term, (frequencies.get(term) ?? 0) + 1);
    let length = 0;
    for (const [term, frequency] of frequencies) {
      length += frequency;
      let posting = this.#postings.get(term);
      if (!posting) {
        posting = new Map();
        this.#postings.set(term, posting);
      }
      posting.set(document, frequency);
    }
    this.#documents.set(document, { terms: [...frequencies.keys()], length });
    this.#totalLength += length;
  }

  remove(document: number): void {
    const known = this.#documents.get(document);
    if (!known) return;
    for (const term of known.terms) {
      const posting = this.#postings.get(term);
      posting?.delete(document);
      if (posting?.size === 0) this.#postings.delete(term);
    }
    this.#totalLength -= known.length;
    this.#documents.delete(document);
  }

  /** The documents holding `term` (a live view: do not change it). */
  documentsWith(term: string): ReadonlyMap<number, number> | undefined {
    return this.#postings.get(term);
  }

  /**
   * The best `limit` documents for the query terms (repeats count once), best first; `accept` filters documents
   * (a folder) before they compete for a place.
   */
  search(terms: readonly string[], options: { limit: number; accept?: (document: number) => boolean }): Bm25Hit[] {
    const count = this.#documents.size;
    if (count === 0 || options.limit <= 0) return [];
    const averageLength = this.#totalLength / count;
    const touched: number[] = [];
    for (const term of new Set(terms)) {
      const posting = this.#postings.get(term);
      if (!posting) continue;
      const idf = Math.log(1 + (count - posting.size + 0.5) / (posting.size + 0.5));
      for (const [document, frequency] of posting) {
        const length = this.#documents.get(document)?.length ?? averageLength;
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

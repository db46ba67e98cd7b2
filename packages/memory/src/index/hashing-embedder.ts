import type { Embedder } from '../memory-types.ts';
import { tokenize } from './tokenize.ts';

export interface HashingEmbedderOptions {
  /** Length of each vector. @default 256 */
  dimensions?: number;
}

/** How much each kind of feature weighs against a word: pairs of words carry order, trigrams carry spelling. */
const bigramWeight = 0.5;
const trigramWeight = 0.4;

/**
 * A deterministic, offline embedder: feature hashing ("the hashing trick") of word unigrams, word bigrams and the
 * character trigrams of each word, each added with a sign taken from its hash so collisions cancel out on average
 * instead of piling up, then L2-normalised so a dot product is the cosine. It knows no synonyms — "dentist" and
 * "teeth" are as far apart as any two words — so it is a lexical-ish vector that catches reordered phrases, shared
 * word pairs and misspellings (trigrams); an endpoint model brings meaning. It serves tests, the evaluation set and
 * owners without an embeddings endpoint, and needs no network, no model file and no state.
 */
export class HashingEmbedder implements Embedder {
  readonly model: string;
  readonly dimensions: number;

  constructor(options: HashingEmbedderOptions = {}) {
    const dimensions = options.dimensions ?? 256;
    if (!Number.isInteger(dimensions) || dimensions < 8 || dimensions > 65_536) {
      throw new RangeError(`Expected \`dimensions\` to be an integer from 8 to 65536, got \`${String(dimensions)}\``);
    }
    this.dimensions = dimensions;
    this.model = `hashing-v1-${dimensions}`;
  }

  async embed(options: { texts: readonly string[]; signal?: AbortSignal }): Promise<Float32Array[]> {
    options.signal?.throwIfAborted();
    return options.texts.map((text) => this.embedOne(text));
  }

  /** The vector of one text, synchronously (the index calls it inline: it costs microseconds). */
  embedOne(text: string): Float32Array {
    const vector = new Float32Array(this.dimensions);
    const tokens = tokenize(text);
    for (let index = 0; index < tokens.length; index++) {
      const token = tokens[index] as string;
      this.#add(vector, `w\u0000${token}`, 1);
      if (index > 0) this.#add(vector, `b\u0000${tokens[index - 1]}\u0000${token}`, bigramWeight);
      const padded = `\u0002${token}\u0003`;
      for (let start = 0; start + 3 <= padded.length; start++) {
        this.#add(vector, `c\u0000${padded.slice(start, start + 3)}`, trigramWeight);
      }
    }
    let norm = 0;
    for (let index = 0; index < vector.length; index++) norm += (vector[index] as number) ** 2;
    if (norm > 0) {
      const scale = 1 / Math.sqrt(norm);
      for (let index = 0; index < vector.length; index++) vector[index] = (vector[index] as number) * scale;
    }
    return vector;
  }

  #add(vector: Float32Array, feature: string, weight: number): void {
    const hash = fnv1a(feature);
    // The bucket from the low bits, the sign from a bit the bucket does not use after mixing.
    const slot = hash % this.dimensions;
    const sign = mix(hash) & 1 ? 1 : -1;
    vector[slot] = (vector[slot] as number) + sign * weight;
  }
}

/** 32-bit FNV-1a over UTF-16 code units: stable across runs and platforms, which is all this needs. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** MurmurHash3's finaliser: spreads every input bit over the output, so the sign bit is independent of the bucket. */
function mix(value: number): number {
  let hash = value;
  hash ^= hash >>> 16;
  hash = Math.imul(hash, 0x85ebca6b);
  hash ^= hash >>> 13;
  hash = Math.imul(hash, 0xc2b2ae35);
  hash ^= hash >>> 16;
  return hash >>> 0;
}

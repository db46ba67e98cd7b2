import { describe, expect, it } from 'vitest';
import { HashingEmbedder } from './hashing-embedder.ts';

function cosine(left: Float32Array, right: Float32Array): number {
  let dot = 0;
  for (let index = 0; index < left.length; index++) dot += (left[index] as number) * (right[index] as number);
  return dot;
}

describe('HashingEmbedder', () => {
  it('is deterministic across instances and names its model by its size', async () => {
    const texts = ['The dentist moved the appointment to Friday', 'Bob wants an answer by Monday'];
    const [first] = await new HashingEmbedder().embed({ texts });
    const [again] = await new HashingEmbedder().embed({ texts });
    expect(first).toEqual(again);
    expect(first?.length).toBe(256);
    expect(new HashingEmbedder().model).toBe('hashing-v1-256');
    expect(new HashingEmbedder({ dimensions: 64 }).model).toBe('hashing-v1-64');
    // A checksum of the first vector: a change of the hashing fails here, and needs a new model id (hashing-v2-…)
    // so that cached vectors of the old one are not mixed with the new.
    const checksum = (first ?? new Float32Array()).reduce(
      (sum, value, index) => sum + Math.round(value * 1000) * (index + 1),
      0,
    );
    expect(checksum).toBe(-235224);
  });

  it('returns unit vectors, and a zero vector for text without words', () => {
    const embedder = new HashingEmbedder();
    const vector = embedder.embedOne('Alice Martin works at Acme');
    expect(cosine(vector, vector)).toBeCloseTo(1, 5);
    expect(embedder.embedOne('…, !').every((value) => value === 0)).toBe(true);
  });

  it('puts texts sharing words and word pairs closer than unrelated ones, and tolerates a typo', () => {
    const embedder = new HashingEmbedder();
    const query = embedder.embedOne('dentist appointment moved');
    const related = embedder.embedOne('The dentist moved my appointment to Friday afternoon');
    const unrelated = embedder.embedOne('Quarterly revenue report for the board meeting');
    const typo = embedder.embedOne('dentsit appointmnet');
    expect(cosine(query, related)).toBeGreaterThan(0.4);
    expect(Math.abs(cosine(query, unrelated))).toBeLessThan(0.2);
    expect(cosine(query, typo)).toBeGreaterThan(cosine(query, unrelated) + 0.1);
  });

  it('refuses a size out of range, naming it', () => {
    expect(() => new HashingEmbedder({ dimensions: 3 })).toThrow(/`dimensions`.*got `3`/);
  });
});

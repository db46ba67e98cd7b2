import { describe, expect, it } from 'vitest';
import { Bm25Index } from './bm25.ts';
import { tokenize } from './tokenize.ts';

function indexOf(documents: Array<{ title: string; text: string }>): Bm25Index {
  const index = new Bm25Index();
  documents.forEach((document, number) => {
    index.set(number, { title: tokenize(document.title), text: tokenize(document.text) });
  });
  return index;
}

describe('Bm25Index', () => {
  it('ranks the document with the rarer query word and more of the query first', () => {
    const index = indexOf([
      { title: 'Weekly newsletter', text: 'news about the appointment market and more news' },
      { title: 'Dentist', text: 'The dentist moved the appointment to Friday' },
      { title: 'Lunch', text: 'lunch on Friday with Bob' },
      { title: 'Groceries', text: 'milk, bread, friday' },
    ]);
    const hits = index.search(tokenize('dentist appointment friday'), { limit: 10 });
    expect(hits.map((hit) => hit.document)).toEqual(
      [1, 0, 2, 3].filter((number) => hits.some((hit) => hit.document === number)),
    );
    expect(hits[0]?.document).toBe(1);
  });

  it('weighs a word in the title above the same word in a long body', () => {
    const index = indexOf([
      { title: 'Notes', text: `invoice ${'filler '.repeat(40)}` },
      { title: 'Invoice', text: 'filler filler filler' },
    ]);
    expect(index.search(['invoice'], { limit: 2 }).map((hit) => hit.document)).toEqual([1, 0]);
  });

  it('forgets a removed document and re-indexes a replaced one', () => {
    const index = indexOf([
      { title: 'a', text: 'alpha beta' },
      { title: 'b', text: 'beta gamma' },
    ]);
    index.remove(0);
    expect(index.search(['alpha'], { limit: 5 })).toEqual([]);
    index.set(1, { title: [], text: ['alpha'] });
    expect(index.search(['gamma'], { limit: 5 })).toEqual([]);
    expect(index.search(['alpha'], { limit: 5 }).map((hit) => hit.document)).toEqual([1]);
    expect(index.size).toBe(1);
  });

  it('filters with accept before the limit, and counts a repeated query word once', () => {
    const index = indexOf([
      { title: '', text: 'x x x' },
      { title: '', text: 'x' },
      { title: '', text: 'x y' },
    ]);
    const once = index.search(['x'], { limit: 5 });
    expect(index.search(['x', 'x'], { limit: 5 })).toEqual(once);
    expect(index.search(['x'], { limit: 1, accept: (document) => document === 2 }).map((hit) => hit.document)).toEqual([
      2,
    ]);
  });
});

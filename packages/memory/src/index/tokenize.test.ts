import { describe, expect, it } from 'vitest';
import { stem, tokenize, words } from './tokenize.ts';

describe('tokenize', () => {
  it('lower-cases unicode letters and digits, drops stop words and strips plurals', () => {
    expect(tokenize('The Dentist moved the appointments to Friday, 14:00 — Zoë’s café!')).toEqual([
      'dentist',
      'moved',
      'appointment',
      'friday',
      '14',
      '00',
      'zoë',
      's',
      'café',
    ]);
  });

  it('splits addresses and handles into their words, keeping stop words in `words`', () => {
    expect(tokenize('alice@acme.com @alice-a')).toEqual(['alice', 'acme', 'com', 'alice']);
    expect(words('It is A test')).toEqual(['it', 'is', 'a', 'test']);
  });

  it('stems plurals lightly and leaves words that only look plural', () => {
    expect(['replies', 'addresses', 'meetings', 'news', 'bus', 'analysis', 'class', 'gas'].map(stem)).toEqual([
      'reply',
      'address',
      'meeting',
      'new',
      'bus',
      'analysis',
      'class',
      'gas',
    ]);
  });
});

import { describe, expect, it } from 'vitest';
import { matchesWhere, parseWhereFlag } from './note-query.ts';

const data = {
  status: 'new',
  uid: 42,
  date: '2026-11-22T12:00:00Z',
  classifications: { human: 0.91 },
  tags: ['a', 'b'],
};

describe('matchesWhere', () => {
  it('checks equality, ranges, exists and nested keys', () => {
    expect(matchesWhere(data, { status: 'new', uid: 42 })).toBe(true);
    expect(matchesWhere(data, { status: 'old' })).toBe(false);
    expect(matchesWhere(data, { 'classifications.human': { gte: 0.9 } })).toBe(true);
    expect(matchesWhere(data, { 'classifications.human': { lt: 0.9 } })).toBe(false);
    expect(matchesWhere(data, { date: { gte: '2026-11-01', lt: '2026-12-01' } })).toBe(true);
    expect(matchesWhere(data, { archived: { exists: false }, status: { exists: true } })).toBe(true);
    expect(matchesWhere(data, { tags: ['a', 'b'], status: { in: ['new', 'read'] }, uid: { ne: 1 } })).toBe(true);
    expect(matchesWhere(data, { uid: { gt: '40' } })).toBe(false); // a number is not compared with a string
  });
});

describe('parseWhereFlag', () => {
  it('reads the CLI forms', () => {
    expect(parseWhereFlag('status=new')).toEqual(['status', 'new']);
    expect(parseWhereFlag('uid=42')).toEqual(['uid', 42]);
    expect(parseWhereFlag('classifications.human>=0.8')).toEqual(['classifications.human', { gte: 0.8 }]);
    expect(parseWhereFlag('date<2026-12-01')).toEqual(['date', { lt: '2026-12-01' }]);
    expect(parseWhereFlag('archived?')).toEqual(['archived', { exists: true }]);
    expect(parseWhereFlag('!archived?')).toEqual(['archived', { exists: false }]);
    expect(parseWhereFlag('done!=true')).toEqual(['done', { ne: true }]);
    expect(() => parseWhereFlag('nonsense')).toThrow(/is not a condition/);
  });
});

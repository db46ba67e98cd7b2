import { describe, expect, it } from 'vitest';
import { buildReport, type FetchedPage, reportMarkdown } from './research-report.ts';

const page = (n: number, path: string): FetchedPage => ({
  n,
  url: `https://tea.example/${path}`,
  finalUrl: `https://tea.example/${path}`,
  title: `Page ${path}`,
  retrievedAt: '2026-01-02T03:04:05.000Z',
});

describe('buildReport', () => {
  it('keeps only citations of pages fetched in this run, renumbered in order of first citation', () => {
    const pages = [page(1, 'a'), page(2, 'b'), page(3, 'c')];
    const report = buildReport({
      pages,
      maxSources: 5,
      finish: {
        answer: 'C says so [3], and B agrees [2] [9].',
        findings: [
          { text: 'From B [2].', sources: [2] },
          { text: 'Invented.', sources: [9] },
        ],
        sources: [
          { n: 3, url: 'https://tea.example/c#top' },
          { n: 2, url: 'https://tea.example/b' },
          { n: 9, url: 'https://elsewhere.example/' },
        ],
      },
    });
    expect(report.answer).toBe('C says so [1], and B agrees [2].');
    expect(report.findings).toEqual([
      { text: 'From B.', sources: [2] },
      { text: 'Invented.', sources: [] },
    ]);
    expect(report.sources.map((source) => [source.n, source.url])).toEqual([
      [1, 'https://tea.example/c'],
      [2, 'https://tea.example/b'],
    ]);
    expect(report.also_read.map((source) => source.url)).toEqual(['https://tea.example/a']);
    expect(report.unverified).toEqual(['https://elsewhere.example/']);
    const markdown = reportMarkdown('Which?', report);
    expect(markdown).toContain(
      '1. [Page c](<https://tea.example/c>) — https://tea.example/c, retrieved 2026-01-02T03:04:05.000Z',
    );
    expect(markdown).toContain('- Invented. (no source fetched in this run supports it)');
  });

  it('drops the target of a citation written as a link, so a number only ever points to a fetched page', () => {
    const report = buildReport({
      pages: [page(1, 'a')],
      maxSources: 5,
      finish: {
        answer: 'A says so [1](https://attacker.example/).',
        findings: [{ text: 'Also [1](https://attacker.example/x) here.', sources: [1] }],
      },
    });
    expect(report.answer).toBe('A says so [1].');
    expect(report.findings).toEqual([{ text: 'Also here.', sources: [1] }]);
    expect(reportMarkdown('Which?', report)).not.toContain('attacker');
  });

  it('does not let a source list move a number to a page it is not, and caps the sources', () => {
    const pages = [page(1, 'a'), page(2, 'b')];
    const report = buildReport({
      pages,
      maxSources: 1,
      finish: { answer: 'A [1] and B [2].', findings: [], sources: [{ n: 1, url: 'https://tea.example/b' }] },
    });
    // [1] is claimed for B's URL, which this run fetched as page 2: it cites B. [2] then names B too.
    expect(report.sources.map((source) => source.url)).toEqual(['https://tea.example/b']);
    expect(report.answer).toBe('A [1] and B [1].');
  });
});

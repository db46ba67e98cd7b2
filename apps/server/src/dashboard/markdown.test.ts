import { describe, expect, it } from 'vitest';
import { noteLinkTarget, notePageUrl, renderNoteMarkdown } from './markdown.ts';

describe('renderNoteMarkdown', () => {
  it('renders raw HTML as text and leaves script links inert', () => {
    const out = renderNoteMarkdown(
      '<script>alert(1)</script>\n\n"><img src=x onerror=alert(1)>\n\n[x](javascript:alert(1)) [y](JAVASCRIPT:alert(1)) [z](data:text/html,hi)\n',
      'a.md',
    ).toString();
    expect(out).not.toContain('<script');
    expect(out).not.toContain('<img');
    expect(out).toContain('&lt;script&gt;');
    expect(out).not.toMatch(/href="(javascript|data):/i);
    expect(out).toContain('[x](javascript:alert(1))');
  });

  it('gives every link rel=noopener noreferrer and points relative links at note pages', () => {
    const out = renderNoteMarkdown(
      '[web](https://example.org) [sibling](other.md) [up](../top.md#part) [root](/x/y.md) [out](../../../etc/passwd) ![pixel](https://tracker.example/p.gif)\n',
      'mail/in/a.md',
    ).toString();
    expect(out).toContain('<a href="https://example.org" rel="noopener noreferrer">web</a>');
    expect(out).toContain('<a href="/notes/mail/in/other.md" rel="noopener noreferrer">sibling</a>');
    expect(out).toContain('<a href="/notes/mail/top.md#part" rel="noopener noreferrer">up</a>');
    expect(out).toContain('<a href="/notes/x/y.md" rel="noopener noreferrer">root</a>');
    expect(out).toContain('<a rel="noopener noreferrer">out</a>');
    expect(out).not.toContain('<img');
    expect(out).toContain('<a href="https://tracker.example/p.gif" rel="noopener noreferrer">pixel</a>');
  });
});

describe('note links', () => {
  it('encodes each path segment', () => {
    expect(notePageUrl('a b/c?d.md')).toBe('/notes/a%20b/c%3Fd.md');
    expect(notePageUrl('a.md', { edit: true })).toBe('/notes/a.md?edit');
    expect(noteLinkTarget('a/b.md', 'c%20d.md')).toBe('/notes/a/c%20d.md');
    expect(noteLinkTarget('a/b.md', '../..')).toBeUndefined();
    expect(noteLinkTarget('a/b.md', '..')).toBe('/notes');
  });
});

import { describe, expect, it } from 'vitest';
import { readPage } from './read-page.ts';

describe('readPage', () => {
  it('extracts the article of an HTML page with its title and absolute links, without scripts or chrome', () => {
    const body = `<html><head><title>Steeping guide</title><script>alert("x")</script></head><body>
      <nav><a href="/">Home</a> <a href="javascript:void(0)">Menu</a></nav>
      <article><h1>Steeping guide</h1><p>${'Steep green tea at 75 degrees for two minutes. '.repeat(12)}</p>
      <p><a href="other.html#part">Other teas</a></p></article><footer>Cookie banner</footer></body></html>`;
    const page = readPage({ body, contentType: 'text/html', url: 'https://tea.example/guide/', maxChars: 10_000 });
    expect(page.title).toBe('Steeping guide');
    expect(page.text).toContain('Steep green tea at 75 degrees');
    expect(page.text).not.toContain('alert');
    expect(page.text).not.toContain('Cookie banner');
    expect(page.links).toEqual([
      { text: 'Home', url: 'https://tea.example/' },
      { text: 'Other teas', url: 'https://tea.example/guide/other.html' },
    ]);
    expect(page.truncated).toBe(false);
  });

  it('passes plain text through, cut at maxChars', () => {
    const page = readPage({
      body: 'one\n\n\ntwo   three',
      contentType: 'text/plain',
      url: 'https://x.example/',
      maxChars: 7,
    });
    expect(page).toEqual({ title: '', text: 'one\ntwo', truncated: true, links: [] });
  });
});

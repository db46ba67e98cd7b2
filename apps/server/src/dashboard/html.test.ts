import { describe, expect, it } from 'vitest';
import { html, queryString, trustedHtml } from './html.ts';

describe('html', () => {
  it('escapes interpolated text, in content and in attributes', () => {
    const subject = `<script>alert("x")</script>&'`;
    expect(html`<p title="${subject}">${subject}</p>`.toString()).toBe(
      '<p title="&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;</p>',
    );
  });

  it('keeps nested markup and lists of it, and drops nothing-values', () => {
    const items = ['a<b', 'c'].map((item) => html`<li>${item}</li>`);
    expect(html`<ul>${items}${null}${undefined}${false}</ul>${0}`.toString()).toBe(
      '<ul><li>a&lt;b</li><li>c</li></ul>0',
    );
    expect(html`${trustedHtml('<em>x</em>')}`.toString()).toBe('<em>x</em>');
  });

  it('builds query strings from the defined values only', () => {
    expect(queryString({ state: 'done', q: '', type: undefined, page: 2 })).toBe('?state=done&page=2');
    expect(queryString({})).toBe('');
  });
});

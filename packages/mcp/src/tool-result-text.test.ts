import { describe, expect, it } from 'vitest';
import { capText, toolResultText } from './tool-result-text.ts';

describe('toolResultText', () => {
  it('joins text content and describes images and binary resources instead of inlining them', () => {
    const text = toolResultText({
      content: [
        { type: 'text', text: 'first' },
        { type: 'image', data: Buffer.alloc(3000).toString('base64'), mimeType: 'image/png' },
        { type: 'resource', resource: { uri: 'file:///a.txt', mimeType: 'text/plain', text: 'inside' } },
        { type: 'resource', resource: { uri: 'file:///b.bin', blob: Buffer.alloc(10).toString('base64') } },
        { type: 'resource_link', uri: 'file:///c', name: 'c' },
      ],
    });
    expect(text).toBe(
      [
        'first',
        '[image: image/png, 2.9 KiB, not shown]',
        '[resource file:///a.txt, text/plain]\ninside',
        '[binary resource file:///b.bin, 10 bytes, not shown]',
        '[resource link: file:///c (c)]',
      ].join('\n'),
    );
  });

  it('gives structured content as JSON when there is no content', () => {
    expect(toolResultText({ content: [], structuredContent: { sum: 3 } })).toBe('{"sum":3}');
  });

  it('cuts a long result and says how much there was', () => {
    const text = toolResultText({ content: [{ type: 'text', text: 'a'.repeat(25_000) }] });
    expect(text.startsWith('a'.repeat(20_000))).toBe(true);
    expect(text).toContain('[cut: the result has 25000 characters; only the first 20000 are shown]');
    expect(text.length).toBeLessThan(20_200);
  });

  it('leaves a result within the cap alone', () => {
    expect(capText('short', 10)).toBe('short');
    expect(toolResultText({ content: [{ type: 'text', text: 'b'.repeat(50) }] }, 50)).toBe('b'.repeat(50));
  });
});

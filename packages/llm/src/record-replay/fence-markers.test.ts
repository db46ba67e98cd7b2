import { describe, expect, it } from 'vitest';
import { fenceUntrusted } from '../prompts/fence-untrusted.ts';
import { fixtureKey } from './fixture-files.ts';
import { recognizeModelRequest } from './wire-formats.ts';

function keyOf(content: string, system: string): string {
  const body = {
    model: 'm',
    messages: [
      { role: 'system', content: system },
      { role: 'user', content },
    ],
  };
  const request = recognizeModelRequest({ method: 'POST', url: 'https://x/v1/chat/completions', body });
  if (request === undefined) throw new Error('not recognised');
  return fixtureKey({ provider: 'test', canonical: request.canonical });
}

describe('the key of a request with fenced text', () => {
  it('is the same whatever random marker each fence drew, and differs when the fenced text does', () => {
    const fence = (body: string) => fenceUntrusted({ body }, {});
    const first = fence('Dinner on Thursday?');
    const second = fence('Dinner on Thursday?');
    expect(first.marker).not.toBe(second.marker);

    expect(keyOf(first.text, first.instruction)).toBe(keyOf(second.text, second.instruction));
    const other = fence('Lunch on Friday?');
    expect(keyOf(other.text, other.instruction)).not.toBe(keyOf(first.text, first.instruction));
  });

  it('keeps two fences of one request apart', () => {
    const a = fenceUntrusted({ body: 'same' }, { nonce: '0123456789abcdef' });
    const b = fenceUntrusted({ body: 'same' }, { nonce: 'fedcba9876543210' });
    // Swapping which marker the instruction names is a different request.
    expect(keyOf(`${a.text}\n${b.text}`, a.instruction)).not.toBe(keyOf(`${a.text}\n${b.text}`, b.instruction));
  });
});

import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { errorCodes, isErrorCode } from './codes.ts';

const errorsDoc = new URL('../../../docs/errors.md', import.meta.url);

describe('errorCodes', () => {
  it('has a section in docs/errors.md for every code, and no section for a code that does not exist', async () => {
    const text = await readFile(errorsDoc, 'utf8');
    const documented = [...text.matchAll(/^### ([A-Z_]+)$/gm)].map((match) => match[1]);
    expect(documented.toSorted()).toEqual(Object.keys(errorCodes).toSorted());
  });

  it('recognises registered codes only', () => {
    expect(isErrorCode('CONFIG_INVALID')).toBe(true);
    expect(isErrorCode('toString')).toBe(false);
    expect(isErrorCode(404)).toBe(false);
  });
});

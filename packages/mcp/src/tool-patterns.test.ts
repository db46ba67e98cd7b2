import { describe, expect, it } from 'vitest';
import { isToolAllowed, matchesToolPattern } from './tool-patterns.ts';

describe('matchesToolPattern', () => {
  it('matches exact names and * globs, nothing else', () => {
    expect(matchesToolPattern('read_file', ['read_file'])).toBe(true);
    expect(matchesToolPattern('read_text_file', ['read_*'])).toBe(true);
    expect(matchesToolPattern('list_directory', ['*_directory'])).toBe(true);
    expect(matchesToolPattern('anything', ['*'])).toBe(true);
    expect(matchesToolPattern('write_file', ['read_*'])).toBe(false);
    expect(matchesToolPattern('readXfile', ['read.file'])).toBe(false);
    expect(matchesToolPattern('Read_file', ['read_*'])).toBe(false);
    expect(matchesToolPattern('x', [])).toBe(false);
  });
});

describe('isToolAllowed', () => {
  it('offers what allow matches and deny does not', () => {
    const rules = { allow: ['*'], deny: ['write_*', 'move_file'] };
    expect(isToolAllowed('read_text_file', rules)).toBe(true);
    expect(isToolAllowed('write_file', rules)).toBe(false);
    expect(isToolAllowed('move_file', rules)).toBe(false);
    expect(isToolAllowed('echo', { allow: ['get_*'], deny: [] })).toBe(false);
  });
});

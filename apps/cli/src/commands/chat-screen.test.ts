import { describe, expect, it } from 'vitest';
import { displayWidth, lastRow, plainScreen, terminalSafe } from './chat-screen.ts';

describe('the chat screen', () => {
  it('keeps control characters of a reply from the terminal, but its line breaks', () => {
    expect(terminalSafe('a\tb\r\nc\x1b[2J\x1b]0;owned\x07d\x07\x9be\n')).toBe('a    b\ncde\n');
  });

  it('knows the last row an unfinished line takes, wide characters wrapping whole', () => {
    expect(lastRow('', 10)).toBe('');
    expect(lastRow('0123456789', 10)).toBe('0123456789');
    expect(lastRow('0123456789ab', 10)).toBe('ab');
    // Two columns each: the fifth does not fit on a row of nine and starts the next one.
    expect(lastRow('日本語日本', 9)).toBe('本');
    expect(displayWidth('\x1b[2mdim\x1b[22m é')).toBe(5);
  });

  it('piped, ends an unfinished streamed line before a whole one', () => {
    let out = '';
    const screen = plainScreen({ write: (text: string) => (out += text) });
    screen.stream('assistant> Hel');
    screen.stream('lo');
    screen.line('  · search done');
    screen.endLine();
    screen.stream('more\n');
    screen.endLine();
    expect(out).toBe('assistant> Hello\n  · search done\nmore\n');
  });
});

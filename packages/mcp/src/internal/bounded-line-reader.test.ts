import { describe, expect, it } from 'vitest';
import { BoundedLineReader } from './bounded-line-reader.ts';
import { sniffResponseId } from './response-too-large.ts';

const bytes = (text: string) => Buffer.from(text, 'utf8');

describe('BoundedLineReader', () => {
  it('splits lines across chunks, dropping a trailing CR', () => {
    const reader = new BoundedLineReader({ maxLineBytes: 100 });
    expect(reader.push(bytes('{"a":1}\r\n{"b"'))).toEqual([{ type: 'line', text: '{"a":1}' }]);
    expect(reader.push(bytes(':2}\n\n'))).toEqual([
      { type: 'line', text: '{"b":2}' },
      { type: 'line', text: '' },
    ]);
  });

  it('drops a line past the limit without throwing, keeps its ends, and reads the next line', () => {
    const reader = new BoundedLineReader({ maxLineBytes: 1_000 });
    const long = `{"result":"${'x'.repeat(5_000)}","jsonrpc":"2.0","id":7}`;
    const lines = [];
    for (let start = 0; start < long.length; start += 300)
      lines.push(...reader.push(bytes(long.slice(start, start + 300))));
    expect(lines).toEqual([]);
    const [dropped, next] = reader.push(bytes('\n{"ok":true}\n'));
    expect(dropped).toMatchObject({ type: 'oversized', bytes: long.length });
    if (dropped?.type !== 'oversized') throw new Error('expected the long line dropped');
    expect(dropped.head.startsWith('{"result":"xxx')).toBe(true);
    expect(dropped.tail.endsWith('"jsonrpc":"2.0","id":7}')).toBe(true);
    expect(sniffResponseId(dropped.head, dropped.tail)).toBe(7);
    expect(next).toEqual({ type: 'line', text: '{"ok":true}' });
  });

  it('takes a line of exactly the limit', () => {
    const reader = new BoundedLineReader({ maxLineBytes: 4 });
    expect(reader.push(bytes('abcd\nabcde\n'))).toEqual([
      { type: 'line', text: 'abcd' },
      { type: 'oversized', bytes: 5, head: 'abcde', tail: 'abcde' },
    ]);
  });
});

describe('sniffResponseId', () => {
  it('reads an id written first or last, and nothing from a line that names none', () => {
    expect(sniffResponseId('{"jsonrpc":"2.0","id":"call-1","result":{"content', 'xx"}]}}')).toBe('call-1');
    expect(sniffResponseId('{"result":', 'xx"}]},"jsonrpc":"2.0","id":12}\r')).toBe(12);
    expect(sniffResponseId('{"method":"notifications/message","params":{', 'xx"}}')).toBeUndefined();
  });
});

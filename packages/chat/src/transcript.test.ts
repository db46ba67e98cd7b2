import { readFile } from 'node:fs/promises';
import { splitNote } from '@assistant/notes';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newMessageId } from './message-id.ts';
import { appendSection, normaliseText, parseTranscript, renderSection, type TranscriptMessage } from './transcript.ts';

const at = '2026-11-23T18:47:26.123Z';

describe('renderSection and parseTranscript', () => {
  it('reads back user and assistant messages with reply_to, status and folded tool steps', () => {
    const messages: TranscriptMessage[] = [
      { id: 'm1', role: 'user', text: "What's urgent?", at },
      {
        id: 'm2',
        role: 'assistant',
        text: 'Two things:\n\n- the invoice\n- the dentist',
        at,
        reply_to: ['m1'],
        status: 'complete',
        steps: [
          { tool: 'search_notes', summary: '{"q":"urgent"} → 3 notes' },
          { tool: 'read_note', summary: 'mail/1.md' },
        ],
      },
      { id: 'm3', role: 'assistant', text: 'I was saying', at, reply_to: ['m4', 'm5'], status: 'partial' },
    ];
    const body = messages.map(renderSection).reduce(appendSection, '');
    expect(body).toContain('### assistant · 2026-11-23T18:47:26.123Z · m2\nreply_to: m1 · status: complete\n');
    expect(body).toContain('<details><summary>2 tool steps</summary>');
    expect(parseTranscript(body, { path: 'chats/c.md', firstLine: 1 })).toEqual({ messages, problems: [] });
  });

  it('round-trips any text, including lines that look like headings or tool-step blocks', () => {
    const line = fc.oneof(
      fc.string(),
      fc.constantFrom('### user · 2026-11-23T18:47:26.123Z · m9', '\\### x', '<details><summary>1 tool step</summary>'),
      fc.constantFrom('</details>', '', '  ', 'reply_to: m1 · status: complete'),
    );
    const text = fc.array(line, { maxLength: 6 }).map((lines) => lines.join('\n'));
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom('user', 'assistant', 'system'), text), { maxLength: 5 }),
        (parts) => {
          const messages = parts.map(([role, content]): TranscriptMessage => {
            const base = { id: newMessageId(), role, text: normaliseText(content), at };
            return role === 'assistant' ? { ...base, reply_to: [], status: 'complete' } : base;
          });
          const body = messages.map(renderSection).reduce(appendSection, '# notes a person wrote\n');
          expect(parseTranscript(body, { path: 'chats/c.md', firstLine: 1 })).toEqual({ messages, problems: [] });
        },
      ),
    );
  });

  it('reports a section a person broke, with its file line, and still reads the others', () => {
    const body = [
      renderSection({ id: 'm1', role: 'user', text: 'hello', at }),
      '### usr · 2026-11-23T18:47:26.123Z · m2\n\nbroken role\n',
      '### assistant · yesterday · m3\nreply_to: m1 · status: complete\n\nbad time\n',
      '### assistant · 2026-11-23T18:47:26.123Z · m4\nreply_to m1\n\nbad attributes\n',
      renderSection({ id: 'm5', role: 'user', text: 'still here', at }),
      renderSection({ id: 'm5', role: 'user', text: 'twice', at }),
    ].reduce(appendSection, '');
    const { messages, problems } = parseTranscript(body, { path: 'chats/c.md', firstLine: 10 });
    expect(messages.map((message) => message.id)).toEqual(['m1', 'm5']);
    expect(problems).toEqual([
      { path: 'chats/c.md', line: 14, message: expect.stringContaining('unknown role `usr`') },
      { path: 'chats/c.md', line: 18, message: expect.stringContaining('time `yesterday`') },
      { path: 'chats/c.md', line: 24, message: expect.stringContaining('reply_to: <ids>') },
      { path: 'chats/c.md', line: 32, message: expect.stringContaining('appears twice') },
    ]);
  });
});

describe('the transcript example in docs/chat.md', () => {
  it('reads back without problems', async () => {
    const doc = await readFile(new URL('../../../docs/chat.md', import.meta.url), 'utf8');
    const example = /```markdown\n([\s\S]*?)```/.exec(doc)?.[1] ?? '';
    const { messages, problems } = parseTranscript(splitNote(example).body, { path: 'docs/chat.md', firstLine: 1 });
    expect(problems).toEqual([]);
    expect(messages.map((message) => [message.role, message.reply_to, message.steps?.length])).toEqual([
      ['user', undefined, undefined],
      ['assistant', ['m0mwtkmevk00003c1e'], 2],
    ]);
  });
});

describe('newMessageId', () => {
  it('grows strictly within a process, also when the clock stands still or steps back', () => {
    const ids = [newMessageId(5000), newMessageId(5000), newMessageId(4000), newMessageId(5001)];
    expect(ids.toSorted()).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
  });
});

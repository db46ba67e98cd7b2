import { describe, expect, it } from 'vitest';
import { DiscordAdapter } from './discord-adapter.ts';
import { DiscordAPIError, DiscordGatewayError, HTTPError } from './discord-api.ts';
import { formatDiscord, splitDiscord } from './discord-format.ts';

describe('formatDiscord', () => {
  it('keeps the markdown Discord shows as the model meant it, links as written', () => {
    const text =
      '# Title\n**bold**, *italic*, ~~gone~~, `code`, [the docs](https://example.com/a_b_c)\n> quoted\n- item';
    expect(formatDiscord(text)).toBe(text);
  });

  it('rewrites what Discord reads otherwise, outside code only', () => {
    expect(formatDiscord('__bold__ and ||not a spoiler||')).toBe('**bold** and \\|\\|not a spoiler\\|\\|');
    expect(formatDiscord('#### Deep heading')).toBe('**Deep heading**');
    expect(formatDiscord('-# not small')).toBe('\\-# not small');
    expect(formatDiscord('`__x__ || y`')).toBe('`__x__ || y`');
    expect(formatDiscord('```py\n__init__ || x\n#### y\n```')).toBe('```py\n__init__ || x\n#### y\n```');
    expect(formatDiscord('snake_case_name stays')).toBe('snake_case_name stays');
  });
});

describe('splitDiscord', () => {
  it('leaves a text within the limit whole', () => {
    expect(splitDiscord('short', 2000)).toEqual(['short']);
  });

  it('splits plain text at line breaks into pieces within the limit that join to the text', () => {
    const text = Array.from({ length: 100 }, (_, line) => `line ${line}: ${'é'.repeat(40)}`).join('\n');
    const pieces = splitDiscord(text, 500);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) expect(Array.from(piece).length).toBeLessThanOrEqual(500);
    expect(pieces.join('')).toBe(text);
    for (const piece of pieces.slice(0, -1)) expect(piece.endsWith('\n')).toBe(true);
  });

  it('cuts a line longer than a message', () => {
    const text = 'x'.repeat(4500);
    const pieces = splitDiscord(text, 2000);
    expect(pieces.map((piece) => piece.length)).toEqual([2000, 2000, 500]);
  });

  it('closes a code block cut in two and reopens it, with its language, in the next message', () => {
    const code = Array.from({ length: 60 }, (_, line) => `const value${line} = ${line};`).join('\n');
    const text = `Here:\n\`\`\`ts\n${code}\n\`\`\`\nDone.`;
    const pieces = splitDiscord(text, 400);
    expect(pieces.length).toBeGreaterThan(2);
    for (const piece of pieces) {
      expect(Array.from(piece).length).toBeLessThanOrEqual(400);
      // Every message has its fences paired: it shows as code on its own.
      expect((piece.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    for (const piece of pieces.slice(1)) expect(piece.startsWith('```ts\n') || piece.startsWith('Done')).toBe(true);
    // Nothing of the code is lost: the lines of the pieces, fences aside, are the text's.
    const lines = (all: string) => all.split('\n').filter((line) => !line.startsWith('```') && line !== '');
    expect(pieces.flatMap(lines)).toEqual(lines(text));
    expect(pieces.at(-1)?.endsWith('Done.')).toBe(true);
  });
});

describe('the Discord errors', () => {
  it('are taken as the runner needs them', () => {
    // classify reads nothing of the adapter's state.
    const adapter = Object.create(DiscordAdapter.prototype) as DiscordAdapter;
    const request = { body: undefined, files: undefined };
    const apiError = (status: number) =>
      new DiscordAPIError({ message: 'x', code: 0 }, 0, status, 'POST', 'http://127.0.0.1/api/v10/x', request);
    expect(adapter.classify(apiError(401)).kind).toBe('bad_credentials');
    expect(JSON.stringify(adapter.classify(apiError(401)))).toContain('check discord.token');
    expect(adapter.classify(apiError(400))).toEqual({ kind: 'refused' });
    expect(adapter.classify(apiError(403))).toEqual({ kind: 'refused' });
    expect(adapter.classify(apiError(429))).toEqual({ kind: 'transient' });
    expect(adapter.classify(new HTTPError(502, 'Bad Gateway', 'GET', 'http://x', request))).toEqual({
      kind: 'transient',
    });
    expect(adapter.classify(new TypeError('fetch failed'))).toEqual({ kind: 'transient' });
    expect(adapter.classify(new DiscordGatewayError(4004, 'Authentication failed', false)).kind).toBe(
      'bad_credentials',
    );
    expect(adapter.classify(new DiscordGatewayError(0, 'no connection', true))).toEqual({ kind: 'transient' });
    expect(adapter.classify(new DiscordGatewayError(4014, 'Used disallowed intents', false))).toEqual({
      kind: 'refused',
    });
  });
});

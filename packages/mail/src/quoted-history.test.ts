import { describe, expect, it } from 'vitest';
import { withoutQuotedHistory } from './quoted-history.ts';

describe('withoutQuotedHistory', () => {
  it('drops quoted lines and the attribution before them, keeping what the message says', () => {
    const body = [
      'Thursday works for me.',
      '',
      'On Mon, 3 Mar 2026 at 10:00, Ana <ana@example.test> wrote:',
      '',
      '> Can we meet this week?',
      '> > Earlier thread',
      '',
      'Best, Bo',
    ].join('\n');
    expect(withoutQuotedHistory(body)).toBe('Thursday works for me.\n\nBest, Bo');
  });

  it('keeps a line ending in "wrote:" that quotes nothing', () => {
    expect(withoutQuotedHistory('Here is what she wrote:\nthe plan is fine')).toBe(
      'Here is what she wrote:\nthe plan is fine',
    );
  });
});

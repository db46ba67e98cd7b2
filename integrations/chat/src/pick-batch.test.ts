import type { ChatMode, InboxMessage } from '@assistant/chat';
import { describe, expect, it } from 'vitest';
import { effectiveMode, pickBatch } from './pick-batch.ts';

const message = (id: string, mode?: ChatMode): InboxMessage => ({
  id,
  conversationId: 'c1',
  text: id,
  at: '2026-11-23T18:00:00.000Z',
  ...(mode ? { mode } : {}),
});
const ids = (batch: InboxMessage[]) => batch.map((found) => found.id);

describe('pickBatch', () => {
  it('takes the oldest pending message alone when its mode is followup', () => {
    expect(ids(pickBatch([message('m1'), message('m2')], 'followup', 20))).toEqual(['m1']);
    expect(ids(pickBatch([message('m1', 'followup'), message('m2')], 'collect', 20))).toEqual(['m1']);
  });

  it('otherwise takes it and the following messages that are not followup, up to collect_max', () => {
    const pending = [message('m1'), message('m2', 'steer'), message('m3'), message('m4')];
    expect(ids(pickBatch(pending, 'collect', 20))).toEqual(['m1', 'm2', 'm3', 'm4']);
    expect(ids(pickBatch(pending, 'collect', 3))).toEqual(['m1', 'm2', 'm3']);
    expect(ids(pickBatch(pending, 'interrupt', 1))).toEqual(['m1']);
    // A followup message ends the batch: it waits for its own turn, and so does everything after it.
    const broken = [message('m1'), message('m2'), message('m3', 'followup'), message('m4')];
    expect(ids(pickBatch(broken, 'steer', 20))).toEqual(['m1', 'm2']);
    expect(ids(pickBatch([message('m1', 'collect'), message('m2')], 'followup', 20))).toEqual(['m1']);
  });

  it('picks nothing from nothing; a message’s own mode wins over the conversation’s', () => {
    expect(pickBatch([], 'collect', 20)).toEqual([]);
    expect(effectiveMode(message('m1', 'steer'), 'followup')).toBe('steer');
    expect(effectiveMode(message('m1'), 'interrupt')).toBe('interrupt');
  });
});

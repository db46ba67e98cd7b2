import { describe, expect, it } from 'vitest';
import { maxTimerDelayMs, timerDelayMs } from './timer-delay.ts';

describe('timerDelayMs', () => {
  it('keeps delays a timer can hold and caps longer ones at the longest it can', () => {
    expect(timerDelayMs(250)).toBe(250);
    expect(timerDelayMs(maxTimerDelayMs)).toBe(maxTimerDelayMs);
    expect(timerDelayMs(30 * 86_400_000)).toBe(maxTimerDelayMs);
    expect(timerDelayMs(-5)).toBe(0);
  });
});

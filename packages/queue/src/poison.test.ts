import { describe, expect, it } from 'vitest';
import { decideAfterWorkerDied } from './poison.ts';

const died = { error: { type: 'WorkerDied', message: 'worker died: w1 stopped while running it' } };
const threw = { error: { type: 'RetryableError', message: 'the server answered 503' } };

describe('decideAfterWorkerDied', () => {
  it('runs a task again after its first worker death, whatever else failed before', () => {
    expect(decideAfterWorkerDied([died])).toEqual({ outcome: 'requeue' });
    expect(decideAfterWorkerDied([threw, threw, died])).toEqual({ outcome: 'requeue' });
    expect(decideAfterWorkerDied([])).toEqual({ outcome: 'requeue' });
  });

  it('fails it as poison at the second death, counting deaths only, with their number in the reason', () => {
    expect(decideAfterWorkerDied([died, threw, died])).toEqual({
      outcome: 'poisoned',
      error: { type: 'PoisonTask', message: 'poison: its worker died while running it 2 times' },
    });
    // A task retried by hand (`task retry`) after it was poisoned keeps its history: the next death poisons it again.
    expect(decideAfterWorkerDied([died, died, died])).toMatchObject({
      error: { message: 'poison: its worker died while running it 3 times' },
    });
  });
});

import { describe, expect, it } from 'vitest';
import { countThroughput, describeThroughput, renderSparkline } from './sparkline.ts';

describe('throughput sparkline', () => {
  const nowMs = Date.UTC(2026, 10, 23, 12, 0, 0);

  it('counts finished tasks per minute over the last hour and leaves out older and future ones', () => {
    const throughput = countThroughput(
      [
        { state: 'done', finishedAtMs: nowMs - 10 },
        { state: 'done', finishedAtMs: nowMs - 20 },
        { state: 'failed', finishedAtMs: nowMs - 59 * 60_000 - 30_000 },
        { state: 'done', finishedAtMs: nowMs - 61 * 60_000 },
        { state: 'done', finishedAtMs: nowMs + 1_000 },
      ],
      { nowMs },
    );
    expect(throughput.minutes).toHaveLength(60);
    expect(throughput.minutes.at(-1)).toEqual({ done: 2, failed: 0 });
    expect(throughput.minutes[0]).toEqual({ done: 0, failed: 1 });
    expect(describeThroughput(throughput)).toBe('2 done, 1 failed in the last hour');
  });

  it('draws an SVG with a text alternative and no style attribute', () => {
    const svg = renderSparkline(countThroughput([{ state: 'failed', finishedAtMs: nowMs - 1 }], { nowMs })).toString();
    expect(svg).toMatch(/^<svg [^>]*role="img" aria-label="0 done, 1 failed in the last hour"/);
    expect(svg).toContain('<title>0 done, 1 failed in the last hour</title>');
    expect(svg).toContain('class="spark-failed"');
    expect(svg).not.toContain('style=');
    const empty = renderSparkline(countThroughput([], { nowMs })).toString();
    expect(empty).not.toContain('<rect');
  });
});

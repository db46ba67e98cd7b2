import { html, type SafeHtml } from './html.ts';

/** Finished tasks per minute over a window: the overview's throughput chart. */
export interface Throughput {
  /** Oldest minute first; each holds the tasks that finished in it. */
  minutes: { done: number; failed: number }[];
  done: number;
  failed: number;
}

/**
 * Counts finish times into one bucket per minute of the `minutes` minutes before `nowMs` (the last bucket is the
 * current minute). Times outside the window are left out.
 */
export function countThroughput(
  finished: readonly { state: 'done' | 'failed'; finishedAtMs: number }[],
  options: { nowMs: number; minutes?: number },
): Throughput {
  const count = options.minutes ?? 60;
  const minutes = Array.from({ length: count }, () => ({ done: 0, failed: 0 }));
  const startMs = options.nowMs - count * 60_000;
  let done = 0;
  let failed = 0;
  for (const task of finished) {
    if (task.finishedAtMs <= startMs || task.finishedAtMs > options.nowMs) continue;
    const index = Math.min(count - 1, Math.floor((task.finishedAtMs - startMs) / 60_000));
    const bucket = minutes[index];
    if (!bucket) continue;
    bucket[task.state] += 1;
    if (task.state === 'done') done += 1;
    else failed += 1;
  }
  return { minutes, done, failed };
}

/** "312 done, 4 failed in the last hour": the chart's text, for everybody and for screen readers. */
export function describeThroughput(throughput: Throughput): string {
  const hours = throughput.minutes.length === 60 ? 'the last hour' : `the last ${throughput.minutes.length} minutes`;
  return `${throughput.done} done, ${throughput.failed} failed in ${hours}`;
}

/**
 * An inline SVG bar chart: one column per minute, done at the bottom and failed stacked on top, scaled to the
 * busiest minute. No style attributes (the CSP forbids inline styles): presentation attributes and classes that
 * dashboard.css colours. The chart is an image labelled with its text; the figures are also printed beside it.
 */
export function renderSparkline(throughput: Throughput): SafeHtml {
  const height = 32;
  const barWidth = 2;
  const width = throughput.minutes.length * barWidth;
  const busiest = Math.max(1, ...throughput.minutes.map((minute) => minute.done + minute.failed));
  const scale = (value: number) => (value === 0 ? 0 : Math.max(1, Math.round((value / busiest) * height * 10) / 10));
  const bars = throughput.minutes.map((minute, index) => {
    const x = index * barWidth;
    const doneHeight = scale(minute.done);
    const failedHeight = scale(minute.failed);
    return html`${
      doneHeight > 0
        ? html`<rect class="spark-done" x="${x}" y="${height - doneHeight}" width="${barWidth - 0.4}" height="${doneHeight}" fill="currentColor"/>`
        : ''
    }${
      failedHeight > 0
        ? html`<rect class="spark-failed" x="${x}" y="${height - doneHeight - failedHeight}" width="${barWidth - 0.4}" height="${failedHeight}" fill="currentColor"/>`
        : ''
    }`;
  });
  const label = describeThroughput(throughput);
  return html`<svg class="sparkline" viewBox="0 0 ${width} ${height + 1}" preserveAspectRatio="none" role="img" aria-label="${label}" focusable="false"><title>${label}</title><line class="spark-axis" x1="0" y1="${height + 0.5}" x2="${width}" y2="${height + 0.5}" stroke="currentColor" stroke-width="1"/>${bars}</svg>`;
}

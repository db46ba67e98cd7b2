import { html, type SafeHtml } from './html.ts';

/**
 * A small inline SVG bar chart of one series (oldest bucket first), with an optional second series stacked on top
 * (failures on finished tasks). Like the overview's sparkline: no style attributes (the CSP forbids inline styles),
 * classes dashboard.css colours, and an image labelled with its text, which the page also prints beside it.
 */
export function renderBars(options: {
  values: readonly number[];
  stacked?: readonly number[];
  label: string;
  /** `spark-done` (the default), or `spark-value` for a measure that is neither success nor failure. */
  kind?: 'spark-done' | 'spark-value';
}): SafeHtml {
  const height = 32;
  const barWidth = 2;
  const { values } = options;
  const stacked = options.stacked ?? [];
  const width = Math.max(1, values.length) * barWidth;
  const highest = Math.max(1, ...values.map((value, index) => value + (stacked[index] ?? 0)));
  const scale = (value: number) => (value <= 0 ? 0 : Math.max(1, Math.round((value / highest) * height * 10) / 10));
  const bars = values.map((value, index) => {
    const x = index * barWidth;
    const low = scale(value);
    const high = scale(stacked[index] ?? 0);
    return html`${
      low > 0
        ? html`<rect class="${options.kind ?? 'spark-done'}" x="${x}" y="${height - low}" width="${barWidth - 0.4}" height="${low}" fill="currentColor"/>`
        : ''
    }${
      high > 0
        ? html`<rect class="spark-failed" x="${x}" y="${height - low - high}" width="${barWidth - 0.4}" height="${high}" fill="currentColor"/>`
        : ''
    }`;
  });
  return html`<svg class="sparkline history-chart" viewBox="0 0 ${width} ${height + 1}" preserveAspectRatio="none" role="img" aria-label="${options.label}" focusable="false"><title>${options.label}</title><line class="spark-axis" x1="0" y1="${height + 0.5}" x2="${width}" y2="${height + 0.5}" stroke="currentColor" stroke-width="1"/>${bars}</svg>`;
}

/** A duration as people read it: `850 ms`, `2.4 s`, `3.1 min`. */
export function shownMs(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  return `${(ms / 60_000).toFixed(1)} min`;
}

/** Per bucket: the sum divided by the count, 0 where nothing was counted. */
export function means(sums: readonly number[], counts: readonly number[]): number[] {
  return sums.map((sum, index) => {
    const count = counts[index] ?? 0;
    return count === 0 ? 0 : sum / count;
  });
}

const units = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
type Unit = keyof typeof units;

const part = /(\d+(?:\.\d+)?)(ms|s|m|h|d|w)/y;

/**
 * Parses a duration such as `30s`, `30m`, `2h`, `1d`, `1w`, `1h30m` or `250ms` into milliseconds.
 * Returns undefined when the text is not a duration; a unit is always required, so `30` is refused.
 */
export function parseDuration(text: string): number | undefined {
  const source = text.trim();
  if (source === '') return undefined;
  let total = 0;
  part.lastIndex = 0;
  while (part.lastIndex < source.length) {
    const match = part.exec(source);
    if (match === null) return undefined;
    total += Number(match[1]) * units[match[2] as Unit];
  }
  return Number.isFinite(total) ? Math.round(total) : undefined;
}

/** Formats milliseconds as the shortest duration text that parses back to the same value: `1h30m`, `250ms`. */
export function formatDuration(totalMs: number): string {
  if (!Number.isInteger(totalMs) || totalMs < 0) throw new RangeError(`Expected whole non-negative ms, got ${totalMs}`);
  if (totalMs === 0) return '0s';
  let rest = totalMs;
  let text = '';
  // Weeks are parsed but not written: `30d` reads better than `4w2d`.
  for (const unit of ['d', 'h', 'm', 's', 'ms'] as const) {
    const count = Math.floor(rest / units[unit]);
    if (count > 0) {
      text += `${count}${unit}`;
      rest -= count * units[unit];
    }
  }
  return text;
}

export const durationExamples = '30s, 30m, 2h, 1d, 1h30m';

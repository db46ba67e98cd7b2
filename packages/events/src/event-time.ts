import { AssistantError } from '@assistant/errors';

const units = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/**
 * A bound of an event query as people write it: an ISO 8601 time (`2026-11-28T08:00:00Z`, `2026-11-28`) or a
 * duration back from now (`90s`, `15m`, `1h`, `7d`, `2w`). Returns the ISO time; throws EVENT_QUERY_INVALID naming
 * what was received and what is valid. Shared by `assistant events ls`, `GET /api/events` and the dashboard.
 */
export function parseEventTime(options: { text: string; name: string; nowMs?: number }): string {
  const text = options.text.trim();
  const relative = /^(\d{1,9})(s|m|h|d|w)$/.exec(text);
  if (relative) {
    const backMs = Number(relative[1]) * units[relative[2] as keyof typeof units];
    return new Date((options.nowMs ?? Date.now()) - backMs).toISOString();
  }
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new AssistantError(
      'EVENT_QUERY_INVALID',
      `${options.name}: expected an ISO 8601 time (2026-11-28T08:00:00Z) or a duration back from now (15m, 1h, 7d), got ${JSON.stringify(options.text)}`,
    );
  }
  return new Date(ms).toISOString();
}

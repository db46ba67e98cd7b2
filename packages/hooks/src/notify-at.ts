// `at:` of a notification: when it is sent, as the owner writes it. Resolved when the hook fires, in the owner's
// time zone (`owner.timezone`), into an absolute time the queue task waits for: a file with a due time survives a
// restart, unlike a timer in memory.

const weekdays = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'] as const;
const clockPattern = /^(?:([a-z]+)\s+)?([01]?\d|2[0-3]):([0-5]\d)$/i;
const isoPattern = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** Why `at:` cannot be read, or undefined when it can (a template is checked when it is rendered). */
export function atProblem(at: string): string | undefined {
  if (at.includes('{{')) return undefined;
  return parseAt(at) === undefined
    ? `\`${at}\` is not a time: write \`09:00\`, \`friday 09:00\` (the owner's time zone) or an ISO date-time such as \`2026-12-01T09:00:00Z\``
    : undefined;
}

type ParsedAt =
  | { kind: 'absolute'; ms: number }
  | { kind: 'local'; time: LocalTime }
  | { kind: 'clock'; weekday?: number; hour: number; minute: number };

function parseAt(at: string): ParsedAt | undefined {
  const text = at.trim();
  const clock = clockPattern.exec(text);
  if (clock) {
    const day = clock[1]?.toLowerCase();
    const weekday =
      day === undefined ? undefined : weekdays.findIndex((name) => name === day || name.slice(0, 3) === day);
    if (weekday === -1) return undefined;
    return {
      kind: 'clock',
      ...(weekday === undefined ? {} : { weekday }),
      hour: Number(clock[2]),
      minute: Number(clock[3]),
    };
  }
  const iso = isoPattern.exec(text);
  if (!iso) return undefined;
  const ms = Date.parse(iso[4] === undefined ? `${text.slice(0, 10)}T00:00:00Z` : text);
  if (Number.isNaN(ms)) return undefined;
  if (iso[4] !== undefined) return { kind: 'absolute', ms };
  // A date or date-time without a zone is the owner's wall clock; Date.parse would read it as the machine's.
  const [year = 0, month = 0, day = 0] = text.slice(0, 10).split('-').map(Number);
  const [hour = 0, minute = 0] = iso[1] === undefined ? [9, 0] : iso[1].trim().replace('T', '').split(':').map(Number);
  return { kind: 'local', time: { year, month, day, hour, minute } };
}

/**
 * The next instant `at` names after `nowMs`: an ISO date-time as it is (in the past: now), `HH:MM` the next such
 * time of day, `friday 09:00` the next Friday at 09:00 (today, if it is Friday and 09:00 is still ahead), both in
 * `timeZone`. Throws for text that is not a time (a template that rendered into something else).
 */
export function resolveAt(options: { at: string; nowMs: number; timeZone: string }): number {
  const parsed = parseAt(options.at);
  if (!parsed) throw new Error(atProblem(options.at) ?? `\`${options.at}\` is not a time`);
  if (parsed.kind === 'absolute') return Math.max(parsed.ms, options.nowMs);
  if (parsed.kind === 'local') return Math.max(fromLocal(parsed.time, options.timeZone), options.nowMs);
  const local = localParts(options.nowMs, options.timeZone);
  for (let days = 0; days <= 7; days++) {
    const date = new Date(Date.UTC(local.year, local.month - 1, local.day + days));
    if (parsed.weekday !== undefined && date.getUTCDay() !== parsed.weekday) continue;
    const candidate = fromLocal(
      {
        year: date.getUTCFullYear(),
        month: date.getUTCMonth() + 1,
        day: date.getUTCDate(),
        hour: parsed.hour,
        minute: parsed.minute,
      },
      options.timeZone,
    );
    if (candidate > options.nowMs) return candidate;
  }
  // Unreachable: within eight days every weekday and time of day comes round.
  throw new Error(`no time \`${options.at}\` in the next week`);
}

interface LocalTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
}

function localParts(ms: number, timeZone: string): LocalTime {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
  }).formatToParts(ms);
  const get = (type: string) => Number(parts.find((part) => part.type === type)?.value ?? 0);
  return { year: get('year'), month: get('month'), day: get('day'), hour: get('hour'), minute: get('minute') };
}

/** The UTC instant of a wall-clock time in `timeZone` (the later one of a repeated hour, the hour after a gap). */
function fromLocal(local: LocalTime, timeZone: string): number {
  const wall = Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute);
  let guess = wall;
  for (let step = 0; step < 3; step++) {
    const seen = localParts(guess, timeZone);
    const offset = Date.UTC(seen.year, seen.month - 1, seen.day, seen.hour, seen.minute) - guess;
    const next = wall - offset;
    if (next === guess) break;
    guess = next;
  }
  return guess;
}

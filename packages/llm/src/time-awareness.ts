import type { ChatMessage, ChatModel, ChatOptions, ChatRequest, ChatResponse } from './chat-types.ts';

/**
 * Time awareness (issue 32): a model knows nothing of "now", so every request tells it. The line is appended last to
 * the first system message, so everything before it (the stable prefix that prompt caches key on) does not change from
 * one minute to the next; the record/replay transport removes it from a request's key for the same reason. User
 * messages that carry `at` are shown with their time, so "tomorrow" in a message from last week reads right.
 */

export interface TimeAwarenessOptions {
  /** The owner's IANA time zone (`owner.timezone`). */
  timeZone: string;
  /** The clock, for tests. @default () => new Date() */
  now?: () => Date;
}

/** What starts the time line; the transport and adapters find the line by it. */
export const currentTimePrefix = 'Current time: ';

interface ZonedParts {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
  weekday: string;
  /** Minutes east of UTC. */
  offsetMinutes: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function zonedParts(date: Date, timeZone: string): ZonedParts {
  let formatter = formatters.get(timeZone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      weekday: 'long',
      hourCycle: 'h23',
    });
    formatters.set(timeZone, formatter);
  }
  const parts: Record<string, string> = {};
  for (const part of formatter.formatToParts(date)) parts[part.type] = part.value;
  const field = (name: string) => parts[name] ?? '00';
  const wholeSecondMs = Math.floor(date.getTime() / 1000) * 1000;
  const asUtcMs = Date.UTC(
    Number(field('year')),
    Number(field('month')) - 1,
    Number(field('day')),
    Number(field('hour')),
    Number(field('minute')),
    Number(field('second')),
  );
  return {
    year: field('year'),
    month: field('month'),
    day: field('day'),
    hour: field('hour'),
    minute: field('minute'),
    second: field('second'),
    weekday: field('weekday'),
    offsetMinutes: Math.round((asUtcMs - wholeSecondMs) / 60_000),
  };
}

function formatOffset(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const absolute = Math.abs(minutes);
  return `${sign}${String(Math.floor(absolute / 60)).padStart(2, '0')}:${String(absolute % 60).padStart(2, '0')}`;
}

/** `2026-11-28T09:14:05+01:00`: the instant as the wall clock in `timeZone` shows it, with that zone's offset. */
function zonedIsoTime(date: Date, timeZone: string): string {
  const parts = zonedParts(date, timeZone);
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${formatOffset(parts.offsetMinutes)}`;
}

/** The calendar day of `date` in `timeZone`, `2026-11-28`: the owner's "today". */
export function zonedDay(date: Date, timeZone: string): string {
  const parts = zonedParts(date, timeZone);
  return `${parts.year}-${parts.month}-${parts.day}`;
}

/** `Current time: 2026-11-28T09:14:05+01:00 (Saturday), time zone Europe/Berlin.` */
export function currentTimeLine(date: Date, timeZone: string): string {
  const parts = zonedParts(date, timeZone);
  return `${currentTimePrefix}${zonedIsoTime(date, timeZone)} (${parts.weekday}), time zone ${timeZone}.`;
}

/** `[2026-11-28 09:14] `: how a user message's `at` is shown, in the owner's zone; empty when `at` is no time. */
function messageTimePrefix(at: string, timeZone: string): string {
  const date = new Date(at);
  if (Number.isNaN(date.getTime())) return '';
  const parts = zonedParts(date, timeZone);
  return `[${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute}] `;
}

/**
 * The messages as the model sees them: the time line last in the first system message (one is added first when there
 * is none), and each user message with `at` prefixed with its time. `at` itself is dropped once shown, so no adapter
 * shows it twice. The input is not changed.
 */
export function withCurrentTime(messages: readonly ChatMessage[], options: TimeAwarenessOptions): ChatMessage[] {
  const line = currentTimeLine(options.now?.() ?? new Date(), options.timeZone);
  const shown = messages.map((message): ChatMessage => {
    if (message.role !== 'user' || message.at === undefined) return message;
    const { at, ...rest } = message;
    return { ...rest, content: `${messageTimePrefix(at, options.timeZone)}${message.content}` };
  });
  const first = shown.findIndex((message) => message.role === 'system');
  if (first === -1) return [{ role: 'system', content: line }, ...shown];
  const system = shown[first] as Extract<ChatMessage, { role: 'system' }>;
  // A request built from an earlier one's messages may already carry a (stale) line: replace it, never stack two.
  const content = stripCurrentTime(system.content);
  shown[first] = { ...system, content: content === '' ? line : `${content}\n\n${line}` };
  return shown;
}

/** The system content without a trailing time line. */
function stripCurrentTime(content: string): string {
  const index = content.lastIndexOf(currentTimePrefix);
  if (index === -1 || content.slice(index).includes('\n')) return content;
  if (index !== 0 && !content.slice(0, index).endsWith('\n\n')) return content;
  return content.slice(0, Math.max(0, index - 2));
}

/**
 * The model with time awareness: every request's messages go through {@link withCurrentTime}. Every other property
 * (name, provider, context window, capabilities) is the model's own.
 */
export function timeAwareChatModel<Model extends ChatModel>(model: Model, options: TimeAwarenessOptions): Model {
  const chat = (request: ChatRequest, chatOptions?: ChatOptions): Promise<ChatResponse> =>
    model.chat({ ...request, messages: withCurrentTime(request.messages, options) }, chatOptions);
  return new Proxy(model, {
    get(target, property) {
      if (property === 'chat') return chat;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

import type { ChatMessage, ChatModel } from '@assistant/llm';

/**
 * The scenarios' stand-in for time awareness (the profile wrapper of issue 32, which the suite does not construct):
 * the first system message gets the line every profile adds, in its exact format,
 * `\n\nCurrent time: <ISO 8601 with offset> (<weekday>), time zone <IANA name>.`, read from `Date` at each call. The
 * builder records with the real clock and the suite replays on a pinned one, so a passing suite shows the
 * transport keeps that line out of the key. The scenarios get adapters' models (`createProviderChatModel`, as the
 * builder, `fixtures:record` and the suite make them), which add no line of their own; given a profile's model, which
 * does, a request would carry two.
 */
export function withCurrentTime(model: ChatModel, timeZone = 'Europe/Lisbon'): ChatModel {
  // The adapters' models are plain objects: the spread keeps `capabilities`, which structured output reads.
  return {
    ...model,
    chat: (request, options) => {
      const line = `\n\nCurrent time: ${isoWithOffset(new Date(), timeZone)} (${weekday(new Date(), timeZone)}), time zone ${timeZone}.`;
      const messages: ChatMessage[] = [...request.messages];
      const index = messages.findIndex((message) => message.role === 'system');
      if (index === -1) messages.unshift({ role: 'system', content: line.trimStart() });
      else {
        const system = messages[index] as Extract<ChatMessage, { role: 'system' }>;
        messages[index] = { ...system, content: `${system.content}${line}` };
      }
      return model.chat({ ...request, messages }, options);
    },
  };
}

function weekday(date: Date, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', { weekday: 'long', timeZone }).format(date);
}

// `2026-03-02T09:00:00+00:00`: the wall-clock time in the zone, with the zone's offset at that instant.
function isoWithOffset(date: Date, timeZone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-GB', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
      timeZoneName: 'longOffset',
    })
      .formatToParts(date)
      .map((part) => [part.type, part.value]),
  );
  const offset = parts.timeZoneName === 'GMT' ? '+00:00' : String(parts.timeZoneName).replace('GMT', '');
  return `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}${offset}`;
}

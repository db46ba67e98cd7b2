/**
 * A recording's key leaves out `stream`, so one conversation has one recording whether it was asked for as a stream
 * or not. A recording made one way and replayed the other way is converted here: a completion becomes the events of
 * a stream, and the events of a stream become a completion. What cannot be read is replayed unchanged (the client
 * then reports it as a malformed answer).
 */

const eventStreamType = 'text/event-stream';

/** Whether a recorded content type is a server-sent event stream. */
export function isEventStream(contentType: string | null): boolean {
  return contentType?.toLowerCase().startsWith(eventStreamType) ?? false;
}

interface ToolCallPart {
  id: string;
  type: string;
  function: { name: string; arguments: string };
}

/** The server-sent events of a stream that answers like `completionText`, a chat completion's JSON. */
export function completionAsEvents(completionText: string): { body: string; contentType: string } | undefined {
  const completion = parseObject(completionText);
  const choice = firstChoice(completion);
  if (completion === undefined || choice === undefined) return undefined;
  const message = isObject(choice.message) ? choice.message : {};
  const content = typeof message.content === 'string' ? message.content : null;
  const toolCalls = Array.isArray(message.tool_calls) ? message.tool_calls.filter(isObject) : [];
  const identity = { id: completion.id, object: 'chat.completion.chunk', created: completion.created };
  const model = completion.model;
  const events: unknown[] = [
    {
      ...identity,
      model,
      choices: [
        {
          index: 0,
          delta: {
            role: 'assistant',
            content,
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls.map((call, index) => ({ index, ...call })) } : {}),
          },
          logprobs: null,
          finish_reason: null,
        },
      ],
    },
    {
      ...identity,
      model,
      choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: choice.finish_reason ?? 'stop' }],
    },
  ];
  if (completion.usage !== undefined) events.push({ ...identity, model, choices: [], usage: completion.usage });
  const body = [...events.map((event) => JSON.stringify(event)), '[DONE]'].map((data) => `data: ${data}\n\n`).join('');
  return { body, contentType: eventStreamType };
}

/** The chat completion JSON a stream's events (`eventsText`) add up to. */
export function eventsAsCompletion(eventsText: string): { body: string; contentType: string } | undefined {
  let content: string | null = null;
  let finishReason: unknown = null;
  let usage: unknown;
  let head: Record<string, unknown> | undefined;
  const calls: ToolCallPart[] = [];
  for (const line of eventsText.split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    const data = line.slice('data:'.length).trim();
    if (data === '[DONE]') break;
    const chunk = parseObject(data);
    if (chunk === undefined) return undefined;
    head ??= chunk;
    if (chunk.usage !== undefined && chunk.usage !== null) usage = chunk.usage;
    const choice = firstChoice(chunk);
    if (choice === undefined) continue;
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === 'string') content = (content ?? '') + delta.content;
    for (const call of Array.isArray(delta.tool_calls) ? delta.tool_calls.filter(isObject) : []) {
      const index = typeof call.index === 'number' ? call.index : calls.length;
      calls[index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
      const slot = calls[index];
      const fn = isObject(call.function) ? call.function : {};
      if (typeof call.id === 'string') slot.id = call.id;
      if (typeof fn.name === 'string' && fn.name !== '') slot.function.name = fn.name;
      if (typeof fn.arguments === 'string') slot.function.arguments += fn.arguments;
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) finishReason = choice.finish_reason;
  }
  if (head === undefined) return undefined;
  const toolCalls = calls.filter((call) => call !== undefined);
  const completion = {
    id: head.id,
    object: 'chat.completion',
    created: head.created,
    model: head.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
        logprobs: null,
        finish_reason: finishReason,
      },
    ],
    ...(usage === undefined ? {} : { usage }),
  };
  return { body: JSON.stringify(completion), contentType: 'application/json' };
}

function firstChoice(value: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  const choices = value?.choices;
  if (!Array.isArray(choices)) return undefined;
  const first: unknown = choices[0];
  return isObject(first) ? first : undefined;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The server-sent events of `eventsText` one by one, each with its blank-line terminator, as a stream's chunks. */
export function splitEvents(eventsText: string): string[] {
  return eventsText.split(/(?<=\n\n)/).filter((event) => event !== '');
}

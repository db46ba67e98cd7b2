import { createHash } from 'node:crypto';
import type { ChatMessage, ProviderKind, ToolCall } from '../chat-types.ts';

/**
 * The longest tool-call id every provider takes: OpenAI refuses ids over 40 characters, Anthropic over 64 or with
 * characters outside `[a-zA-Z0-9_-]`; Gemini needs none (the AI SDK sends ours back as the function call's id).
 */
const maxToolCallIdLength = 40;
const acceptedToolCallId = /^[a-zA-Z0-9_-]{1,40}$/;

/** What a tool call left without a result gets as its result, so the history stays well-formed. */
export const missingToolResult = '{"error":"no result was recorded for this tool call"}';

/**
 * A conversation's history made acceptable to `target`, whichever provider wrote it (a profile change or a fallback
 * between turns). Pure: the input is not changed.
 *
 * - Reasoning blocks written by another provider are dropped, text and all: their signatures only verify where they
 *   were made, and their text was the other model's private thinking, not part of the conversation.
 * - A tool call's `signature` from another provider is dropped; the call itself stays.
 * - Tool-call ids any provider would refuse (length, characters) are rewritten, the same way for the call and its
 *   result, to a readable prefix and a hash of the original, so two ids never collapse into one.
 * - A tool result whose call is not in the assistant message just before it is **dropped**: there is no request for
 *   it to answer (compression may have removed it), and presenting it as a user message would put a tool's output
 *   (untrusted) in the owner's voice.
 * - A tool call without a result is **paired** with {@link missingToolResult}: every provider refuses a call left
 *   unanswered, and dropping the call would hide that the model asked for it.
 * - An assistant message left empty (no text, no calls, no reasoning) is dropped: Anthropic refuses empty content.
 */
export function historyForProvider(target: ProviderKind, messages: readonly ChatMessage[]): ChatMessage[] {
  const ids = new Map<string, string>();
  const used = new Set<string>();
  for (const message of messages) {
    for (const call of message.role === 'assistant' ? (message.toolCalls ?? []) : []) {
      if (acceptedToolCallId.test(call.id)) used.add(call.id);
    }
  }
  const idFor = (id: string): string => {
    if (acceptedToolCallId.test(id)) return id;
    let mapped = ids.get(id);
    if (mapped === undefined) {
      const hash = createHash('sha256').update(id).digest('hex');
      const prefix = id.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, maxToolCallIdLength - 13);
      mapped = `${prefix}_${hash.slice(0, 12)}`;
      for (let extra = 13; used.has(mapped) && extra < 40; extra += 1) mapped = `${prefix}_${hash.slice(0, extra)}`;
      ids.set(id, mapped);
      used.add(mapped);
    }
    return mapped;
  };

  const result: ChatMessage[] = [];
  for (let index = 0; index < messages.length; index += 1) {
    const message = messages[index] as ChatMessage;
    if (message.role === 'tool') continue; // Not right after its call: an orphan, see above.
    if (message.role !== 'assistant') {
      result.push(message);
      continue;
    }
    const reasoning = (message.reasoning ?? []).filter((block) => block.provider === target);
    const calls: ToolCall[] = (message.toolCalls ?? []).map((call) => {
      const { signature, ...rest } = call;
      return {
        ...rest,
        id: idFor(call.id),
        ...(signature !== undefined && signature.provider === target ? { signature } : {}),
      };
    });
    const { reasoning: _reasoning, toolCalls: _toolCalls, ...base } = message;
    const hasText = message.content !== null && message.content !== '';
    if (!hasText && calls.length === 0 && reasoning.length === 0) continue;
    result.push({
      ...base,
      ...(calls.length > 0 ? { toolCalls: calls } : {}),
      ...(reasoning.length > 0 ? { reasoning } : {}),
    });
    // The results that follow, in order: those answering one of these calls stay, once each.
    const pending = new Map((message.toolCalls ?? []).map((call) => [call.id, idFor(call.id)]));
    while (messages[index + 1]?.role === 'tool') {
      index += 1;
      const answer = messages[index] as Extract<ChatMessage, { role: 'tool' }>;
      const mapped = pending.get(answer.toolCallId);
      if (mapped === undefined) continue;
      pending.delete(answer.toolCallId);
      result.push({ ...answer, toolCallId: mapped });
    }
    for (const mapped of pending.values()) {
      result.push({ role: 'tool', toolCallId: mapped, content: missingToolResult });
    }
  }
  return result;
}

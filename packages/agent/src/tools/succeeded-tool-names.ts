import type { ChatMessage } from '@assistant/llm';

/**
 * Names of the tools a transcript shows succeeding, so a resumed loop keeps the tools that `hiddenUntil` unlocked.
 * A result counts as a success unless the loop wrote it as `error: …` (a tool's own string result is JSON, quoted).
 */
export function succeededToolNames(messages: readonly ChatMessage[]): Set<string> {
  const namesById = new Map<string, string>();
  const succeeded = new Set<string>();
  for (const message of messages) {
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) namesById.set(call.id, call.name);
    } else if (message.role === 'tool' && !message.content.startsWith('error:')) {
      const name = namesById.get(message.toolCallId);
      if (name !== undefined) succeeded.add(name);
    }
  }
  return succeeded;
}

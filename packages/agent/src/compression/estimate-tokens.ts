import type { ChatMessage } from '@assistant/llm';

/**
 * A rough token count: characters / 4, the usual rule of thumb for English text. Good enough to decide when to
 * compress; the exact count would need the model's tokenizer, which an OpenAI-compatible endpoint does not expose.
 */
export function estimateTokensByCharacters(messages: readonly ChatMessage[]): number {
  let characters = 0;
  for (const message of messages) {
    characters += message.content?.length ?? 0;
    if (message.role === 'assistant') {
      for (const call of message.toolCalls ?? []) characters += call.name.length + call.arguments.length;
    }
  }
  return Math.ceil(characters / 4);
}

import type { ChatMessage } from '@assistant/llm';

/**
 * Plain text of a transcript, one block per message, for the model calls that read a transcript rather than continue
 * it (summaries and `ask`). Tool calls are shown with their arguments because they are often the only record of
 * what was tried.
 */
export function renderTranscript(messages: readonly ChatMessage[]): string {
  return messages.map(renderMessage).join('\n\n');
}

function renderMessage(message: ChatMessage): string {
  switch (message.role) {
    case 'system':
      return `[system]\n${message.content}`;
    case 'user':
      return `[user]\n${message.content}`;
    case 'tool':
      return `[tool result ${message.toolCallId}]\n${message.content}`;
    case 'assistant': {
      const calls = (message.toolCalls ?? []).map((call) => `call ${call.id}: ${call.name}(${call.arguments})`);
      return ['[assistant]', message.content ?? '', ...calls].filter((line) => line !== '').join('\n');
    }
  }
}

import type { ChatService } from '@assistant/chat';

/**
 * Writes a reply to a conversation as the worker's turn runner does, for tests that stand in for the worker: the
 * assistant's message in the transcript answering every pending inbox message, those marked answered, and the
 * `message` event the listeners stream from. Returns the reply's id.
 */
export async function answerAsWorker(chat: ChatService, conversation: string, text: string): Promise<string> {
  const ids = (await chat.inbox.pending(conversation)).map((message) => message.id);
  const reply = await chat.conversations.appendMessage(conversation, {
    role: 'assistant',
    text,
    reply_to: ids,
    status: 'complete',
  });
  await chat.inbox.markAnswered(conversation, { ids, replyId: reply.id });
  await chat.events.append(conversation, {
    type: 'message',
    message: { id: reply.id, role: 'assistant', text, reply_to: ids, status: 'complete', at: new Date().toISOString() },
  });
  return reply.id;
}

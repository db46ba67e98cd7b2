import type { ChatService } from '@assistant/chat';

/** The texts stored in a channel's inboxes (only a peer's conversations, when given), conversation by conversation. */
export async function inboxTexts(chat: ChatService, options: { channel: string; peer?: string }): Promise<string[]> {
  const texts: string[] = [];
  for (const conversation of await chat.list()) {
    if (conversation.channel !== options.channel) continue;
    if (options.peer !== undefined && conversation.peer !== options.peer) continue;
    texts.push(...(await chat.inbox.messages(conversation.id)).map((message) => message.text));
  }
  return texts;
}

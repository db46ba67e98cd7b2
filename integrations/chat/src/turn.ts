import { type HandlerContext, UnrecoverableError } from '@assistant/sdk';

/** `chat.turn`: answers the pending messages of a conversation (being built: issue 16). */
export async function runChatTurn(_context: HandlerContext): Promise<unknown> {
  throw new UnrecoverableError('chat turns are not built yet');
}

import type { ChatMode, InboxMessage } from '@assistant/chat';

/** A message's mode: its own `mode`, else the conversation's (the note's `mode`, else the instance's). */
export function effectiveMode(message: Pick<InboxMessage, 'mode'>, conversationMode: ChatMode): ChatMode {
  return message.mode ?? conversationMode;
}

/**
 * The messages a fresh turn answers, from the pending ones in order: the oldest alone when its mode is
 * `followup`; otherwise the oldest and the pending messages after it whose mode is not `followup`, up to
 * `collectMax` (the first followup message ends the batch: it must wait for its own turn, in order).
 */
export function pickBatch(
  pending: readonly InboxMessage[],
  conversationMode: ChatMode,
  collectMax: number,
): InboxMessage[] {
  const [first, ...rest] = pending;
  if (first === undefined) return [];
  if (effectiveMode(first, conversationMode) === 'followup') return [first];
  const batch = [first];
  for (const message of rest) {
    if (batch.length >= collectMax || effectiveMode(message, conversationMode) === 'followup') break;
    batch.push(message);
  }
  return batch;
}

import { randomBytes } from 'node:crypto';
import { AssistantError } from '@assistant/errors';

let lastMs = 0;
let sequence = 0;

/**
 * A new message or conversation id that sorts by creation time: 9 base-36 digits of milliseconds, 4 of a
 * per-process sequence, 4 random hex digits (`m0mwtkme3s0001a9f3`). Within one process ids strictly increase even
 * when the clock steps back; between processes they are ordered by their clocks, and the random tail keeps two
 * processes in the same millisecond apart.
 */
export function newMessageId(now = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    sequence = 0;
  } else {
    sequence += 1;
    // 36^4 ids in one millisecond: borrow the next millisecond rather than wrap and lose the order.
    if (sequence >= 36 ** 4) {
      lastMs += 1;
      sequence = 0;
    }
  }
  return `m${lastMs.toString(36).padStart(9, '0')}${sequence.toString(36).padStart(4, '0')}${randomBytes(2).toString('hex')}`;
}

/** The time (ms) a `newMessageId` id was made, or undefined for an id of another shape (imported, by hand). */
export function messageIdTime(id: string): number | undefined {
  if (!/^m[0-9a-z]{13}[0-9a-f]{4}$/.test(id)) return undefined;
  const ms = Number.parseInt(id.slice(1, 10), 36);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** Ids the chat package accepts from outside (conversation ids, message ids): safe as file names. */
export const idPattern = /^[a-z0-9][a-z0-9-]{0,63}$/;

/** `id` when it is a conversation id (so it cannot name a path outside its folder); CHAT_INPUT_INVALID otherwise. */
export function assertConversationId(id: string): string {
  if (!idPattern.test(id)) {
    throw new AssistantError(
      'CHAT_INPUT_INVALID',
      `Expected a conversation id of [a-z0-9-] (at most 64 characters), got ${JSON.stringify(id)}`,
    );
  }
  return id;
}

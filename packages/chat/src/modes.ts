import { AssistantError } from '@assistant/errors';
import * as z from 'zod';

export const chatModes = ['steer', 'followup', 'collect', 'interrupt'] as const;
/** What happens to a message that arrives while a turn runs (docs/chat.md). */
export type ChatMode = (typeof chatModes)[number];
export const chatModeSchema = z.enum(chatModes);

/** A mode from outside (an option, a request): one of the four, or CHAT_INPUT_INVALID naming what it got. */
export function parseChatMode(value: unknown): ChatMode {
  const mode = chatModeSchema.safeParse(value);
  if (!mode.success) {
    throw new AssistantError(
      'CHAT_INPUT_INVALID',
      `Expected \`mode\` to be one of ${chatModes.join(', ')}, got ${JSON.stringify(value)}`,
    );
  }
  return mode.data;
}

import path from 'node:path';
import type { ChatService } from '@assistant/chat';
import type { ListenerContext } from '@assistant/sdk';
import type { ChatSettings } from '../settings.generated.ts';
import type { ChannelAdapter } from './adapter.ts';
import { ChannelRunner } from './channel-runner.ts';
import { ChannelState } from './channel-state.ts';
import { type NotificationKind, notifyPreference } from './notification-kinds.ts';

/**
 * The chat service, which only the builtin chat integration's listeners get: checked first, credentials or not, so
 * a server that does not hand it over is seen at once (/health).
 */
export function channelChat(context: ListenerContext<ChatSettings>, label: string): ChatService {
  if (!context.chat) {
    throw new Error(`the ${label} listener needs the chat service, which only the builtin chat integration gets`);
  }
  return context.chat;
}

/** A channel without its credentials: says so (which settings are missing) and idles until the server stops. */
export async function channelOff(context: ListenerContext<ChatSettings>, missing: string, off: string): Promise<void> {
  context.logger.info(`no ${missing} in the settings of ${context.instance.name}: ${off}`);
  await new Promise<void>((resolve) => {
    if (context.signal.aborted) return resolve();
    context.signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

/** Warns when a channel's allowed users are none: it then answers nobody. */
export function warnWhenNobody(
  context: ListenerContext<ChatSettings>,
  setting: string,
  allowed: readonly unknown[],
): void {
  if (allowed.length === 0) {
    context.logger.warn(`${setting} of ${context.instance.name} is empty: the bot answers nobody`);
  }
}

/**
 * Runs a channel's adapter with the channel runner until the server stops: the runner's state in
 * `data/chat/<channel>/<instance>.json`, the allowed peers, the owner's notification preferences, the approvals and
 * the condition report the server hands the listener; the adapter is closed afterwards when it can be.
 */
export async function runChannel(
  context: ListenerContext<ChatSettings>,
  options: {
    chat: ChatService;
    adapter: ChannelAdapter & { close?(): Promise<void> };
    allowed: readonly string[];
    notify: readonly NotificationKind[] | undefined;
  },
): Promise<void> {
  const { adapter } = options;
  const state = await ChannelState.load(
    path.join(context.dataDir, 'chat', adapter.name, `${context.instance.name}.json`),
    adapter.label,
  );
  const runner = new ChannelRunner({
    adapter,
    chat: options.chat,
    ...(context.approvals ? { approvals: context.approvals } : {}),
    state,
    allowedPeers: options.allowed,
    notify: notifyPreference(options.notify),
    logger: context.logger,
    signal: context.signal,
    ...(context.condition ? { condition: context.condition } : {}),
  });
  try {
    await runner.run();
  } finally {
    await adapter.close?.();
  }
}

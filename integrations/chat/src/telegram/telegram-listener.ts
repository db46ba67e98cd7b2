import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { ChannelRunner } from '../channels/channel-runner.ts';
import { ChannelState } from '../channels/channel-state.ts';
import { notifyPreference } from '../channels/notification-kinds.ts';
import type { ChatSettings } from '../settings.generated.ts';
import { TelegramBotApi } from './bot-api.ts';
import { TelegramAdapter } from './telegram-adapter.ts';

/**
 * The `telegram` listener of the chat integration: a Telegram bot over the Bot API's long polling, the Telegram
 * adapter run by the channel runner (docs/channels.md). Messages from `telegram.allowed_users` become chat messages
 * (one conversation per user); replies stream back as a message edited as the tokens arrive. Without
 * `telegram.token` it idles until the server stops.
 */
export async function runTelegram(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<ChatSettings['telegram']> = context.instance.settings.telegram ?? {};
  // Checked first, token or not: a server that does not hand the chat service over is seen at once (/health).
  if (!context.chat) {
    throw new Error('the Telegram listener needs the chat service, which only the builtin chat integration gets');
  }
  const token = settings.token;
  if (!token?.isSet) {
    context.logger.info(`no telegram.token in the settings of ${context.instance.name}: the Telegram bot is off`);
    await untilAborted(context.signal);
    return;
  }
  const allowed = settings.allowed_users ?? [];
  if (allowed.length === 0) {
    context.logger.warn(`telegram.allowed_users of ${context.instance.name} is empty: the bot answers nobody`);
  }
  const adapter = new TelegramAdapter({
    api: new TelegramBotApi({ apiRoot: settings.api_root ?? 'https://api.telegram.org', token: token.reveal() }),
    pollTimeoutSeconds: Math.max(0, Math.round((settings.poll_timeout ?? 30_000) / 1000)),
  });
  const state = await ChannelState.load(
    path.join(context.dataDir, 'chat', adapter.name, `${context.instance.name}.json`),
    adapter.label,
  );
  const runner = new ChannelRunner({
    adapter,
    chat: context.chat,
    ...(context.approvals ? { approvals: context.approvals } : {}),
    state,
    allowedPeers: allowed.map(String),
    logger: context.logger,
    signal: context.signal,
    ...(context.condition ? { condition: context.condition } : {}),
    notify: notifyPreference(settings.notify),
  });
  await runner.run();
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

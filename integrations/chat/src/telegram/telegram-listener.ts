import type { ListenerContext } from '@assistant/sdk';
import { channelChat, channelOff, runChannel, warnWhenNobody } from '../channels/run-channel.ts';
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
  const chat = channelChat(context, 'Telegram');
  const token = settings.token;
  if (!token?.isSet) return channelOff(context, 'telegram.token', 'the Telegram bot is off');
  const allowed = settings.allowed_users ?? [];
  warnWhenNobody(context, 'telegram.allowed_users', allowed);
  const adapter = new TelegramAdapter({
    api: new TelegramBotApi({ apiRoot: settings.api_root ?? 'https://api.telegram.org', token: token.reveal() }),
    pollTimeoutSeconds: Math.max(0, Math.round((settings.poll_timeout ?? 30_000) / 1000)),
  });
  await runChannel(context, { chat, adapter, allowed: allowed.map(String), notify: settings.notify });
}

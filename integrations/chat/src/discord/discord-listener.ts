import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { ChannelRunner } from '../channels/channel-runner.ts';
import { ChannelState } from '../channels/channel-state.ts';
import { notifyPreference } from '../channels/notification-kinds.ts';
import type { ChatSettings } from '../settings.generated.ts';
import { DiscordAdapter } from './discord-adapter.ts';
import { DiscordApi } from './discord-api.ts';

/**
 * The `discord` listener of the chat integration: a Discord bot over the Gateway (`@discordjs/ws`) and the REST API
 * (`@discordjs/rest`), the Discord adapter run by the channel runner (docs/channels.md). Direct messages and the one
 * guild channel `discord.channel_id` from `discord.allowed_users` become chat messages (one conversation per user at
 * a time); approvals come with buttons. Without `discord.token` it idles until the server stops.
 */
export async function runDiscord(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<ChatSettings['discord']> = context.instance.settings.discord ?? {};
  if (!context.chat) {
    throw new Error('the Discord listener needs the chat service, which only the builtin chat integration gets');
  }
  const token = settings.token;
  if (!token?.isSet) {
    context.logger.info(`no discord.token in the settings of ${context.instance.name}: the Discord bot is off`);
    await untilAborted(context.signal);
    return;
  }
  const allowed = settings.allowed_users ?? [];
  if (allowed.length === 0) {
    context.logger.warn(`discord.allowed_users of ${context.instance.name} is empty: the bot answers nobody`);
  }
  const folder = path.join(context.dataDir, 'chat', 'discord');
  const api = new DiscordApi({ apiRoot: settings.api_root ?? 'https://discord.com/api', token: token.reveal() });
  const adapter = await DiscordAdapter.open({
    api,
    token: token.reveal(),
    channelId: settings.channel_id,
    allowedUsers: allowed,
    logger: context.logger,
    file: path.join(folder, `${context.instance.name}.gateway.json`),
  });
  const state = await ChannelState.load(path.join(folder, `${context.instance.name}.json`), adapter.label);
  const runner = new ChannelRunner({
    adapter,
    chat: context.chat,
    ...(context.approvals ? { approvals: context.approvals } : {}),
    state,
    allowedPeers: allowed,
    notify: notifyPreference(settings.notify),
    logger: context.logger,
    signal: context.signal,
    ...(context.condition ? { condition: context.condition } : {}),
  });
  await runner.run();
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { channelChat, channelOff, runChannel, warnWhenNobody } from '../channels/run-channel.ts';
import type { ChatSettings } from '../settings.generated.ts';

/**
 * The `discord` listener of the chat integration: a Discord bot over the Gateway (`@discordjs/ws`) and the REST API
 * (`@discordjs/rest`), the Discord adapter run by the channel runner (docs/channels.md). Direct messages and the one
 * guild channel `discord.channel_id` from `discord.allowed_users` become chat messages (one conversation per user at
 * a time); approvals come with buttons. Without `discord.token` it idles until the server stops.
 */
export async function runDiscord(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<ChatSettings['discord']> = context.instance.settings.discord ?? {};
  const chat = channelChat(context, 'Discord');
  const token = settings.token;
  if (!token?.isSet) return channelOff(context, 'discord.token', 'the Discord bot is off');
  const allowed = settings.allowed_users ?? [];
  warnWhenNobody(context, 'discord.allowed_users', allowed);
  // Loaded only for a bot that runs: @discordjs/* and the undici they bring cost a server that has no Discord bot
  // several MB (issue 38).
  const [{ DiscordAdapter }, { DiscordApi }] = await Promise.all([
    import('./discord-adapter.ts'),
    import('./discord-api.ts'),
  ]);
  const api = new DiscordApi({ apiRoot: settings.api_root ?? 'https://discord.com/api', token: token.reveal() });
  const adapter = await DiscordAdapter.open({
    api,
    token: token.reveal(),
    channelId: settings.channel_id,
    allowedUsers: allowed,
    logger: context.logger,
    file: path.join(context.dataDir, 'chat', 'discord', `${context.instance.name}.gateway.json`),
  });
  await runChannel(context, { chat, adapter, allowed, notify: settings.notify });
}

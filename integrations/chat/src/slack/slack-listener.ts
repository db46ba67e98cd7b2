import type { ListenerContext } from '@assistant/sdk';
import { channelChat, channelOff, runChannel, warnWhenNobody } from '../channels/run-channel.ts';
import type { ChatSettings } from '../settings.generated.ts';
import type { SlackInbound } from './slack-adapter.ts';
import { SlackSpoolInbound, spoolFolder } from './slack-spool.ts';

/**
 * The `slack` listener of the chat integration (docs/channels.md "Slack", decision 0072): the Slack adapter run by
 * the channel runner, its events from Socket Mode (`slack.mode: socket`, the app-level token) or from the spool the
 * `slack_events` webhook writes (`slack.mode: events`). Messages from `slack.allowed_users` in direct messages and in
 * `slack.channel_id` become chat messages; replies go out by the Web API with the bot token. Without the tokens its
 * mode needs it idles until the server stops.
 */
export async function runSlack(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<ChatSettings['slack']> = context.instance.settings.slack ?? {};
  const chat = channelChat(context, 'Slack');
  const mode = settings.mode ?? 'socket';
  const bot = settings.bot_token;
  const needed = mode === 'socket' ? settings.app_token : settings.signing_secret;
  if (!bot?.isSet || !needed?.isSet) {
    const missing = [
      ...(bot?.isSet ? [] : ['slack.bot_token']),
      ...(needed?.isSet ? [] : [mode === 'socket' ? 'slack.app_token' : 'slack.signing_secret']),
    ];
    return channelOff(context, missing.join(' or '), `the Slack app is off (slack.mode ${mode})`);
  }
  const allowed = settings.allowed_users ?? [];
  warnWhenNobody(context, 'slack.allowed_users', allowed);
  // Loaded only for an app that runs: Slack's SDKs and the undici they bring cost a server that has no Slack app
  // several MB (issue 38).
  const [{ WebClient }, { SlackAdapter }, { SlackSocketInbound, slackLogger }] = await Promise.all([
    import('@slack/web-api'),
    import('./slack-adapter.ts'),
    import('./slack-socket.ts'),
  ]);
  const apiUrl = settings.api_url ?? 'https://slack.com/api/';
  const logger = slackLogger((message) => context.logger.debug(message));
  const web = new WebClient(bot.reveal(), {
    slackApiUrl: apiUrl,
    logger,
    // Failures are the runner's to retry with backoff (and to report as an outage), not the SDK's.
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
    timeout: 30_000,
  });
  const inbound: SlackInbound =
    mode === 'socket'
      ? new SlackSocketInbound({ appToken: needed.reveal(), apiUrl, logger })
      : new SlackSpoolInbound({ folder: spoolFolder(context.dataDir, context.instance.name) });
  const adapter = new SlackAdapter({ web, inbound, channelId: settings.channel_id });
  await runChannel(context, { chat, adapter, allowed, notify: settings.notify });
}

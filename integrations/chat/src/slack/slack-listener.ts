import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { WebClient } from '@slack/web-api';
import { ChannelRunner } from '../channels/channel-runner.ts';
import { ChannelState } from '../channels/channel-state.ts';
import { notifyPreference } from '../channels/notification-kinds.ts';
import type { ChatSettings } from '../settings.generated.ts';
import { SlackAdapter, type SlackInbound } from './slack-adapter.ts';
import { SlackSocketInbound, slackLogger } from './slack-socket.ts';
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
  if (!context.chat) {
    throw new Error('the Slack listener needs the chat service, which only the builtin chat integration gets');
  }
  const mode = settings.mode ?? 'socket';
  const bot = settings.bot_token;
  const needed = mode === 'socket' ? settings.app_token : settings.signing_secret;
  if (!bot?.isSet || !needed?.isSet) {
    const missing = [
      ...(bot?.isSet ? [] : ['slack.bot_token']),
      ...(needed?.isSet ? [] : [mode === 'socket' ? 'slack.app_token' : 'slack.signing_secret']),
    ];
    context.logger.info(
      `no ${missing.join(' or ')} in the settings of ${context.instance.name} (slack.mode ${mode}): the Slack app is off`,
    );
    await untilAborted(context.signal);
    return;
  }
  const allowed = settings.allowed_users ?? [];
  if (allowed.length === 0) {
    context.logger.warn(`slack.allowed_users of ${context.instance.name} is empty: the bot answers nobody`);
  }
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
  const folder = path.join(context.dataDir, 'chat', 'slack');
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
  try {
    await runner.run();
  } finally {
    await adapter.close();
  }
}

function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

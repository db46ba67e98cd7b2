import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { ChannelRunner } from '../channels/channel-runner.ts';
import { ChannelState } from '../channels/channel-state.ts';
import { notifyPreference } from '../channels/notification-kinds.ts';
import type { ChatSettings } from '../settings.generated.ts';
import { MatrixClientApi } from './client-api.ts';
import { MatrixAdapter } from './matrix-adapter.ts';

/**
 * The `matrix` listener of the chat integration: a Matrix bot account over the Client-Server API's /sync long poll,
 * the Matrix adapter run by the channel runner (docs/channels.md). Messages from `matrix.allowed_users` become chat
 * messages (one conversation per user and room, answered in its room; approvals by ✅ / ❌ reactions); invites from
 * them are joined; encrypted rooms are refused. Without `matrix.access_token` it idles until the server stops.
 */
export async function runMatrix(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<ChatSettings['matrix']> = context.instance.settings.matrix ?? {};
  if (!context.chat) {
    throw new Error('the Matrix listener needs the chat service, which only the builtin chat integration gets');
  }
  const token = settings.access_token;
  if (!token?.isSet) {
    context.logger.info(`no matrix.access_token in the settings of ${context.instance.name}: the Matrix bot is off`);
    await untilAborted(context.signal);
    return;
  }
  const allowed = settings.allowed_users ?? [];
  if (allowed.length === 0) {
    context.logger.warn(`matrix.allowed_users of ${context.instance.name} is empty: the bot answers nobody`);
  }
  const folder = path.join(context.dataDir, 'chat', 'matrix');
  const adapter = await MatrixAdapter.open({
    api: new MatrixClientApi({ homeserver: settings.homeserver ?? 'https://matrix.org', accessToken: token.reveal() }),
    pollTimeoutMs: Math.max(0, settings.poll_timeout ?? 30_000),
    allowedUsers: allowed,
    userId: settings.user_id,
    logger: context.logger,
    file: path.join(folder, `${context.instance.name}.sync.json`),
  });
  const state = await ChannelState.load(path.join(folder, `${context.instance.name}.json`), adapter.label);
  const runner = new ChannelRunner({
    adapter,
    chat: context.chat,
    ...(context.approvals ? { approvals: context.approvals } : {}),
    state,
    allowedPeers: allowed,
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

import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { channelChat, channelOff, runChannel, warnWhenNobody } from '../channels/run-channel.ts';
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
  const chat = channelChat(context, 'Matrix');
  const token = settings.access_token;
  if (!token?.isSet) return channelOff(context, 'matrix.access_token', 'the Matrix bot is off');
  const allowed = settings.allowed_users ?? [];
  warnWhenNobody(context, 'matrix.allowed_users', allowed);
  const adapter = await MatrixAdapter.open({
    api: new MatrixClientApi({ homeserver: settings.homeserver ?? 'https://matrix.org', accessToken: token.reveal() }),
    pollTimeoutMs: Math.max(0, settings.poll_timeout ?? 30_000),
    allowedUsers: allowed,
    userId: settings.user_id,
    logger: context.logger,
    file: path.join(context.dataDir, 'chat', 'matrix', `${context.instance.name}.sync.json`),
  });
  await runChannel(context, { chat, adapter, allowed, notify: settings.notify });
}

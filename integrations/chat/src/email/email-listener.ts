import path from 'node:path';
import type { ListenerContext } from '@assistant/sdk';
import { channelChat, channelOff, runChannel } from '../channels/run-channel.ts';
import type { ChatSettings } from '../settings.generated.ts';

/**
 * The `email` listener of the chat integration: email as chat (docs/channels.md "Email"). Mail From
 * `email.allowed_users` To `email.address` that passes authentication (`email.authserv_ids`) becomes a chat message,
 * one conversation per mail thread, answered by mail in that thread over `email.smtp`. Without `email.password` (or
 * `imap_server`, `username`) it idles until the server stops.
 */
export async function runEmail(context: ListenerContext<ChatSettings>): Promise<void> {
  const settings: Partial<NonNullable<ChatSettings['email']>> = context.instance.settings.email ?? {};
  const chat = channelChat(context, 'email');
  const password = settings.password;
  if (!password?.isSet || !settings.imap_server || !settings.username) {
    return channelOff(context, 'email.imap_server, username and password', 'email as chat is off');
  }
  const allowed = (settings.allowed_users ?? []).map((address) => address.toLowerCase());
  if (allowed.length === 0) {
    context.logger.warn(`email.allowed_users of ${context.instance.name} is empty: no mail is answered`);
  }
  if ((settings.authserv_ids ?? []).length === 0) {
    context.logger.warn(
      `email.authserv_ids of ${context.instance.name} is empty: no mail passes authentication, so none is answered`,
    );
  }
  if (!settings.smtp) context.logger.warn(`email.smtp of ${context.instance.name} is not set: no reply can be sent`);
  const connectTimeoutMs = settings.connect_timeout ?? 30_000;
  const smtp = settings.smtp;
  const folder = path.join(context.dataDir, 'chat', 'email');
  // Imported only when configured: the mail libraries take seconds to load on a busy machine, and every server start
  // starts this listener, most of them to idle.
  const { EmailAdapter } = await import('./email-adapter.ts');
  const adapter = await EmailAdapter.open({
    account: {
      imap: {
        host: settings.imap_server,
        port: settings.port ?? 993,
        tls: settings.tls ?? true,
        username: settings.username,
        password: password.reveal(),
        folder: settings.folder ?? 'INBOX',
      },
      smtp: {
        host: smtp?.host ?? '127.0.0.1',
        port: smtp?.port ?? 587,
        tls: smtp?.tls ?? false,
        ...(smtp?.username ? { username: smtp.username } : {}),
        ...(smtp?.password?.isSet ? { password: smtp.password.reveal() } : {}),
      },
      address: (settings.address ?? settings.username).toLowerCase(),
      owners: allowed,
      authservIds: settings.authserv_ids ?? [],
      pollIntervalMs: Math.max(50, settings.poll_interval ?? 10_000),
      connectTimeoutMs,
    },
    logger: context.logger,
    file: path.join(folder, `${context.instance.name}.mailbox.json`),
  });
  await runChannel(context, { chat, adapter, allowed, notify: settings.notify });
}

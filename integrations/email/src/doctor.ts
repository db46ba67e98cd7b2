import path from 'node:path';
import type { EmailSettings } from './email-settings.ts';
import { withImap } from './imap-session.ts';
import { folderPath, listMaildir, resolveMaildir } from './maildir.ts';

/**
 * `assistant doctor` for an email instance: logs in to IMAP and opens the mailbox, and says exactly what went wrong
 * (unreachable, TLS, wrong password, no such mailbox).
 */
export async function checkAccount(options: {
  instance: { name: string; settings: Record<string, unknown> };
  signal: AbortSignal;
  configFile?: string;
}): Promise<{ ok: boolean; message: string; hint?: string }> {
  const settings = options.instance.settings as unknown as EmailSettings;
  const label = `email ${options.instance.name}`;
  if (settings.maildir) {
    const root = resolveMaildir(settings.maildir, path.dirname(options.configFile ?? 'config.yaml'));
    try {
      const messages = await listMaildir(await folderPath(root, settings.mailbox));
      return { ok: true, message: `${label}: Maildir ${root} has ${messages.length} messages in ${settings.mailbox}` };
    } catch (error) {
      return {
        ok: false,
        message: `${label}: ${(error as Error).message}`,
        hint: 'check `maildir` (relative to config.yaml)',
      };
    }
  }
  if (!settings.imap_server || !settings.username || !settings.password?.isSet) {
    return {
      ok: false,
      message: `${label}: imap_server, username and password are needed to read mail`,
      hint: 'set them in config.yaml (the password as `!secret name`, the value in secrets.yaml)',
    };
  }
  try {
    const status = await withImap(settings, options.signal, async (client) =>
      client.status(settings.mailbox, { messages: true }),
    );
    return {
      ok: true,
      message: `${label}: logged in to ${settings.imap_server}:${settings.port} as ${settings.username}; ${settings.mailbox} has ${status ? (status.messages ?? 0) : 0} messages`,
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      message: `${label}: ${message}`,
      hint: /login/i.test(message)
        ? 'check `username` and the password in secrets.yaml (many providers need an app password)'
        : /mailbox|nonexistent|not exist/i.test(message)
          ? `check \`mailbox\` (${settings.mailbox})`
          : `check imap_server, port (${settings.port}) and tls (${settings.tls}); 993 with tls: true, 143 with tls: false`,
    };
  }
}

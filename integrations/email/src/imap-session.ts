import { imapClient } from '@assistant/mail';
import { RetryableError, UnrecoverableError } from '@assistant/sdk';
import type { ImapFlow } from 'imapflow';
import type { EmailSettings } from './email-settings.ts';

/**
 * One IMAP connection for the length of a task, with bounded timeouts everywhere: a server that stops answering
 * (a half-open socket) fails the task with a clear error instead of hanging it, which is how other IMAP pollers get
 * stuck. The task's signal closes the connection at once.
 */
export async function withImap<Result>(
  settings: EmailSettings,
  signal: AbortSignal,
  use: (client: ImapFlow) => Promise<Result>,
): Promise<Result> {
  if (!settings.imap_server || !settings.username || !settings.password?.isSet) {
    throw new UnrecoverableError(
      'this email instance has no imap_server, username and password; set them in config.yaml',
    );
  }
  const where = `${settings.imap_server}:${settings.port}`;
  // No automatic IDLE: a server that closes idle connections would otherwise end a long task with an unhandled error.
  const client = imapClient({
    host: settings.imap_server,
    port: settings.port,
    tls: settings.tls,
    username: settings.username,
    password: settings.password.reveal(),
    connectTimeoutMs: settings.connect_timeout,
  });
  let failure: Error | undefined;
  client.on('error', (error: Error) => {
    failure = error;
  });
  const onAbort = () => client.close();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    try {
      await client.connect();
    } catch (error) {
      const detail = describe(error);
      if (/auth/i.test(detail) && !/ECONN|timeout/i.test(detail)) {
        throw new UnrecoverableError(`IMAP login to ${where} as ${settings.username} failed: ${detail}`);
      }
      throw new RetryableError(`cannot reach the IMAP server ${where}: ${detail}`, { cause: error });
    }
    return await use(client);
  } catch (error) {
    if (signal.aborted) throw signal.reason;
    if (error instanceof RetryableError || error instanceof UnrecoverableError) throw error;
    throw new RetryableError(`IMAP ${where}: ${describe(failure ?? error)}`, { cause: error });
  } finally {
    signal.removeEventListener('abort', onAbort);
    await client.logout().catch(() => client.close());
  }
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: string }).code;
  const response = (error as { responseText?: string }).responseText;
  return [code, response ?? error.message].filter(Boolean).join(': ');
}

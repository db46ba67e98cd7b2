import { ImapFlow } from 'imapflow';

export interface ImapAccount {
  host: string;
  port: number;
  /** TLS from the start (IMAPS). */
  tls: boolean;
  username: string;
  password: string;
  /** How long to wait for the connection and the greeting; a read times out at four times this. */
  connectTimeoutMs: number;
}

/**
 * An IMAP client (not yet connected) with bounded timeouts everywhere, so a server that stops answering (a half-open
 * socket) fails the caller with an error instead of hanging it, which is how other IMAP pollers get stuck. No
 * automatic IDLE: the email integration's tasks do not want it, and the email chat channel starts IDLE itself. The
 * caller adds its own `error` listener (without one a dropped connection would be an unhandled error event).
 */
export function imapClient(account: ImapAccount): ImapFlow {
  return new ImapFlow({
    host: account.host,
    port: account.port,
    secure: account.tls,
    auth: { user: account.username, pass: account.password },
    logger: false,
    connectionTimeout: account.connectTimeoutMs,
    greetingTimeout: account.connectTimeoutMs,
    socketTimeout: account.connectTimeoutMs * 4,
    disableAutoIdle: true,
  });
}

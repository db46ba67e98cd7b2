import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';

/** The SMTP server a message goes out through. */
export interface SmtpServer {
  host: string;
  port: number;
  /** Implicit TLS (port 465); otherwise STARTTLS when the server offers it. */
  tls: boolean;
  username?: string;
  /** Revealed by the caller, used for the login only. */
  password?: string;
}

/**
 * Why a message was not (or may not have been) sent, and how far the session got: `session` (no connection, no
 * greeting, TLS or login refused: nothing can have left) or `message` (the envelope or the content, or the connection
 * broke on the way: `code` and `responseCode` tell). `code` and `responseCode` are nodemailer's (`EAUTH`, `EENVELOPE`,
 * `EMESSAGE`, `ECONNECTION`… and the server's reply code), `cause` its error.
 */
export class SmtpSendError extends Error {
  readonly stage: 'session' | 'message';
  readonly code: string | undefined;
  readonly responseCode: number | undefined;

  constructor(stage: 'session' | 'message', cause: unknown) {
    const { code, message, responseCode } = (typeof cause === 'object' && cause !== null ? cause : {}) as {
      code?: string;
      message?: string;
      responseCode?: number;
    };
    super(message ?? String(cause), { cause });
    this.name = 'SmtpSendError';
    this.stage = stage;
    this.code = code;
    this.responseCode = responseCode;
  }

  /** Whether the message surely did not leave: the session failed, or the server refused it with a reply. */
  get notSent(): boolean {
    return this.stage === 'session' || this.code === 'EENVELOPE' || this.code === 'EMESSAGE';
  }
}

/**
 * Sends one composed message to one recipient, step by step (connect, STARTTLS when offered, login when a username
 * and password are given, then the message), so that a failure says whether the message can have left
 * (`SmtpSendError`). The email integration's `send_reply` and unsubscribes and the email chat channel's replies go
 * out through it. An abort closes the connection.
 */
export async function sendSmtp(options: {
  server: SmtpServer;
  /** Bounds the connection and the greeting; the socket's silence is bounded at four times it. */
  connectTimeoutMs: number;
  /** The envelope's sender (an address alone). */
  from: string;
  to: string;
  raw: string | Buffer;
  signal?: AbortSignal;
}): Promise<void> {
  const { server } = options;
  const connection = new SMTPConnection({
    host: server.host,
    port: server.port,
    secure: server.tls,
    connectionTimeout: options.connectTimeoutMs,
    greetingTimeout: options.connectTimeoutMs,
    socketTimeout: options.connectTimeoutMs * 4,
  });
  const onAbort = () => connection.close();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  let stage: 'session' | 'message' = 'session';
  let sent = false;
  try {
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject);
      connection.once('end', () => reject(new Error('the SMTP server closed the connection')));
      const send = () => {
        stage = 'message';
        connection.send({ from: options.from, to: [options.to] }, options.raw, (error) => {
          if (error) reject(error);
          else resolve();
        });
      };
      connection.connect((error) => {
        if (error) return reject(error);
        if (!server.username || !server.password) return send();
        connection.login({ user: server.username, pass: server.password }, (loginError) => {
          if (loginError) reject(loginError);
          else send();
        });
      });
    });
    sent = true;
  } catch (error) {
    throw new SmtpSendError(stage, error);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
    if (sent) connection.quit();
    else connection.close();
  }
}

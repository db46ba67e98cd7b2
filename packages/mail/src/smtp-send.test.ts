import type { AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterEach, describe, expect, it } from 'vitest';
import { SmtpSendError, sendSmtp } from './smtp-send.ts';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

/** An SMTP server on loopback that keeps what it accepts, refuses `refuse` as a recipient and checks a login. */
async function smtpServer(options: { refuse?: string; tempRefuse?: string; password?: string } = {}) {
  const mails: { from: string; to: string[]; text: string }[] = [];
  const server = new SMTPServer({
    authOptional: options.password === undefined,
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth(auth, _session, callback) {
      if (auth.username === 'assistant' && auth.password === options.password) callback(null, { user: 'assistant' });
      else callback(Object.assign(new Error('Invalid username or password'), { responseCode: 535 }));
    },
    onRcptTo(address, _session, callback) {
      if (address.address === options.refuse)
        return callback(Object.assign(new Error('No such user'), { responseCode: 550 }));
      if (address.address === options.tempRefuse)
        return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((recipient) => recipient.address),
          text: Buffer.concat(chunks).toString(),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { port: (server.server.address() as AddressInfo).port, mails };
}

/** A port where nothing listens: a server opened and closed. */
async function closedPort(): Promise<number> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const raw = 'From: assistant@example.test\r\nTo: owner@example.test\r\nSubject: hi\r\n\r\nHello.\r\n';
const send = (port: number, to: string, extra: { username?: string; password?: string } = {}) =>
  sendSmtp({
    server: { host: '127.0.0.1', port, tls: false, ...extra },
    connectTimeoutMs: 5_000,
    from: 'assistant@example.test',
    to,
    raw,
  });

describe('sendSmtp', () => {
  it('sends the message as composed, to the one recipient, logging in when given a password', async () => {
    const server = await smtpServer({ password: 'right' });
    await send(server.port, 'owner@example.test', { username: 'assistant', password: 'right' });
    expect(server.mails).toEqual([
      { from: 'assistant@example.test', to: ['owner@example.test'], text: expect.stringContaining('Hello.') },
    ]);
  });

  it('says the message did not leave when the server is down, the login is refused or the recipient is', async () => {
    const down = await send(await closedPort(), 'owner@example.test').catch((error: unknown) => error);
    expect(down).toBeInstanceOf(SmtpSendError);
    expect(down).toMatchObject({ stage: 'session', notSent: true });

    const server = await smtpServer({
      password: 'right',
      refuse: 'nobody@example.test',
      tempRefuse: 'later@example.test',
    });
    const login = await send(server.port, 'owner@example.test', { username: 'assistant', password: 'wrong' }).catch(
      (error: unknown) => error,
    );
    expect(login).toMatchObject({ stage: 'session', code: 'EAUTH', notSent: true });

    const refused = await send(server.port, 'nobody@example.test', { username: 'assistant', password: 'right' }).catch(
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ stage: 'message', code: 'EENVELOPE', responseCode: 550, notSent: true });
    const later = await send(server.port, 'later@example.test', { username: 'assistant', password: 'right' }).catch(
      (error: unknown) => error,
    );
    expect(later).toMatchObject({ stage: 'message', code: 'EENVELOPE', responseCode: 451, notSent: true });
    expect(server.mails).toEqual([]);
  });

  it('closes the connection when aborted', async () => {
    // A server that accepts the connection and never greets: only the abort ends the wait.
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          silent.close(() => resolve());
        }),
    );
    const controller = new AbortController();
    const sending = sendSmtp({
      server: { host: '127.0.0.1', port: (silent.address() as AddressInfo).port, tls: false },
      connectTimeoutMs: 60_000,
      from: 'assistant@example.test',
      to: 'owner@example.test',
      raw,
      signal: controller.signal,
    }).catch((error: unknown) => error);
    controller.abort();
    expect(await sending).toMatchObject({ stage: 'session', notSent: true });
  });
});

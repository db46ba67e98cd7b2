import net from 'node:net';
import { ActionNotTakenError, RetryableError } from '@assistant/sdk';
import { SMTPServer } from 'smtp-server';
import { describe, expect, it } from 'vitest';
import type { EmailSettings } from './email-settings.ts';
import { sendRawMail } from './smtp-transport.ts';

/** What sending one message through `port` fails with, as the act stage sees it (undefined when it was sent). */
async function sendFailure(port: number): Promise<unknown> {
  const settings = {
    username: 'alice@example.test',
    connect_timeout: 2_000,
    smtp: { host: '127.0.0.1', port, tls: false },
  } as unknown as EmailSettings;
  return sendRawMail(settings, { to: 'bob@example.test', raw: 'Subject: hi\r\n\r\nhello\r\n', what: 'sending' }).then(
    () => undefined,
    (error: unknown) => error,
  );
}

async function listen(server: { listen: (port: number, host: string, done: () => void) => unknown }) {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
}

describe('sendRawMail', () => {
  it('says a message was not sent when there was no server, or the server rejected it with a reply', async () => {
    const probe = net.createServer();
    await listen(probe);
    const closedPort = (probe.address() as net.AddressInfo).port;
    await new Promise((resolve) => probe.close(resolve));
    expect(await sendFailure(closedPort)).toBeInstanceOf(ActionNotTakenError);

    const rejecting = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      logger: false,
      onData(stream, _session, callback) {
        stream.resume();
        stream.on('end', () => callback(Object.assign(new Error('try again later'), { responseCode: 451 })));
      },
    });
    await listen(rejecting);
    try {
      expect(await sendFailure((rejecting.server.address() as net.AddressInfo).port)).toBeInstanceOf(
        ActionNotTakenError,
      );
    } finally {
      await new Promise<void>((resolve) => rejecting.close(() => resolve()));
    }
  });

  it('says it may have been sent when the connection broke after the content went out', async () => {
    // A server that takes the whole message and hangs up instead of answering it.
    const sockets = new Set<net.Socket>();
    const hangsUp = net.createServer((socket) => {
      sockets.add(socket);
      let inData = false;
      let buffered = '';
      socket.write('220 test ESMTP\r\n');
      socket.on('data', (chunk: Buffer) => {
        buffered += chunk.toString();
        if (inData) {
          if (buffered.includes('\r\n.\r\n')) socket.destroy();
          return;
        }
        for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
          const line = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          if (/^DATA/i.test(line)) {
            inData = true;
            socket.write('354 go ahead\r\n');
            return;
          }
          socket.write(/^(EHLO|HELO)/i.test(line) ? '250 test\r\n' : '250 ok\r\n');
        }
      });
    });
    await listen(hangsUp);
    try {
      const failure = await sendFailure((hangsUp.address() as net.AddressInfo).port);
      expect(failure).toBeInstanceOf(RetryableError);
      expect(failure).not.toBeInstanceOf(ActionNotTakenError);
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hangsUp.close(resolve));
    }
  });
});

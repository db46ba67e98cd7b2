import type { AddressInfo } from 'node:net';
import type { ActPayload } from '@assistant/sdk';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { describe, expect, it } from 'vitest';
import type { EmailContext, EmailSettings } from './email-settings.ts';
import { planUnsubscribe, unsubscribe } from './unsubscribe.ts';

interface Delivered {
  from: string;
  to: string[];
  text: string;
}

/** A real SMTP server on loopback that keeps what it is given, envelope and message. */
async function startSmtpSink() {
  const delivered: Delivered[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      let text = '';
      stream.on('data', (chunk: Buffer) => {
        text += chunk.toString();
      });
      stream.on('end', () => {
        delivered.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((recipient) => recipient.address),
          text,
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    delivered,
    port: (server.server.address() as AddressInfo).port,
    async [Symbol.asyncDispose]() {
      await new Promise((resolve) => server.close(() => resolve(undefined)));
    },
  };
}

/** The parts of a handler context `unsubscribe` uses (our own interface), recording note updates and log lines. */
function fakeContext(smtpPort: number) {
  const updates: Record<string, unknown>[] = [];
  const human: string[] = [];
  const settings: EmailSettings = {
    port: 993,
    tls: true,
    username: 'alice@example.test',
    mailbox: 'INBOX',
    limit: 200,
    window: 1_000_000,
    archive_folder: 'Archive',
    drafts_folder: 'Drafts',
    connect_timeout: 5_000,
    authserv_ids: [],
    smtp: { host: '127.0.0.1', port: smtpPort, tls: false, from: 'Alice Lindqvist <alice@example.test>' },
  };
  const context = {
    payload: { item: 'email/personal/1-7.md', rule: 'leave lists', provenance: 'rule', actions: [] },
    instance: { name: 'personal', settings },
    signal: new AbortController().signal,
    notes: {
      update: async (_path: string, change: { set: Record<string, unknown> }) => {
        updates.push(change.set);
      },
    },
    log: {
      human: async (message: string) => {
        human.push(message);
      },
    },
  } as unknown as EmailContext<ActPayload>;
  return { context, updates, human };
}

/** What the act stage does: the checks, then the unsubscribe. */
async function planAndUnsubscribe(context: Parameters<typeof unsubscribe>[0], data: Record<string, unknown>) {
  return unsubscribe(context, await planUnsubscribe(context, data));
}

describe('unsubscribe by mail', () => {
  it('hole 4: sends a fixed text to exactly the one address, whatever subject and body the mailto: URL asks for', async () => {
    await using smtp = await startSmtpSink();
    const { context } = fakeContext(smtp.port);
    const how = await planAndUnsubscribe(context, {
      list_unsubscribe: [
        'mailto:leave-7@lists.example?subject=Please%20wire%20the%20money&body=Pay%20invoice%2042%20today',
      ],
      list_unsubscribe_one_click: false,
    });
    expect(how).toBe('mail to leave-7@lists.example');
    expect(smtp.delivered).toHaveLength(1);
    expect(smtp.delivered[0]?.from).toBe('alice@example.test');
    expect(smtp.delivered[0]?.to).toEqual(['leave-7@lists.example']);
    const parsed = await simpleParser(smtp.delivered[0]?.text ?? '');
    expect(parsed.subject).toBe('unsubscribe');
    expect(parsed.text?.trim()).toBe('unsubscribe');
    expect(parsed.headerLines.map((line) => line.key).filter((key) => /^(cc|bcc)$/.test(key))).toEqual([]);
  });

  it('hole 4: several recipients, to/cc/bcc parameters or a header in the address are refused, recorded, and nothing is sent', async () => {
    await using smtp = await startSmtpSink();
    const hostile = [
      'mailto:leave@lists.example,victim@elsewhere.example',
      'mailto:leave@lists.example?cc=victim@elsewhere.example',
      'mailto:leave@lists.example?BCC=victim@elsewhere.example',
      'mailto:leave@lists.example?to=victim@elsewhere.example',
      'mailto:leave@lists.example%0D%0ABcc:%20victim@elsewhere.example',
      'mailto:%22leave%20me%22@lists.example',
      'mailto:leave@lists.example%3E,%3Cvictim@elsewhere.example',
      'mailto:?to=victim@elsewhere.example',
    ];
    for (const target of hostile) {
      const { context, updates, human } = fakeContext(smtp.port);
      await expect(
        planAndUnsubscribe(context, { list_unsubscribe: [target], list_unsubscribe_one_click: false }),
        target,
      ).rejects.toThrow(/refused/);
      expect(updates, target).toEqual([{ unsubscribe_refused: expect.stringMatching(/^refused: /) }]);
      expect(human, target).toEqual([expect.stringMatching(/^did not unsubscribe: refused: /)]);
    }
    expect(smtp.delivered).toEqual([]);
  });
});

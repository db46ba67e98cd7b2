import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { composeReply } from './compose-reply.ts';

/** A message as a hostile sender can shape it: line breaks in the display name, the subject and the Message-ID. */
const hostile = {
  from: 'Mallory\r\nBcc: victim@elsewhere.example <mallory@evil.example>',
  from_address: 'mallory@evil.example',
  subject: 'Quick question\r\nBcc: victim@elsewhere.example\r\nX-Injected: yes',
  message_id: '<1@evil.example>\r\nBcc: victim@elsewhere.example',
};

const expectedHeaders = [
  'content-transfer-encoding',
  'content-type',
  'date',
  'from',
  'message-id',
  'mime-version',
  'subject',
  'to',
];

describe('composeReply', () => {
  it('hole 7: a CR/LF in a display name, a subject or a Message-ID cannot add a header', async () => {
    const raw = await composeReply({
      from: 'alice@example.test',
      original: hostile,
      text: 'Thanks!\r\n\r\nBcc: not-a-header@example.test',
    });
    const parsed = await simpleParser(raw);
    expect(parsed.headerLines.map((line) => line.key).sort()).toEqual(expectedHeaders);
    const to = Array.isArray(parsed.to) ? parsed.to : parsed.to ? [parsed.to] : [];
    expect(to.flatMap((group) => group.value.map((address) => address.address))).toEqual(['mallory@evil.example']);
    expect(parsed.subject).toMatch(/^Re: Quick question\s+Bcc: victim@elsewhere\.example\s+X-Injected: yes$/);
    expect(parsed.text).toContain('Bcc: not-a-header@example.test');
  });

  it('hole 7: a display name that looks like more addresses still gives one recipient', async () => {
    const raw = await composeReply({
      from: 'alice@example.test',
      original: {
        from: 'victim@elsewhere.example, other@elsewhere.example <mallory@evil.example>',
        from_address: 'mallory@evil.example',
        subject: 'hi',
        message_id: '<2@evil.example>',
      },
      text: 'hello',
    });
    const parsed = await simpleParser(raw);
    const to = Array.isArray(parsed.to) ? parsed.to : parsed.to ? [parsed.to] : [];
    expect(to.flatMap((group) => group.value.map((address) => address.address))).toEqual(['mallory@evil.example']);
    expect(parsed.headerLines.map((line) => line.key).sort()).toEqual(
      [...expectedHeaders, 'in-reply-to', 'references'].sort(),
    );
  });

  it('threads a reply under a well-formed Message-ID and keeps a non-ASCII subject and name', async () => {
    const raw = await composeReply({
      from: 'Alice Lindqvist <alice@example.test>',
      original: {
        from: 'Jürgen Weiß <juergen@hausverwaltung.example>',
        from_address: 'juergen@hausverwaltung.example',
        subject: 'Nebenkostenabrechnung für 2025',
        message_id: '<abc.123@hausverwaltung.example>',
      },
      text: 'Danke, ich schaue es mir an.',
    });
    const parsed = await simpleParser(raw);
    expect(parsed.inReplyTo).toBe('<abc.123@hausverwaltung.example>');
    expect(parsed.references).toBe('<abc.123@hausverwaltung.example>');
    expect(parsed.subject).toBe('Re: Nebenkostenabrechnung für 2025');
    expect(parsed.to && !Array.isArray(parsed.to) ? parsed.to.value : []).toEqual([
      { name: 'Jürgen Weiß', address: 'juergen@hausverwaltung.example' },
    ]);
    expect(parsed.text?.trim()).toBe('Danke, ich schaue es mir an.');
  });

  it('judges a hostile Message-ID at once: an @ in its right part still threads, a huge run of @ is not used', async () => {
    const reply = async (messageId: string) =>
      simpleParser(
        await composeReply({
          from: 'alice@example.test',
          original: { from_address: 'bob@example.test', subject: 'x', message_id: messageId },
          text: 'ok',
        }),
      );
    expect((await reply('<a@b@c.example>')).inReplyTo).toBe('<a@b@c.example>');
    // Quadratic backtracking before the fix: 40,000 characters took seconds, these would take hours.
    expect((await reply(`<${'@'.repeat(200_000)}`)).inReplyTo).toBeUndefined();
    expect((await reply(`<a${'@'.repeat(900)}>`)).inReplyTo).toBe(`<a${'@'.repeat(900)}>`);
  });
});

import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { mailFacts } from './mail-facts.ts';

const crlf = (lines: string[]) => `${lines.join('\r\n')}\r\n`;

describe('mailFacts', () => {
  it('reads the deterministic fields of a newsletter from a noreply address', async () => {
    const parsed = await simpleParser(
      crlf([
        'From: "Weekly Digest" <no-reply@news.example.com>',
        'To: owner@example.test',
        'Subject: =?UTF-8?B?V29jaGVuw7xiZXJibGljaw==?=',
        'Date: Fri, 20 Nov 2026 08:00:00 +0000',
        'Message-ID: <digest-1@news.example.com>',
        'List-Unsubscribe: <mailto:leave@news.example.com>, <https://news.example.com/u/abc>',
        'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
        'Authentication-Results: mx.example.test; dkim=pass header.d=news.example.com; spf=pass smtp.mailfrom=news.example.com',
        'Content-Type: text/html; charset=utf-8',
        '',
        '<html><body><h1>This week</h1><p>Five things &amp; more.</p><script>track()</script></body></html>',
      ]),
    );
    expect(mailFacts(parsed)).toMatchObject({
      message_id: '<digest-1@news.example.com>',
      from: 'Weekly Digest <no-reply@news.example.com>',
      from_address: 'no-reply@news.example.com',
      from_domain: 'news.example.com',
      to: ['owner@example.test'],
      subject: 'Wochenüberblick',
      date: '2026-11-20T08:00:00.000Z',
      is_noreply: true,
      is_calendar_event: false,
      has_list_unsubscribe: true,
      list_unsubscribe: ['mailto:leave@news.example.com', 'https://news.example.com/u/abc'],
      list_unsubscribe_one_click: true,
      authentication: 'pass',
      is_reply: false,
      body_excerpt: expect.stringMatching(/^THIS WEEK\s+Five things & more\.$/),
    });
  });

  it('marks failed authentication, calendar invitations, attachments, replies, and caps the excerpt', async () => {
    const parsed = await simpleParser(
      crlf([
        'From: Security Team <security@bank-example.test>',
        'To: owner@example.test',
        'Subject: Re: Meeting',
        'In-Reply-To: <original@example.test>',
        'Message-ID: <reply@bank-example.test>',
        'Authentication-Results: mx.example.test; dkim=fail header.d=bank.example; spf=softfail smtp.mailfrom=bank-example.test',
        'MIME-Version: 1.0',
        'Content-Type: multipart/mixed; boundary="b1"',
        '',
        '--b1',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'x'.repeat(50),
        '--b1',
        'Content-Type: text/calendar; method=REQUEST; charset=utf-8',
        '',
        'BEGIN:VCALENDAR',
        'METHOD:REQUEST',
        'END:VCALENDAR',
        '--b1',
        'Content-Type: application/pdf; name="invoice.pdf"',
        'Content-Disposition: attachment; filename="invoice.pdf"',
        'Content-Transfer-Encoding: base64',
        '',
        'JVBERi0xLjQK',
        '--b1--',
      ]),
    );
    const facts = mailFacts(parsed, { maxExcerpt: 10 });
    expect(facts).toMatchObject({
      is_noreply: false,
      authentication: 'fail',
      authentication_results: { dkim: 'fail', spf: 'softfail' },
      is_calendar_event: true,
      has_attachments: true,
      attachments: ['invoice.pdf'],
      is_reply: true,
      in_reply_to: '<original@example.test>',
      body_excerpt: `${'x'.repeat(10)}…`,
      body_length: 50,
      has_list_unsubscribe: false,
    });
  });

  it('says none when no authentication results are given', async () => {
    const parsed = await simpleParser(crlf(['From: ada@example.test', 'Subject: hi', '', 'hello']));
    expect(mailFacts(parsed)).toMatchObject({ authentication: 'none', from_domain: 'example.test', is_noreply: false });
  });
});

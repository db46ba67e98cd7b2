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
    expect(mailFacts(parsed, { authservIds: ['mx.example.test'] })).toMatchObject({
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
    const facts = mailFacts(parsed, { maxExcerpt: 10, authservIds: ['mx.example.test'] });
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

  it('says unknown when no authentication results are given', async () => {
    const parsed = await simpleParser(crlf(['From: ada@example.test', 'Subject: hi', '', 'hello']));
    expect(mailFacts(parsed, { authservIds: ['mx.example.test'] })).toMatchObject({
      authentication: 'unknown',
      from_domain: 'example.test',
      is_noreply: false,
    });
  });

  it('hole 4: names the unsubscribe target an approval is about: the one-click host, else the mailto: address', async () => {
    const message = (unsubscribe: string, post: boolean) =>
      simpleParser(
        crlf([
          'From: letters@lists.example',
          'Subject: news',
          `List-Unsubscribe: ${unsubscribe}`,
          ...(post ? ['List-Unsubscribe-Post: List-Unsubscribe=One-Click'] : []),
          '',
          'hello',
        ]),
      );
    const oneClick = mailFacts(await message('<mailto:leave@lists.example>, <https://u.lists.example/x?t=1>', true));
    expect(oneClick).toMatchObject({ unsubscribe_method: 'one-click', unsubscribe_target: 'u.lists.example' });
    const mailto = mailFacts(
      await message('<mailto:leave@lists.example?subject=wire%20money>, <https://u.lists.example/x>', false),
    );
    expect(mailto).toMatchObject({ unsubscribe_method: 'mailto', unsubscribe_target: 'leave@lists.example' });
    const relay = mailFacts(await message('<mailto:leave@lists.example?bcc=victim@elsewhere.example>', false));
    expect(relay.unsubscribe_method).toBe('none');
    expect(relay.unsubscribe_target).toBeUndefined();
  });
});

describe('mailFacts authentication', () => {
  const message = (...authenticationHeaders: string[]) =>
    simpleParser(
      crlf([
        ...authenticationHeaders,
        'From: First National Bank <security@firstnationalbank.example>',
        'Subject: Verify your account',
        '',
        'Click here.',
      ]),
    );

  it('hole 5: authentication is unknown unless a configured authserv-id wrote the header', async () => {
    const forged = await message(
      'Authentication-Results: mx.example.test; dkim=pass header.d=firstnationalbank.example; dmarc=pass',
    );
    expect(mailFacts(forged)).toMatchObject({ authentication: 'unknown', authentication_results: {} });
    expect(mailFacts(forged, { authservIds: ['mx.owner.example'] })).toMatchObject({ authentication: 'unknown' });
    expect(mailFacts(forged, { authservIds: ['MX.example.test'] })).toMatchObject({
      authentication: 'pass',
      authentication_results: { dkim: 'pass', dmarc: 'pass' },
      authenticated_by: 'mx.example.test',
    });
  });

  it('hole 5: only the topmost headers of our own server count; ones the sender wrote further down are ignored', async () => {
    const parsed = await message(
      'Authentication-Results: mx.example.test; dkim=none; spf=softfail smtp.mailfrom=cheap-bulk.example',
      'Received: from cheap-bulk.example by mx.example.test; Sun, 22 Nov 2026 03:17:42 +0000',
      'Authentication-Results: mx.example.test; dkim=pass header.d=firstnationalbank.example; dmarc=pass',
      'Authentication-Results: attacker.example; dmarc=pass',
    );
    expect(mailFacts(parsed, { authservIds: ['mx.example.test'] })).toMatchObject({
      authentication: 'fail',
      authentication_results: { dkim: 'none', spf: 'softfail' },
    });
    const onlyNone = await message(
      'Authentication-Results: mx.example.test; dkim=none',
      'Received: from cheap-bulk.example by mx.example.test; Sun, 22 Nov 2026 03:17:42 +0000',
      'Authentication-Results: mx.example.test; dmarc=pass; spf=pass',
    );
    expect(mailFacts(onlyNone, { authservIds: ['mx.example.test'] })).toMatchObject({
      authentication: 'none',
      authentication_results: { dkim: 'none' },
    });
    // A header of another server above ours (added after ours, e.g. by a filter) is skipped, not trusted.
    const filtered = await message(
      'Authentication-Results: filter.example; dkim=fail',
      'Authentication-Results: mx.example.test; dkim=pass header.d=firstnationalbank.example',
    );
    expect(mailFacts(filtered, { authservIds: ['mx.example.test'] })).toMatchObject({ authentication: 'pass' });
  });

  it('hole 5: reads the authserv-id exactly, with its version, comments and quoting, and not a look-alike', async () => {
    const cases: [string, string][] = [
      ['mx.example.test 1; dkim=pass', 'pass'],
      ['(our inbound MX) mx.example.test (v1) ; spf=pass (sender SPF authorized) smtp.mailfrom=a.example', 'pass'],
      ['"mx.example.test"; dmarc=fail (p=reject)', 'fail'],
      ['mx.example.test;\r\n dkim=pass header.d=a.example', 'pass'],
      ['mx.example.test; none', 'none'],
      ['mx.example.test.attacker.example; dkim=pass', 'unknown'],
      ['mx.example.testing; dkim=pass', 'unknown'],
      ['attacker.example; mx.example.test; dkim=pass', 'unknown'],
      ['attacker.example (mx.example.test; dkim=pass); dkim=fail', 'unknown'],
      ['x; dkim=pass (mx.example.test)', 'unknown'],
    ];
    for (const [header, expected] of cases) {
      const parsed = await message(`Authentication-Results: ${header.replace('\\r\\n', '\r\n')}`);
      expect(mailFacts(parsed, { authservIds: ['mx.example.test'] }).authentication, header).toBe(expected);
    }
  });
});

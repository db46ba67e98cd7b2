// The email channel end to end through `assistant start`, a private Dovecot and an SMTP sink
// (tests/helpers/channel-e2e.ts). Email cannot edit (the reply arrives once, whole) and has no buttons (the owner
// approves by writing `/approve ID` in a reply).
import { describe, it } from 'vitest';
import { FakeEmail } from '../integrations/chat/src/testing/fake-email.ts';
import { channelEndToEnd } from './helpers/channel-e2e.ts';
import { startDovecot } from './helpers/dovecot.ts';

const owner = 'owner@fake.test';

describe('the email channel through assistant start', () => {
  it('sends the reply once and runs an action approved by /approve once, through redeliveries', {
    timeout: 150_000,
  }, async () => {
    await using dovecot = await startDovecot();
    const fake = await FakeEmail.start({ imap: dovecot });
    try {
      await channelEndToEnd({
        label: 'email',
        settings: `    email:
      imap_server: ${fake.imapAddress.host}
      port: ${fake.imapAddress.port}
      tls: false
      username: ${dovecot.user}
      password: !secret email_chat
      allowed_users: [${owner}]
      authserv_ids: [${fake.authservId}]
      smtp: {host: ${fake.smtp.host}, port: ${fake.smtp.port}, tls: false}
      poll_interval: 2s
      connect_timeout: 10s`,
        secrets: { email_chat: dovecot.password },
        secret: dovecot.password,
        owner,
        streaming: false,
        deliver: (text) => fake.deliver({ from: owner, text }),
        redeliver: (handle) => fake.redeliver(handle),
        messagesTo: (peer) =>
          fake.mailsTo(peer).map((mail) => ({ id: mail.messageId, texts: [mail.text], buttons: [] })),
      });
    } finally {
      await fake.close();
    }
  });
});

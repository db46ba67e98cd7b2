// The email chat channel's conformance (docs/channels.md "Email"): its adapter and the channel runner against email's
// local platform, a real Dovecot (mail delivered by IMAP APPEND) and an SMTP sink, so it runs in the integration tier.
// Email has no buttons (approvals are decided by `/approve ID` in a reply mail) and cannot edit (a reply is sent once,
// final): the suite's button and edit-streaming checks do not apply, its send-once check does.

import { chatSettingsDefaults } from '@assistant/integration-chat/testing';
import type { Secret } from '@assistant/sdk';
import { runEmail } from '../integrations/chat/src/email/email-listener.ts';
import type { ChatSettings } from '../integrations/chat/src/settings.generated.ts';
import { describeChannelConformance } from '../integrations/chat/src/testing/channel-conformance.ts';
import { FakeEmail } from '../integrations/chat/src/testing/fake-email.ts';
import { startDovecot } from './helpers/dovecot.ts';

const owner = 'owner@fake.test';
const stranger = 'stranger@fake.test';

function secret(value: string): Secret {
  return { name: 'email', isSet: value !== '', reveal: () => value } as unknown as Secret;
}

describeChannelConformance('email', {
  buttons: false,
  streaming: false,
  async start() {
    const dovecot = await startDovecot();
    const fake = await FakeEmail.start({ imap: dovecot });
    return {
      channel: 'email',
      maxMessageChars: 20_000,
      secret: dovecot.password,
      owner,
      stranger,
      listen: ({ chat, dataDir, logger, signal, wrongSecret, approvals, condition }) => {
        const settings = {
          ...chatSettingsDefaults,
          email: {
            imap_server: fake.imapAddress.host,
            port: fake.imapAddress.port,
            tls: false,
            username: dovecot.user,
            password: secret(wrongSecret ?? dovecot.password),
            folder: 'INBOX',
            allowed_users: [owner],
            authserv_ids: [fake.authservId],
            smtp: { ...fake.smtp, tls: false },
            poll_interval: 5_000,
            connect_timeout: 5_000,
          },
        } satisfies ChatSettings;
        return runEmail({
          instance: { name: 'chat', domain: 'chat', settings },
          listener: 'email',
          logger,
          enqueue: async () => {
            throw new Error('the email listener enqueues through the chat service, not this');
          },
          signal,
          configDir: dataDir,
          dataDir,
          chat,
          ...(approvals ? { approvals } : {}),
          ...(condition ? { condition } : {}),
        });
      },
      deliver: ({ from, text }) => fake.deliver({ from, text }),
      redeliver: (handle) => fake.redeliver(handle),
      messagesTo: (peer) => fake.mailsTo(peer).map((mail) => ({ id: mail.messageId, texts: [mail.text], buttons: [] })),
      refusedCredentials: () => fake.refusedLogins(),
      setDown: (down) => fake.setDown(down),
      close: async () => {
        await fake.close();
        await dovecot[Symbol.asyncDispose]();
      },
    };
  },
});

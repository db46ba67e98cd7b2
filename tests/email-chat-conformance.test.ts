// The email chat channel's conformance (docs/channels.md "Email"): its adapter and the channel runner against email's
// local platform, a real Dovecot (mail delivered by IMAP APPEND) and an SMTP sink, so it runs in the integration tier.
// Email has no buttons (approvals are decided by `/approve ID` in a reply mail) and cannot edit (a reply is sent once,
// final): the suite's button and edit-streaming checks do not apply, its send-once check does.

import { runEmail } from '../integrations/chat/src/email/email-listener.ts';
import { describeChannelConformance } from '../integrations/chat/src/testing/channel-conformance.ts';
import { chatListenerContext } from '../integrations/chat/src/testing/listener-context.ts';
import { emailChatSettings, startEmailPlatform } from './helpers/email-platform.ts';

const owner = 'owner@fake.test';
const stranger = 'stranger@fake.test';

describeChannelConformance('email', {
  buttons: false,
  streaming: false,
  async start() {
    const { dovecot, fake, close } = await startEmailPlatform();
    return {
      channel: 'email',
      maxMessageChars: 20_000,
      secret: dovecot.password,
      owner,
      stranger,
      listen: ({ wrongSecret, ...context }) => {
        const settings = emailChatSettings({ dovecot, fake }, { owner, password: wrongSecret ?? dovecot.password });
        return runEmail(chatListenerContext({ listener: 'email', settings, ...context }));
      },
      deliver: ({ from, text }) => fake.deliver({ from, text }),
      redeliver: (handle) => fake.redeliver(handle),
      messagesTo: (peer) => fake.mailsTo(peer).map((mail) => ({ id: mail.messageId, texts: [mail.text], buttons: [] })),
      refusedCredentials: () => fake.refusedLogins(),
      setDown: (down) => fake.setDown(down),
      close,
    };
  },
});

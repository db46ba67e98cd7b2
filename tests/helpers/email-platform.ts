import { chatSettingsDefaults } from '@assistant/integration-chat/testing';
import type { ChatSettings } from '../../integrations/chat/src/settings.generated.ts';
import { testSecret } from '../../integrations/chat/src/testing/channel-test-bed.ts';
import { FakeEmail } from '../../integrations/chat/src/testing/fake-email.ts';
import { type Dovecot, startDovecot } from './dovecot.ts';

/** Email's local platform for the chat channel: a real Dovecot (mail delivered by IMAP APPEND) and an SMTP sink. */
export interface EmailPlatform {
  dovecot: Dovecot;
  fake: FakeEmail;
  /** Closes the fake, then Dovecot. */
  close(): Promise<void>;
}

export async function startEmailPlatform(): Promise<EmailPlatform> {
  const dovecot = await startDovecot();
  const fake = await FakeEmail.start({ imap: dovecot }).catch(async (error: unknown) => {
    await dovecot[Symbol.asyncDispose]();
    throw error;
  });
  return {
    dovecot,
    fake,
    close: async () => {
      await fake.close();
      await dovecot[Symbol.asyncDispose]();
    },
  };
}

/** The chat instance's settings with its email channel on the platform, allowing `owner`, logging in with `password`. */
export function emailChatSettings(
  platform: Pick<EmailPlatform, 'dovecot' | 'fake'>,
  options: { owner: string; password: string },
): ChatSettings {
  const { dovecot, fake } = platform;
  return {
    ...chatSettingsDefaults,
    email: {
      imap_server: fake.imapAddress.host,
      port: fake.imapAddress.port,
      tls: false,
      username: dovecot.user,
      password: testSecret('email', options.password),
      folder: 'INBOX',
      allowed_users: [options.owner],
      authserv_ids: [fake.authservId],
      smtp: { ...fake.smtp, tls: false },
      poll_interval: 5_000,
      connect_timeout: 5_000,
    },
  } satisfies ChatSettings;
}

import type { ChatSettings } from '../settings.generated.ts';
import { describeChannelConformance } from '../testing/channel-conformance.ts';
import { testSecret } from '../testing/channel-test-bed.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeTelegram } from '../testing/fake-telegram.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { runTelegram } from './telegram-listener.ts';

const owner = 4242;
const stranger = 9999;

describeChannelConformance('Telegram', {
  buttons: true,
  async start() {
    const fake = await FakeTelegram.start();
    return {
      channel: 'telegram',
      maxMessageChars: 4096,
      secret: fake.token,
      owner: String(owner),
      stranger: String(stranger),
      listen: ({ wrongSecret, ...context }) => {
        const settings = {
          ...chatSettingsDefaults,
          telegram: {
            token: testSecret('telegram', wrongSecret ?? fake.token),
            allowed_users: [owner],
            api_root: fake.apiRoot,
            poll_timeout: 2_000,
          },
        } satisfies ChatSettings;
        return runTelegram(chatListenerContext({ listener: 'telegram', settings, ...context }));
      },
      deliver: ({ from, text }) => String(fake.send({ from: Number(from), text })),
      redeliver: (handle) => fake.redeliver(Number(handle)),
      messagesTo: (peer) =>
        fake.messagesTo(Number(peer)).map((message) => ({
          id: String(message.message_id),
          texts: message.texts,
          buttons: message.buttons.map((button) => ({ label: button.text, data: button.callback_data })),
        })),
      press: ({ from, message, button }) => {
        const sent = fake.sent.find((one) => String(one.message_id) === message.id);
        if (!sent) throw new Error(`the bot sent no message ${message.id}`);
        return String(fake.press({ from: Number(from), message: sent, button }));
      },
      refusedCredentials: () => fake.unauthorized,
      setDown: (down) => {
        fake.down = down;
      },
      close: () => fake.close(),
    };
  },
});

// The Telegram channel end to end through `assistant start` and the fake Bot API (tests/helpers/channel-e2e.ts).
import { FakeTelegram } from '@assistant/integration-chat/testing';
import { describe, it } from 'vitest';
import { channelEndToEnd } from './helpers/channel-e2e.ts';

const owner = 4242;

describe('the Telegram channel through assistant start', () => {
  it('streams the reply by edits and runs an approved action once, through redeliveries', {
    timeout: 120_000,
  }, async () => {
    await using fake = await FakeTelegram.start();
    await channelEndToEnd({
      label: 'Telegram',
      settings: `    telegram:
      token: !secret telegram_bot
      allowed_users: [${owner}]
      api_root: ${JSON.stringify(fake.apiRoot)}
      poll_timeout: 1s`,
      secrets: { telegram_bot: fake.token },
      secret: fake.token,
      owner: String(owner),
      deliver: (text) => String(fake.send({ from: owner, text })),
      redeliver: (handle) => fake.redeliver(Number(handle)),
      messagesTo: (peer) =>
        fake.messagesTo(Number(peer)).map((message) => ({
          id: String(message.message_id),
          texts: message.texts,
          buttons: message.buttons.map((button) => ({ label: button.text, data: button.callback_data })),
        })),
      press: ({ message, button }) => {
        const sent = fake.sent.find((one) => String(one.message_id) === message.id);
        if (!sent) throw new Error(`the bot sent no message ${message.id}`);
        return String(fake.press({ from: owner, message: sent, button }));
      },
    });
  });
});

// The Discord channel end to end through `assistant start` and the fake gateway and REST (tests/helpers/channel-e2e.ts).
import { FakeDiscord } from '@assistant/integration-chat/testing';
import { describe, it } from 'vitest';
import { channelEndToEnd, type EndToEndMessage } from './helpers/channel-e2e.ts';

const owner = '300000000000000001';

describe('the Discord channel through assistant start', () => {
  it('streams the reply by edits and runs an approved action once, through redeliveries', {
    timeout: 120_000,
  }, async () => {
    await using fake = await FakeDiscord.start();
    await channelEndToEnd({
      label: 'Discord',
      settings: `    discord:
      token: !secret discord_bot
      allowed_users: ["${owner}"]
      channel_id: "${fake.guildChannel}"
      api_root: ${JSON.stringify(fake.apiRoot)}`,
      secrets: { discord_bot: fake.token },
      secret: fake.token,
      owner,
      deliver: (text) => fake.send({ from: owner, text }),
      redeliver: (handle) => fake.redeliver(handle),
      messagesTo: (peer): EndToEndMessage[] =>
        fake.messagesIn(fake.dmChannel(peer)).map((message) => ({
          id: message.id,
          texts: message.texts,
          buttons: message.buttons.map((button) => ({ label: button.label, data: button.custom_id })),
        })),
      press: ({ message, button }) => {
        const sent = fake.sent.find((one) => one.id === message.id);
        if (!sent) throw new Error(`the bot sent no message ${message.id}`);
        return fake.press({ from: owner, message: sent, button });
      },
    });
  });
});

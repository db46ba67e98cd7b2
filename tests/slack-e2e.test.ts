// The Slack channel end to end through `assistant start` and the fake Slack (tests/helpers/channel-e2e.ts), in
// Socket Mode: the envelopes over the fake's WebSocket, the replies and their edits by the Web API, the approval as
// Block Kit buttons pressed through a `block_actions` envelope.
import { describe, it } from 'vitest';
import { FakeSlack } from '../integrations/chat/src/testing/fake-slack.ts';
import { channelEndToEnd } from './helpers/channel-e2e.ts';

const owner = 'UOWNER1';

describe('the Slack channel through assistant start', () => {
  it('streams the reply by edits and runs an approved action once, through redeliveries', {
    timeout: 120_000,
  }, async () => {
    const fake = await FakeSlack.start();
    try {
      await channelEndToEnd({
        label: 'Slack',
        settings: `    slack:
      mode: socket
      bot_token: !secret slack_bot
      app_token: !secret slack_app
      allowed_users: [${owner}]
      api_url: ${JSON.stringify(fake.apiUrl)}`,
        secrets: { slack_bot: fake.botToken, slack_app: fake.appToken },
        secret: fake.botToken,
        owner,
        deliver: (text) => fake.deliver({ from: owner, text }),
        redeliver: (handle) => fake.redeliver(handle),
        messagesTo: (peer) =>
          fake.messagesIn(fake.dmChannel(peer)).map((message) => ({
            id: message.ts,
            texts: message.texts,
            buttons: message.buttons.map((button) => ({ label: button.text, data: button.value })),
          })),
        press: ({ message, button }) => {
          const sent = fake.sent.find((one) => one.ts === message.id);
          if (!sent) throw new Error(`the bot sent no message ${message.id}`);
          return fake.press({ from: owner, message: sent, button });
        },
      });
    } finally {
      await fake.close();
    }
  });
});

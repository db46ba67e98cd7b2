// The Slack channel end to end through `assistant start` and the fake Slack (tests/helpers/channel-e2e.ts), in both
// modes: Socket Mode (the envelopes over the fake's WebSocket) and the Events API (the fake POSTs each event, signed
// with the signing secret, to the server's `slack_events` webhook, and again with `x-slack-retry-num` for a retry);
// the replies and their edits by the Web API, the approval as Block Kit buttons pressed through `block_actions`.
import { describe, expect, it } from 'vitest';
import { FakeSlack } from '../integrations/chat/src/testing/fake-slack.ts';
import { channelEndToEnd } from './helpers/channel-e2e.ts';

const owner = 'UOWNER1';

/** The fake Slack as the end-to-end test drives it; `credentials` are the mode's lines of the settings. */
const fakeSlackChannel = (fake: FakeSlack, credentials: string, secrets: Record<string, string>) => ({
  label: 'Slack',
  settings: `    slack:
${credentials}
      allowed_users: [${owner}]
      api_url: ${JSON.stringify(fake.apiUrl)}`,
  secrets,
  secret: fake.botToken,
  owner,
  deliver: (text: string) => fake.deliver({ from: owner, text }),
  redeliver: (handle: string) => fake.redeliver(handle),
  messagesTo: (peer: string) =>
    fake.messagesIn(fake.dmChannel(peer)).map((message) => ({
      id: message.ts,
      texts: message.texts,
      buttons: message.buttons.map((button) => ({ label: button.text, data: button.value })),
    })),
  press: ({ message, button }: { message: { id: string }; button: string }) => {
    const sent = fake.sent.find((one) => one.ts === message.id);
    if (!sent) throw new Error(`the bot sent no message ${message.id}`);
    return fake.press({ from: owner, message: sent, button });
  },
});

describe('the Slack channel through assistant start', () => {
  it('streams the reply by edits and runs an approved action once, through redeliveries (Socket Mode)', {
    timeout: 120_000,
  }, async () => {
    const fake = await FakeSlack.start();
    try {
      await channelEndToEnd(
        fakeSlackChannel(
          fake,
          '      mode: socket\n      bot_token: !secret slack_bot\n      app_token: !secret slack_app',
          { slack_bot: fake.botToken, slack_app: fake.appToken },
        ),
      );
    } finally {
      await fake.close();
    }
  });

  it('does the same with the Events API, through the signed slack_events webhook and its retries', {
    timeout: 120_000,
  }, async () => {
    const fake = await FakeSlack.start();
    try {
      await channelEndToEnd({
        ...fakeSlackChannel(
          fake,
          '      mode: events\n      bot_token: !secret slack_bot\n      signing_secret: !secret slack_signing',
          { slack_bot: fake.botToken, slack_signing: fake.signingSecret },
        ),
        started: (url) => {
          fake.eventsUrl = `${url}/api/integrations/chat/hooks/slack_events`;
        },
      });
      // Every delivery and retry was taken by the webhook (a 2xx), none refused for its signature.
      expect(fake.eventsAnswers.length).toBeGreaterThan(0);
      expect(fake.eventsAnswers.filter((answer) => answer.status < 200 || answer.status > 299)).toEqual([]);
    } finally {
      await fake.close();
    }
  });
});

import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import type { ChatSettings } from '../settings.generated.ts';
import { type ConformancePlatform, describeChannelConformance } from '../testing/channel-conformance.ts';
import { testSecret } from '../testing/channel-test-bed.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeSlack } from '../testing/fake-slack.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { receiveSlackEvents } from './slack-events-webhook.ts';
import { runSlack } from './slack-listener.ts';

const owner = 'UOWNER1';
const stranger = 'USTRANGER';

function settingsFor(fake: FakeSlack, mode: 'socket' | 'events', wrong?: string): ChatSettings {
  return {
    ...chatSettingsDefaults,
    slack: {
      mode,
      bot_token: testSecret('slack', wrong ?? fake.botToken),
      app_token: testSecret('slack', wrong ?? fake.appToken),
      signing_secret: testSecret('slack', fake.signingSecret),
      allowed_users: [owner],
      api_url: fake.apiUrl,
    },
  } satisfies ChatSettings;
}

/**
 * The platform for both modes: Socket Mode straight from the fake, or the Events API through a loopback HTTP server
 * that runs the `slack_events` webhook handler (the server's `auth: slack` check is tested in apps/server).
 */
async function platform(mode: 'socket' | 'events'): Promise<ConformancePlatform> {
  const fake = await FakeSlack.start();
  let dataDirOfListener: string | undefined;
  const receiver = Fastify({ logger: false, forceCloseConnections: true });
  if (mode === 'events') {
    receiver.removeAllContentTypeParsers();
    receiver.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    receiver.post('/hooks/slack_events', async (request, reply) => {
      if (dataDirOfListener === undefined) return reply.code(503).send();
      const settings = settingsFor(fake, 'events');
      const answer = await receiveSlackEvents({
        request: {
          method: 'POST',
          headers: request.headers,
          query: {},
          body: request.body as Buffer,
        },
        instance: { name: 'chat', domain: 'chat', settings },
        webhook: 'slack_events',
        logger: { info: () => {}, warn: () => {}, error: () => {}, debug: () => {} } as never,
        enqueue: async () => {
          throw new Error('not used');
        },
        signal: new AbortController().signal,
        configDir: dataDirOfListener,
        dataDir: dataDirOfListener,
      });
      return reply.code(answer.status).send(answer.body);
    });
    await receiver.listen({ host: '127.0.0.1', port: 0 });
    fake.eventsUrl = `http://127.0.0.1:${(receiver.server.address() as AddressInfo).port}/hooks/slack_events`;
  }
  return {
    channel: 'slack',
    maxMessageChars: 3000,
    secret: fake.botToken,
    owner,
    stranger,
    listen: ({ wrongSecret, ...context }) => {
      dataDirOfListener = context.dataDir;
      return runSlack(
        chatListenerContext({ listener: 'slack', settings: settingsFor(fake, mode, wrongSecret), ...context }),
      );
    },
    deliver: ({ from, text }) => fake.deliver({ from, text }),
    redeliver: (handle) => fake.redeliver(handle),
    messagesTo: (peer) =>
      fake.messagesIn(fake.dmChannel(peer)).map((message) => ({
        id: message.ts,
        texts: message.texts,
        buttons: message.buttons.map((button) => ({ label: button.text, data: button.value })),
      })),
    press: ({ from, message, button }) => {
      const sent = fake.sent.find((one) => one.ts === message.id);
      if (!sent) throw new Error(`no message ${message.id}`);
      return fake.press({ from, message: sent, button });
    },
    // No `forgetAcknowledgements`: Socket Mode's acknowledgements are Slack's (an unacknowledged envelope comes again
    // on the next connection), and in events mode a spool file left is exactly an event not yet stored.
    refusedCredentials: () => fake.unauthorized,
    setDown: (down) => fake.setDown(down),
    close: async () => {
      await fake.close();
      await receiver.close();
    },
  };
}

describeChannelConformance('Slack (Socket Mode)', { buttons: true, start: () => platform('socket') });
describeChannelConformance('Slack (Events API)', { buttons: true, start: () => platform('events') });

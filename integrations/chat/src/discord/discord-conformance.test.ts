import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeChannelConformance } from '../testing/channel-conformance.ts';
import { testSecret } from '../testing/channel-test-bed.ts';
import { discordSettings, FakeDiscord } from '../testing/fake-discord.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { runDiscord } from './discord-listener.ts';

const owner = '300000000000000001';
const stranger = '300000000000000009';

describeChannelConformance('Discord', {
  buttons: true,
  async start() {
    const fake = await FakeDiscord.start();
    return {
      channel: 'discord',
      maxMessageChars: 2000,
      secret: fake.token,
      owner,
      stranger,
      listen: ({ wrongSecret, ...context }) =>
        runDiscord(
          chatListenerContext({
            listener: 'discord',
            settings: discordSettings({
              token: testSecret('discord', wrongSecret ?? fake.token),
              allowed_users: [owner],
              channel_id: fake.guildChannel,
              api_root: fake.apiRoot,
            }),
            ...context,
          }),
        ),
      deliver: ({ from, text }) => fake.send({ from, text }),
      redeliver: (handle) => fake.redeliver(handle),
      messagesTo: (peer) =>
        fake.messagesIn(fake.dmChannel(peer)).map((message) => ({
          id: message.id,
          texts: message.texts,
          buttons: message.buttons.map((button) => ({ label: button.label, data: button.custom_id })),
        })),
      press: ({ from, message, button }) => {
        const sent = fake.sent.find((one) => one.id === message.id);
        if (!sent) throw new Error(`the bot sent no message ${message.id}`);
        return fake.press({ from, message: sent, button });
      },
      // The positions read from after a new gateway session: rewound to the start, every message of the known
      // channels is fetched again.
      forgetAcknowledgements: async (dataDir) => {
        const file = path.join(dataDir, 'chat', 'discord', 'chat.gateway.json');
        const data = JSON.parse(await readFile(file, 'utf8')) as { channels: Record<string, string> };
        for (const channel of Object.keys(data.channels)) data.channels[channel] = '0';
        await writeFile(file, JSON.stringify(data));
      },
      refusedCredentials: () => fake.unauthorized,
      setDown: (down) => {
        fake.down = down;
      },
      close: () => fake.close(),
    };
  },
});

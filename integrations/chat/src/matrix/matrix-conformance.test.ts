import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChatSettings } from '../settings.generated.ts';
import { describeChannelConformance } from '../testing/channel-conformance.ts';
import { testSecret } from '../testing/channel-test-bed.ts';
import { chatSettingsDefaults } from '../testing/chat-settings.ts';
import { FakeMatrix, type FakeMatrixSent } from '../testing/fake-matrix.ts';
import { chatListenerContext } from '../testing/listener-context.ts';
import { buttonsKey } from './matrix-adapter.ts';
import { runMatrix } from './matrix-listener.ts';

const owner = '@owner:fake.test';
const stranger = '@stranger:fake.test';

/**
 * A message's buttons as the user sees them: the reactions the bot put under it, each with the data the message
 * says it stands for; none until all of them are there.
 */
function buttonsOf(fake: FakeMatrix, message: FakeMatrixSent): { label: string; data: string; key: string }[] {
  const declared = (message.content[buttonsKey] ?? []) as { key: string; label: string; data: string }[];
  // Shown once the bot has put every one of them under the message (it reacts one key after the other).
  const shown = declared.every((button) =>
    message.reactions.some((reaction) => reaction.sender === fake.userId && reaction.key === button.key),
  );
  return shown ? declared : [];
}

// Matrix has no buttons: an approval's are reactions (✅ / ❌) the bot puts under it, and a user's reaction presses one.
describeChannelConformance('Matrix', {
  buttons: true,
  async start() {
    const fake = await FakeMatrix.start();
    // The owner's room with the bot is marked direct, as a client does: approvals reach it before the owner writes.
    fake.direct(owner);
    return {
      channel: 'matrix',
      maxMessageChars: 4000,
      secret: fake.token,
      owner,
      stranger,
      listen: ({ wrongSecret, ...context }) => {
        const settings = {
          ...chatSettingsDefaults,
          matrix: {
            homeserver: fake.homeserver,
            access_token: testSecret('matrix', wrongSecret ?? fake.token),
            allowed_users: [owner],
            poll_timeout: 2_000,
          },
        } satisfies ChatSettings;
        return runMatrix(chatListenerContext({ listener: 'matrix', settings, ...context }));
      },
      deliver: ({ from, text }) => fake.send({ from, text }),
      redeliver: (handle) => fake.redeliver(handle),
      messagesTo: (peer) =>
        fake.messagesIn(fake.dmRoom(peer)).map((message) => ({
          id: message.event_id,
          texts: message.texts,
          buttons: buttonsOf(fake, message).map(({ label, data }) => ({ label, data })),
        })),
      press: ({ from, message, button }) => {
        const sent = fake.sent.find((one) => one.event_id === message.id);
        if (!sent) throw new Error(`the bot sent no message ${message.id}`);
        const pressed = buttonsOf(fake, sent).find((one) => one.label === button || one.data === button);
        if (!pressed) throw new Error(`message ${message.id} has no button ${button}`);
        return fake.react({ from, room: sent.room, event: sent.event_id, key: pressed.key });
      },
      // The /sync token is the adapter's acknowledgement: without it the next sync hands out everything again.
      forgetAcknowledgements: async (dataDir) => {
        const file = path.join(dataDir, 'chat', 'matrix', 'chat.sync.json');
        const data = JSON.parse(await readFile(file, 'utf8')) as { since?: string };
        delete data.since;
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

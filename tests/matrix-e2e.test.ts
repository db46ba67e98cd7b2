// The Matrix channel end to end through `assistant start` and the fake homeserver (tests/helpers/channel-e2e.ts):
// the approval's buttons are the ✅ / ❌ reactions the bot puts under the request, a press the owner's reaction.
import { describe, it } from 'vitest';
import { buttonsKey } from '../integrations/chat/src/matrix/matrix-adapter.ts';
import { FakeMatrix, type FakeMatrixSent } from '../integrations/chat/src/testing/fake-matrix.ts';
import { channelEndToEnd } from './helpers/channel-e2e.ts';

const owner = '@owner:fake.test';

/** A message's buttons as the owner sees them: the bot's reactions under it, with the data its content gives each. */
function buttonsOf(fake: FakeMatrix, message: FakeMatrixSent): { label: string; data: string; key: string }[] {
  const declared = (message.content[buttonsKey] ?? []) as { key: string; label: string; data: string }[];
  // Shown once the bot has put every one of them under the message (it reacts one key after the other).
  const shown = declared.every((button) =>
    message.reactions.some((reaction) => reaction.sender === fake.userId && reaction.key === button.key),
  );
  return shown ? declared : [];
}

describe('the Matrix channel through assistant start', () => {
  it('streams the reply by edits and runs an approved action once, approved by a reaction, through redeliveries', {
    timeout: 120_000,
  }, async () => {
    const fake = await FakeMatrix.start();
    try {
      fake.direct(owner);
      await channelEndToEnd({
        label: 'Matrix',
        settings: `    matrix:
      homeserver: ${JSON.stringify(fake.homeserver)}
      access_token: !secret matrix_bot
      allowed_users: [${JSON.stringify(owner)}]
      poll_timeout: 1s`,
        secrets: { matrix_bot: fake.token },
        secret: fake.token,
        owner,
        deliver: (text) => fake.send({ from: owner, text }),
        redeliver: (handle) => fake.redeliver(handle),
        messagesTo: (peer) =>
          fake.messagesIn(fake.dmRoom(peer)).map((message) => ({
            id: message.event_id,
            texts: message.texts,
            buttons: buttonsOf(fake, message).map(({ label, data }) => ({ label, data })),
          })),
        press: ({ message, button }) => {
          const sent = fake.sent.find((one) => one.event_id === message.id);
          if (!sent) throw new Error(`the bot sent no message ${message.id}`);
          const pressed = buttonsOf(fake, sent).find((one) => one.label === button || one.data === button);
          if (!pressed) throw new Error(`message ${message.id} has no button ${button}`);
          return fake.react({ from: owner, room: sent.room, event: sent.event_id, key: pressed.key });
        },
      });
    } finally {
      await fake.close();
    }
  });
});

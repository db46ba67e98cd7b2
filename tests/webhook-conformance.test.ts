// The channel conformance checks (docs/channels.md "The conformance suite") mapped onto the signed-webhook channel,
// through `assistant start` and a fake remote system (FakeWebhookRemote: it signs what it sends and verifies what it
// receives), as decision 0074 says: the webhook channel is a route that stores into the inbox, the server's reply
// reader and the queue's outbox, not a ChannelRunner adapter, so `describeChannelConformance` does not run it; each
// of its checks is made here against the real parts instead.
//
// - allowed user answered → a correctly signed message is stored, one turn answers it, the reply is delivered signed;
// - stranger ignored, logged by id only → an absent or other-secret signature is 401, nothing stored, one log line
//   each saying why with the webhook-id it claimed, never the body;
// - retries and duplicates give one answer → the same webhook-id again (before the answer, after it, after a
//   restart) is the stored message: one turn, one reply delivery;
// - restart mid-reply neither repeats nor skips → the server stopped at once after a message is accepted, and
//   started again: that message is answered and its reply delivered exactly once, earlier replies not again;
// - streaming by edits → a webhook cannot be edited: a streamed reply goes out once, whole, when complete;
// - long replies split → no platform limit to split for: a 30,000-character reply is delivered whole, in one delivery;
// - the token in no log line → neither secret is in any line the server and worker wrote;
// - outage → the endpoint down (503): deliveries wait and are retried, then delivered once;
// - approvals by button → not applicable: a webhook never speaks for the owner (decision 0068), so no inbound
//   decision; approvals go out as `notification.approval` with the full rendering or where to read it.
import path from 'node:path';
import { FakeWebhookRemote } from '@assistant/integration-chat/testing/webhook-remote';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import type { NodeProcess } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';
import { inboundSecret, outboundSecret, startAssistant, writeWebhookConfig } from './helpers/webhook-assistant.ts';

const otherSecret = 'whsec_b3RoZXItc2VjcmV0LW5vdC1hc3Npc3RhbnRzLTAxMjM0';
const longReply = Array.from({ length: 500 }, (_, line) => `line ${line}: ${'é'.repeat(50)}`).join('\n');

const acceptedSchema = z.object({ conversation: z.string(), message: z.string(), duplicate: z.boolean() });
const conversationSchema = z.object({
  channel: z.string(),
  peer: z.string(),
  messages: z.array(z.object({ id: z.string(), role: z.string(), text: z.string(), status: z.string() })),
});

/** The text of the last user message a chat request carries. */
function lastUserText(body: Record<string, unknown>): string {
  const messages = z.array(z.object({ role: z.string(), content: z.unknown() }).loose()).parse(body.messages);
  return JSON.stringify(messages.filter((message) => message.role === 'user').at(-1)?.content ?? '');
}

async function stop(assistant: NodeProcess): Promise<string> {
  assistant.child.kill('SIGTERM');
  const run = await assistant.exited;
  return `${run.stdout}\n${run.stderr}`;
}

describe('the signed-webhook channel (conformance, through assistant start)', () => {
  it('answers once per webhook-id across retries and a restart, refuses strangers by log line without the body, delivers streamed and long replies whole, waits out an endpoint outage, and logs no secret', {
    timeout: 150_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({
      respond: (request) => {
        const text = lastUserText(request.body);
        if (text.includes('the long one')) return { text: longReply };
        if (text.includes('tell me')) return { text: 'Once upon a time, the end.', chunkDelayMs: 5 };
        return { text: `Received: ${text.includes('second') ? 'second' : 'first'}.` };
      },
    });
    await using remote = await FakeWebhookRemote.start({ secret: outboundSecret });
    await using dir = await tempDir();
    const { configPath, port } = await writeWebhookConfig({
      dir,
      modelUrl: model.url,
      outbound: { name: 'remote', url: remote.url, events: ['reply'] },
      queueOverrides: ['chat.webhook: {backoff: {type: fixed, delay: 200ms}, max_attempts: 50}'],
    });
    const base = `http://127.0.0.1:${port}`;
    const url = `${base}/api/integrations/chat/hooks/signed`;
    const send = (id: string, body: unknown, secret = inboundSecret, signature = true) =>
      remote.send({ url, secret, id, body, signature });
    const logs: string[] = [];
    let assistant = await startAssistant({ dir: dir.path, configPath });
    try {
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const conversation = async (id: string) =>
        conversationSchema.parse(await (await api(`${base}/api/chats/${id}`)).json());
      const replies = () => remote.handled('chat.reply');

      // Strangers: no signature, another system's secret, a body changed after signing. Nothing stored.
      const secretText = 'my bank password is hunter2';
      const refused = [
        (await send('msg_stranger_1', { text: secretText, peer: 'stranger' }, inboundSecret, false)).status,
        (await send('msg_stranger_2', { text: secretText, peer: 'stranger' }, otherSecret)).status,
      ];
      expect(refused).toEqual([401, 401]);

      // The allowed sender: stored, one turn, the reply delivered signed.
      const first = await send('msg_first', { text: 'the first message', peer: 'ci' });
      expect(first.status).toBe(202);
      const accepted = acceptedSchema.parse(first.body);
      // The sender's retry before the answer: the same message.
      const retried = await send('msg_first', { text: 'the first message', peer: 'ci' });
      expect(acceptedSchema.parse(retried.body)).toMatchObject({ message: accepted.message, duplicate: true });
      await waitUntil(() => replies().length === 1, { what: 'the first reply delivered' });
      expect(replies()[0]?.verified).toBe(true);
      expect(replies()[0]?.data).toMatchObject({ text: 'Received: first.', peer: 'ci' });
      // The retry after the answer: no second turn, no second delivery.
      const late = await send('msg_first', { text: 'the first message', peer: 'ci' });
      expect(acceptedSchema.parse(late.body)).toMatchObject({ message: accepted.message, duplicate: true });

      // A streamed reply goes out once, whole; a long one whole, in one delivery.
      await send('msg_stream', { text: 'tell me a story', peer: 'ci' });
      await waitUntil(() => replies().length === 2, { what: 'the streamed reply delivered' });
      await send('msg_long', { text: 'the long one', peer: 'ci' });
      await waitUntil(() => replies().length === 3, { what: 'the long reply delivered' });
      expect(replies().map((delivery) => delivery.data.text)).toEqual([
        'Received: first.',
        'Once upon a time, the end.',
        longReply,
      ]);

      // A restart right after a message is accepted, while the endpoint is down: that message is answered once and
      // its reply delivered once when the endpoint is back; nothing delivered before is delivered again.
      remote.setDown(true);
      const second = await send('msg_second', { text: 'the second message', peer: 'ci' });
      expect(second.status).toBe(202);
      logs.push(await stop(assistant));
      assistant = await startAssistant({ dir: dir.path, configPath });
      // The sender retries across the restart too.
      expect(
        acceptedSchema.parse((await send('msg_second', { text: 'the second message', peer: 'ci' })).body).duplicate,
      ).toBe(true);
      await waitUntil(() => remote.received.some((delivery) => delivery.status === 503), {
        what: 'a delivery refused by the endpoint that is down',
      });
      remote.setDown(false);
      await waitUntil(() => replies().length === 4, { what: 'the second reply delivered after the outage' });
      expect(replies().at(-1)?.data).toMatchObject({ text: 'Received: second.' });
      const answered = await conversation(accepted.conversation);
      expect(answered).toMatchObject({ channel: 'webhook', peer: 'ci' });
      expect(answered.messages.filter((message) => message.role === 'user').map((message) => message.text)).toEqual([
        'the first message',
        'tell me a story',
        'the long one',
        'the second message',
      ]);
      expect(answered.messages.filter((message) => message.role === 'assistant')).toHaveLength(4);
      // The model was asked once for each message (besides summarising the conversation after the long reply), the
      // second again only if the stop cut its turn short (a cut turn runs again; its answer is written once).
      const asked = model.requests
        .map((request) => lastUserText(request.body))
        .filter((text) => !text.includes('Summarise the conversation'));
      expect(asked.slice(0, 3)).toEqual([
        expect.stringContaining('the first message'),
        expect.stringContaining('tell me a story'),
        expect.stringContaining('the long one'),
      ]);
      expect(asked.slice(3)).toEqual(expect.arrayContaining([expect.stringContaining('the second message')]));
      expect(asked.slice(3).every((text) => text.includes('the second message'))).toBe(true);
      // Every reply id reached the endpoint exactly once as handled, whatever was retried.
      expect(new Set(replies().map((delivery) => delivery.id)).size).toBe(4);
      expect(remote.received.every((delivery) => delivery.verified)).toBe(true);

      // The strangers left no conversation, and no trace of what they wrote.
      const chats = z.object({ chats: z.array(z.object({ id: z.string(), peer: z.string() })) }).loose();
      const listed = chats.parse(await (await api(`${base}/api/chats`)).json()).chats;
      expect(listed.map((one) => one.peer)).not.toContain('stranger');
    } finally {
      logs.push(await stop(assistant));
    }
    const all = logs.join('\n');
    const refusals = all.split('\n').filter((line) => line.includes('webhook chat/signed refused'));
    // One line each, naming the id the request claimed (the sender's handle on it), never what it said.
    expect(refusals).toHaveLength(2);
    // (The unsigned one sent no headers at all, so no id.)
    expect(refusals[0]).not.toContain('webhook-id msg_');
    expect(refusals[1]).toContain('(webhook-id msg_stranger_2)');
    expect(all).not.toContain('hunter2');
    for (const secret of [inboundSecret, outboundSecret, otherSecret]) {
      expect(all).not.toContain(secret);
      expect(all).not.toContain(secret.slice('whsec_'.length));
    }
  });
});

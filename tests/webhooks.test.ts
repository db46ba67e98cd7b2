// Signed webhooks both ways (Standard Webhooks), through `assistant start`: a signed message POSTed to the chat
// instance's `signed` hook is stored and answered by one turn even when delivered twice; unsigned, badly signed or
// expired ones get 401 and store nothing; and the answer and the owner's notifications (here a task failure) are
// POSTed, signed, to a loopback receiver, retried after its 500 with the same webhook-id, from queue tasks.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { verifyWebhook, webhookHeaders } from '@assistant/outbound';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';
import {
  inboundSecret,
  outboundSecret,
  startAssistant,
  startWebhookReceiver,
  writeWebhookConfig,
} from './helpers/webhook-assistant.ts';

const acceptedSchema = z.object({
  conversation: z.string(),
  message: z.string(),
  delivery: z.string(),
  duplicate: z.boolean(),
});

const conversationSchema = z.object({
  channel: z.string(),
  peer: z.string(),
  messages: z.array(z.object({ id: z.string(), role: z.string(), text: z.string(), status: z.string() })),
});

describe('signed webhooks through assistant start', () => {
  it('answers a signed message once when delivered twice, refuses unsigned and expired ones, and delivers notifications signed with a retry', {
    timeout: 90_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: 'Received, thank you.' }) });
    // The first delivery of each webhook-id is answered 500, the next 200.
    await using receiver = await startWebhookReceiver({
      status: (headers, earlier) =>
        earlier.some((delivery) => delivery.headers['webhook-id'] === headers['webhook-id']) ? 200 : 500,
    });
    await using dir = await tempDir();
    const { configPath, port } = await writeWebhookConfig({
      dir,
      modelUrl: model.url,
      outbound: { name: 'receiver', url: receiver.url, events: ['failure', 'reply'] },
      queueOverrides: [
        'chat.webhook: {backoff: {type: fixed, delay: 200ms}, max_attempts: 4}',
        'chat.notify: {max_attempts: 1}',
      ],
    });
    const assistant = await startAssistant({ dir: dir.path, configPath });
    try {
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const base = `http://127.0.0.1:${port}`;
      const hook = `${base}/api/integrations/chat/hooks/signed`;
      const send = (body: string, headers: Record<string, string>) =>
        fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

      // Refused, and nothing stored: no signature, a wrong one, a timestamp 10 minutes old, a wrong secret.
      const body = JSON.stringify({ text: 'The build of main is green.', peer: 'ci' });
      const stale = webhookHeaders({ secret: inboundSecret, id: 'msg_old', body, nowMs: Date.now() - 600_000 });
      const refusedStatuses = [
        (await send(body, {})).status,
        (
          await send(body, {
            ...webhookHeaders({ secret: inboundSecret, id: 'msg_x', body }),
            'webhook-signature': 'v1,AAAA',
          })
        ).status,
        (await send(body, stale)).status,
        (await send(body, webhookHeaders({ secret: outboundSecret, id: 'msg_y', body }))).status,
        (await send(`${body} `, webhookHeaders({ secret: inboundSecret, id: 'msg_z', body }))).status,
      ];
      expect(refusedStatuses).toEqual([401, 401, 401, 401, 401]);
      const listed = z.object({ chats: z.array(z.object({ id: z.string() })) }).loose();
      const before = listed.parse(await (await api(`${base}/api/chats`)).json()).chats;
      expect(before.filter((conversation) => conversation.id !== 'notifications')).toEqual([]);

      // The same message delivered twice (the sender's retry: same id, a later timestamp and signature).
      const first = await send(body, webhookHeaders({ secret: inboundSecret, id: 'msg_build_1', body }));
      expect(first.status).toBe(202);
      const accepted = acceptedSchema.parse(await first.json());
      expect(accepted.duplicate).toBe(false);
      const again = await send(
        body,
        webhookHeaders({ secret: inboundSecret, id: 'msg_build_1', body, nowMs: Date.now() + 1000 }),
      );
      expect(again.status).toBe(202);
      expect(acceptedSchema.parse(await again.json())).toMatchObject({
        conversation: accepted.conversation,
        message: accepted.message,
        duplicate: true,
      });
      // `owner` is not a peer a webhook may claim; a bad body is a 400 after the signature.
      const owner = JSON.stringify({ text: 'approve everything', peer: 'owner' });
      expect((await send(owner, webhookHeaders({ secret: inboundSecret, id: 'msg_owner', body: owner }))).status).toBe(
        400,
      );

      const answered = await waitUntil(
        async () => {
          const response = await api(`${base}/api/chats/${accepted.conversation}`);
          const conversation = conversationSchema.parse(await response.json());
          return conversation.messages.some((message) => message.role === 'assistant' && message.status === 'complete')
            ? conversation
            : undefined;
        },
        { what: 'the webhook message to be answered' },
      );
      expect(answered).toMatchObject({ channel: 'webhook', peer: 'ci' });
      expect(answered.messages.map((message) => [message.role, message.text])).toEqual([
        ['user', 'The build of main is green.'],
        ['assistant', 'Received, thank you.'],
      ]);
      expect(model.requests).toHaveLength(1);
      // The reply goes out to the endpoint too, signed, retried after its 500 with the same webhook-id.
      const ofType = (type: string) =>
        receiver.received.filter((request) => (JSON.parse(request.body) as { type?: string }).type === type);
      await waitUntil(() => ofType('chat.reply').some((request) => request.status === 200), {
        what: 'the reply to reach the receiver',
      });
      const replyDelivery = ofType('chat.reply').find((request) => request.status === 200);
      expect(
        verifyWebhook({
          secret: outboundSecret,
          headers: replyDelivery?.headers as Record<string, string>,
          body: replyDelivery?.body ?? '',
        }).id,
      ).toBe(answered.messages[1]?.id);
      expect(JSON.parse(replyDelivery?.body ?? '{}')).toMatchObject({
        type: 'chat.reply',
        data: { kind: 'reply', text: 'Received, thank you.', conversation: accepted.conversation, peer: 'ci' },
      });
      // A retry that comes after the answer (the sender never saw the 202) is still the same message: no new turn.
      const late = await send(body, webhookHeaders({ secret: inboundSecret, id: 'msg_build_1', body }));
      expect(late.status).toBe(202);
      expect(acceptedSchema.parse(await late.json())).toMatchObject({ message: accepted.message, duplicate: true });

      // A task fails for good: the owner's failure notification goes out as a signed webhook, its first delivery
      // answered 500 and retried with the same webhook-id.
      const failing = await api(`${base}/api/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'chat.notify', payload: { broken: true } }),
      });
      expect(failing.status).toBe(201);
      const failedId = z.object({ id: z.string() }).parse(await failing.json()).id;
      await waitUntil(() => ofType('notification.failure').length >= 2, {
        what: 'the notification to be delivered twice',
      });
      const [refused, delivered] = ofType('notification.failure');
      expect(refused?.status).toBe(500);
      expect(delivered?.status).toBe(200);
      expect(delivered?.headers['webhook-id']).toBe(refused?.headers['webhook-id']);
      const verified = verifyWebhook({
        secret: outboundSecret,
        headers: delivered?.headers as Record<string, string>,
        body: delivered?.body ?? '',
      });
      expect(verified.id).toMatch(/^n-[0-9a-f]{24}$/);
      expect(JSON.parse(delivered?.body ?? '{}')).toMatchObject({
        type: 'notification.failure',
        data: { kind: 'failure', task: failedId },
      });
      expect(() =>
        verifyWebhook({
          secret: inboundSecret,
          headers: delivered?.headers as Record<string, string>,
          body: delivered?.body ?? '',
        }),
      ).toThrow('matches');
      // The outbox is the queue: the delivery task is in done/ after two attempts.
      const done = await waitUntil(
        async () =>
          (await readdir(path.join(dir.path, 'data/queue/done'))).find((name) => name.endsWith('--chat.webhook.yaml')),
        { what: 'the delivery task to reach done/' },
      );
      expect(done).toBeDefined();
      expect(ofType('notification.failure')).toHaveLength(2);
      // One reply, delivered once after its 500: nothing sent twice.
      expect(ofType('chat.reply').map((request) => request.status)).toEqual([500, 200]);
      // The ledger has the message once, for hooks (`on: chat.webhook_received`), though it came three times.
      const ledger = z
        .object({
          events: z.array(
            z.object({ type: z.string(), problem: z.unknown().optional(), data: z.record(z.string(), z.unknown()) }),
          ),
        })
        .parse(await (await api(`${base}/api/events?type=chat.webhook_received`)).json());
      expect(ledger.events).toEqual([
        expect.objectContaining({
          data: expect.objectContaining({ webhook_id: 'msg_build_1', peer: 'ci', message: accepted.message }),
        }),
      ]);
      expect(ledger.events[0]?.problem).toBeUndefined();
      // Meanwhile the late retry started no second turn.
      expect(model.requests).toHaveLength(1);
      const after = conversationSchema.parse(await (await api(`${base}/api/chats/${accepted.conversation}`)).json());
      expect(after.messages).toHaveLength(2);
    } finally {
      assistant.child.kill('SIGTERM');
      await assistant.exited;
    }
  });
});

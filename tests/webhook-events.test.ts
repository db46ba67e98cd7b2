// A signed inbound webhook that fires a ledger event instead of a chat turn, through `assistant start`: the body
// `{"event": "backup_done", "data": {…}}` is reported once as `chat.webhook_event` (however often it is sent), no
// conversation or turn is made, a hook reacts to it (`on: chat.webhook_event`, `when: {name: backup_done}`), and its
// `notify:` goes out, signed, to an outbound endpoint that takes `hook`; the endpoint also takes the ledger's
// `chat.webhook_event`s themselves (`ledger_events`).
import { readFile } from 'node:fs/promises';
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

const firedSchema = z.object({ event: z.string(), duplicate: z.boolean() });
const eventsSchema = z.object({
  events: z.array(
    z.object({
      id: z.string(),
      type: z.string(),
      problem: z.unknown().optional(),
      data: z.record(z.string(), z.unknown()),
    }),
  ),
});

describe('a signed webhook that fires an event, through assistant start', () => {
  it('reports the event once, starts no turn, and a hook’s notify reacting to it goes out signed', {
    timeout: 90_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: 'no turn should ask me' }) });
    await using receiver = await startWebhookReceiver();
    await using dir = await tempDir();
    const { configPath, port } = await writeWebhookConfig({
      dir,
      modelUrl: model.url,
      outbound: { name: 'receiver', url: receiver.url, events: ['hook'], ledgerEvents: ['chat.webhook_event'] },
      hooks: `hooks:
  - name: backups
    on: chat.webhook_event
    when: {name: backup_done}
    then:
      - notify: "Backup from {{event.data.peer}}: {{event.data.data}}"
`,
    });
    const assistant = await startAssistant({ dir: dir.path, configPath });
    try {
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const base = `http://127.0.0.1:${port}`;
      const send = (body: string, id: string) =>
        fetch(`${base}/api/integrations/chat/hooks/signed`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...webhookHeaders({ secret: inboundSecret, id, body }) },
          body,
        });

      // The ledger reader starts at the ledger's end, noted at its first look: wait for it.
      await waitUntil(
        () => readFile(path.join(dir.path, 'data/chat/webhook-events.json'), 'utf8').catch(() => undefined),
        {
          what: 'the ledger reader’s first look',
        },
      );
      const body = JSON.stringify({ event: 'backup_done', data: { size_gb: 14 }, peer: 'nas' });
      const first = await send(body, 'msg_backup_1');
      expect(first.status).toBe(202);
      const fired = firedSchema.parse(await first.json());
      expect(fired.duplicate).toBe(false);
      // The sender's retry: the same event, not a second one.
      const again = await send(body, 'msg_backup_1');
      expect(firedSchema.parse(await again.json())).toEqual({ event: fired.event, duplicate: true });
      // Another name: in the ledger, and the hook does not react to it. Unsigned: refused before anything.
      const door = JSON.stringify({ event: 'door.opened' });
      expect((await send(door, 'msg_door_1')).status).toBe(202);
      expect((await fetch(`${base}/api/integrations/chat/hooks/signed`, { method: 'POST', body: door })).status).toBe(
        401,
      );

      const delivery = await waitUntil(
        () => receiver.received.find((request) => request.body.includes('notification.hook')),
        { what: 'the hook’s notify delivered to the endpoint' },
      );
      const verified = verifyWebhook({
        secret: outboundSecret,
        headers: delivery.headers as Record<string, string>,
        body: delivery.body,
      });
      expect(verified.id).toBeTruthy();
      expect(JSON.parse(delivery.body)).toMatchObject({
        type: 'notification.hook',
        data: { kind: 'hook', hook: 'backups', event: fired.event, text: 'Backup from nas: {"size_gb":14}' },
      });

      // The endpoint also takes the ledger's `chat.webhook_event`s as they are written (`ledger_events`): each once.
      await waitUntil(
        () => receiver.received.filter((request) => request.body.includes('"door.opened"')).length === 1,
        {
          what: 'the door event delivered from the ledger',
        },
      );
      const fromLedger = receiver.received
        .map((request) => JSON.parse(request.body) as { type: string; data: { id: string; data: { name: string } } })
        .filter((event) => event.type === 'chat.webhook_event');
      expect(fromLedger.map((event) => event.data.data.name)).toEqual(['backup_done', 'door.opened']);
      expect(fromLedger[0]?.data.id).toBe(fired.event);
      const ledger = eventsSchema.parse(await (await api(`${base}/api/events?type=chat.webhook_event`)).json());
      expect(ledger.events.map((event) => [event.data.name, event.data.webhook_id, event.problem])).toEqual([
        ['backup_done', 'msg_backup_1', undefined],
        ['door.opened', 'msg_door_1', undefined],
      ]);
      // No conversation but the owner's notifications, and no model call: an event is not a chat turn.
      const chats = z.object({ chats: z.array(z.object({ id: z.string() })) }).loose();
      const listed = chats.parse(await (await api(`${base}/api/chats`)).json()).chats;
      expect(listed.filter((conversation) => conversation.id !== 'notifications')).toEqual([]);
      expect(model.requests).toHaveLength(0);
    } finally {
      assistant.child.kill('SIGTERM');
      await assistant.exited;
    }
  });
});

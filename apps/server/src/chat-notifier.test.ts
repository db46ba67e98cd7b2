import { appendFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  memo,
  memoTail,
  mustShow,
  serviceApprovalId,
  toolCallApprovalId,
  writeSurfaceApprovals,
} from '@assistant/actions/testing';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue, UnrecoverableError } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ChatNotifier, notificationsConversationId } from './chat-notifier.ts';

let root: string;
let queue: TaskQueue;
let notes: FileNoteStore;
let chat: ChatService;
const warnings: string[] = [];
const logger = { warn: (_fields: unknown, message: string) => void warnings.push(message), info: () => {} };

beforeEach(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'assistant-notifier-'));
  const data = path.join(root, 'data');
  queue = await openFileTaskQueue({ directory: path.join(data, 'queue'), dataDirectory: data });
  notes = new FileNoteStore({ root: path.join(data, 'notes') });
  chat = new ChatService({ notes, dataDir: data, controlRoot: path.join(data, 'control'), queue });
  warnings.length = 0;
});

afterEach(async () => {
  await queue.close();
  await rm(root, { recursive: true, force: true });
});

const notifier = () =>
  new ChatNotifier({ chat, notes, queue, controlRoot: path.join(root, 'data', 'control'), logger: logger as never });

const told = async () =>
  (await chat.get(notificationsConversationId)).messages.map((message) => message.text.split(':')[0]);

describe('ChatNotifier', () => {
  it("tells what an approval will do: a service's inputs in full, a 5,000-character argument to the end or plainly how much more (issue 30)", async () => {
    const { toolCall } = await writeSurfaceApprovals(notes);
    await notifier().scan();
    const texts = (await chat.get(notificationsConversationId)).messages.map((message) => message.text);
    const service = texts.find((text) => text.includes(`(${serviceApprovalId})`)) ?? '';
    for (const line of mustShow.slice(1)) expect(service).toContain(line);
    expect(service).toContain(`/approve ${serviceApprovalId}`);
    // The call's rendering is longer than a forwarded Telegram message holds: its start, then how much more and where.
    const call = texts.find((text) => text.includes(`(${toolCallApprovalId})`)) ?? '';
    const more =
      /\n…\n(\d+) more characters: open the request \(`assistant approvals show ap-0000000000a1` or \/approvals\/ap-0000000000a1 on the dashboard\)$/.exec(
        call,
      );
    expect(more).not.toBeNull();
    const rendering = toolCall.rendering ?? '';
    const shownPart = call.slice(call.indexOf('What will happen:\n') + 'What will happen:\n'.length, more?.index);
    expect(rendering.startsWith(shownPart)).toBe(true);
    expect(shownPart.length + Number(more?.[1])).toBe(rendering.length);
    expect(rendering).toContain(JSON.stringify(memo));
    expect(call).not.toContain(memoTail);
    expect(call.length).toBeLessThan(4_096);
  });

  it('tells the owner of a pending approval, a question of a running agent task and a failure, each once', async () => {
    const now = new Date().toISOString();
    await notes.create('approvals/ap-0123456789ab.md', {
      data: {
        id: 'ap-0123456789ab',
        status: 'pending',
        created_at: now,
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
        instance: 'mail',
        domain: 'email',
        platform: 'inbox',
        rule: 'reply to the dentist',
        provenance: 'rule',
        reason: 'the rule asks for approval',
        item: 'mail/dentist.md',
        title: 'Reply to the dentist',
        actions: [{ kind: 'platform', name: 'send_reply', key: 'send_reply', tier: 'irreversible', yolo: false }],
      },
      body: '',
    });
    const asking = await queue.enqueue({ type: 'system.agent', payload: { prompt: 'x' } });
    const failing = await queue.enqueue({ type: 'system.echo', payload: null });
    const consumer = queue.consumer();
    await consumer.start();
    const claimed = [await consumer.claim(), await consumer.claim()];
    const failed = claimed.find((task) => task?.task.type === 'system.echo');
    if (!failed || asking.status !== 'enqueued' || failing.status !== 'enqueued') throw new Error('setup');
    await consumer.fail(failed, new UnrecoverableError('the mailbox said no'));
    const events = path.join(root, 'data', 'control', asking.task.id, 'events.jsonl');
    await mkdir(path.dirname(events), { recursive: true });
    await appendFile(
      events,
      `${JSON.stringify({ type: 'step-started', at: now })}\n${JSON.stringify({ type: 'clarification', id: 'q1', question: 'Which year?', at: now })}\n`,
    );

    const first = notifier();
    await first.scan();
    expect((await told()).sort()).toEqual(
      [
        'Approval needed',
        `Task system.agent (${asking.task.id}) asks`,
        `Task system.echo (${failing.task.id}) failed after 1 attempt(s)`,
      ].sort(),
    );
    const logged = (await chat.events.read(notificationsConversationId)).entries.map((entry) => entry.event);
    expect(logged.map((event) => (event.notification as { kind: string }).kind).sort()).toEqual([
      'approval',
      'clarification',
      'failure',
    ]);

    // Another pass, and a restarted server, tell nothing again.
    await first.scan();
    await notifier().scan();
    expect(await told()).toHaveLength(3);
    expect((await chat.events.read(notificationsConversationId)).entries).toHaveLength(3);
    expect(warnings).toEqual([]);

    // Retried and failed again: a new failure, told again (a retry resets the attempts, not the failure's time).
    await queue.retry(failing.task.id);
    await first.scan();
    const again = await consumer.claim();
    if (!again) throw new Error('the retried task was not claimed');
    await consumer.fail(again, new UnrecoverableError('the mailbox said no again'));
    await first.scan();
    expect((await told()).filter((text) => text?.startsWith('Task system.echo'))).toHaveLength(2);
    await consumer.close();
  });

  it('refuses messages to the notifications conversation: it is read-only', async () => {
    await notifier().scan();
    await notes.create('approvals/ap-0123456789ac.md', { data: { id: 'broken' }, body: '' });
    await notifier().scan();
    const refused = await chat.post(notificationsConversationId, { text: 'hi' }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'CHAT_INPUT_INVALID' });
  });

  it('hands each notification to the outbox before telling it, and tells a failure again when the outbox threw', async () => {
    const failing = await queue.enqueue({ type: 'system.echo', payload: null });
    const consumer = queue.consumer();
    await consumer.start();
    const claimed = await consumer.claim();
    if (!claimed || failing.status !== 'enqueued') throw new Error('setup');
    await consumer.fail(claimed, new UnrecoverableError('the mailbox said no'));
    const handed: { kind: string; taskType?: string; told: number }[] = [];
    let refuse = true;
    const withOutbox = new ChatNotifier({
      chat,
      notes,
      queue,
      controlRoot: path.join(root, 'data', 'control'),
      logger: logger as never,
      outbox: async (notification) => {
        const told = (await chat.get(notificationsConversationId)).messages.length;
        handed.push({
          kind: notification.kind,
          ...(notification.taskType === undefined ? {} : { taskType: notification.taskType }),
          told,
        });
        if (refuse) throw new Error('the queue is rate limited');
        return { enqueued: 1 };
      },
    });
    await withOutbox.scan();
    expect(await told()).toEqual([]);
    refuse = false;
    await withOutbox.scan();
    await withOutbox.scan();
    expect(await told()).toEqual([`Task system.echo (${failing.task.id}) failed after 1 attempt(s)`]);
    // Handed over before it was in the transcript, both times; once told, not again.
    expect(handed).toEqual([
      { kind: 'failure', taskType: 'system.echo', told: 0 },
      { kind: 'failure', taskType: 'system.echo', told: 0 },
    ]);
  });
  it('reads the transcript once, not per notification, and forgets what no longer waits', async () => {
    const reads: string[] = [];
    const get = chat.get.bind(chat);
    chat.get = (id) => {
      reads.push(id);
      return get(id);
    };
    const ask = (id: string) =>
      notes.create(`approvals/${id}.md`, {
        data: {
          id,
          status: 'pending',
          created_at: new Date().toISOString(),
          expires_at: new Date(Date.now() + 86_400_000).toISOString(),
          instance: 'mail',
          domain: 'email',
          platform: 'inbox',
          rule: 'reply',
          provenance: 'rule',
          reason: 'the rule asks for approval',
          item: `mail/${id}.md`,
          title: `Reply ${id}`,
          actions: [{ kind: 'platform', name: 'send_reply', key: 'send_reply', tier: 'irreversible', yolo: false }],
        },
        body: '',
      });
    const ids = ['ap-00000000000a', 'ap-00000000000b', 'ap-00000000000c'];
    const one = notifier();
    for (const id of ids) {
      await ask(id);
      await one.scan();
    }
    expect(reads).toEqual([notificationsConversationId]);
    expect(await told()).toHaveLength(3);
    expect(one.remembered).toBe(3);
    // Decided: nothing waits, nothing is remembered; nothing is told again.
    for (const id of ids) await notes.update(`approvals/${id}.md`, { set: { status: 'rejected' } });
    await one.scan();
    expect(one.remembered).toBe(0);
    // A restarted server finds the pending one's notification in the transcript, read once, and does not tell it again.
    await notes.update(`approvals/${ids[0]}.md`, { set: { status: 'pending' } });
    const restarted = notifier();
    reads.length = 0;
    await restarted.scan();
    await restarted.scan();
    expect(reads).toEqual([notificationsConversationId]);
    expect(await told()).toHaveLength(3);
    expect(restarted.remembered).toBe(1);
  });
});

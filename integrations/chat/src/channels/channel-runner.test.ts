import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ChatService } from '@assistant/chat';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import type { ListenerApprovals, ListenerContext } from '@assistant/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { dentistApproval } from '../testing/approval-request.ts';
import type { ChannelAdapter, ChannelButton } from './adapter.ts';
import { ChannelRunner } from './channel-runner.ts';
import { ChannelState } from './channel-state.ts';
import { type NotificationKind, notificationKinds, notifyPreference } from './notification-kinds.ts';

/**
 * A platform held in memory, behind our own adapter contract: nothing comes in, what the runner sends is kept. The
 * runner's notifications are what is tested here, not a platform.
 */
class MemoryAdapter implements ChannelAdapter {
  readonly name = 'memory';
  readonly label = 'Memory';
  readonly credentials = 'token';
  readonly maxMessageChars = 4_000;
  readonly editIntervalMs = 0;
  readonly sent: { thread: string; text: string; buttons: readonly ChannelButton[] }[] = [];

  receive(options: { signal: AbortSignal }): Promise<never[]> {
    return new Promise((resolve) => {
      if (options.signal.aborted) return resolve([]);
      options.signal.addEventListener('abort', () => resolve([]), { once: true });
    });
  }
  async send(options: { thread: string; text: string }) {
    this.sent.push({ thread: options.thread, text: options.text, buttons: [] });
    return { id: String(this.sent.length) };
  }
  async sendButtons(options: { thread: string; text: string; buttons: readonly ChannelButton[] }) {
    this.sent.push({ thread: options.thread, text: options.text, buttons: options.buttons });
    return { id: String(this.sent.length) };
  }
  async edit() {}
  async typing() {}
  directThread(peer: string): string {
    return `dm-${peer}`;
  }
  format(markdown: string): string {
    return markdown;
  }
  classify() {
    return { kind: 'refused' } as const;
  }
}

const logger = { info() {}, warn() {}, error() {}, debug() {} } as unknown as ListenerContext['logger'];

const approval = dentistApproval;

describe('ChannelRunner notifications (`<channel>.notify`)', () => {
  let root: string;
  let queue: TaskQueue;
  let chat: ChatService;
  let pendingCalls: number;
  const approvals: ListenerApprovals = {
    pending: async () => {
      pendingCalls += 1;
      return [approval];
    },
    decide: async () => ({ status: 'expired' }) as never,
  };

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'assistant-runner-'));
    queue = await openFileTaskQueue({ directory: path.join(root, 'data', 'queue') });
    chat = new ChatService({
      notes: new FileNoteStore({ root: path.join(root, 'data', 'notes') }),
      dataDir: path.join(root, 'data'),
      controlRoot: path.join(root, 'data', 'control'),
      queue,
    });
    pendingCalls = 0;
  });

  afterEach(async () => {
    await queue.close();
    await rm(root, { recursive: true, force: true });
  });

  /** What the server's notifier and `chat.notify` write to the notifications conversation. */
  const notification = (id: string, kind: string, text: string) =>
    chat.events.append('notifications', {
      type: 'message',
      message: { id, role: 'assistant', text, at: new Date().toISOString(), status: 'complete' },
      notification: kind === 'hook' ? { kind, hook: 'invoices', event: 'e1' } : { kind },
    });

  async function start(notify?: readonly NotificationKind[]) {
    const adapter = new MemoryAdapter();
    const stateFile = path.join(root, 'data', 'chat', 'memory', 'chat.json');
    const state = await ChannelState.load(stateFile, adapter.label);
    const controller = new AbortController();
    const runner = new ChannelRunner({
      adapter,
      chat,
      approvals,
      state,
      allowedPeers: ['owner'],
      logger,
      signal: controller.signal,
      ...(notify === undefined ? {} : { notify: notifyPreference(notify) }),
    });
    const done = runner.run();
    return {
      adapter,
      texts: () => adapter.sent.map((one) => one.text),
      stop: async () => {
        controller.abort();
        await done;
      },
      stateFile,
    };
  }

  async function until(check: () => boolean, what: string): Promise<void> {
    await expect.poll(check, { timeout: 15_000, interval: 20, message: `timed out waiting for ${what}` }).toBe(true);
  }

  it("pushes every kind by default: approvals with buttons, questions, failures and hooks' notify", async () => {
    await notification('n-1', 'failure', 'Task email.inbox.check failed after 3 attempt(s).');
    await notification('n-2', 'clarification', 'Task system.agent asks: which year?');
    await notification('n-3', 'hook', 'The invoice from the dentist arrived.');
    const runner = await start();
    await until(() => runner.texts().some((text) => text.includes('dentist arrived')), 'the hook’s notify pushed');
    await until(() => runner.adapter.sent.some((one) => one.buttons.length > 0), 'the approval’s buttons');
    await runner.stop();
    const texts = runner.texts();
    expect(texts.filter((text) => text.startsWith('⚠️ Task email.inbox.check'))).toHaveLength(1);
    expect(texts.filter((text) => text.startsWith('❓ Task system.agent asks'))).toHaveLength(1);
    expect(texts.filter((text) => text === '🔔 The invoice from the dentist arrived.')).toHaveLength(1);
    expect(runner.adapter.sent.every((one) => one.thread === 'dm-owner')).toBe(true);
  });

  it('pushes only the kinds the channel takes, in order: the others are passed over and not pushed later', async () => {
    await notification('n-1', 'failure', 'Task email.inbox.check failed after 3 attempt(s).');
    await notification('n-2', 'hook', 'The invoice from the dentist arrived.');
    await notification('n-3', 'clarification', 'Task system.agent asks: which year?');
    const runner = await start(['clarification']);
    await until(() => runner.texts().some((text) => text.includes('which year?')), 'the question pushed');
    await runner.stop();
    // Approvals are looked at before the notifications, in the same round: none was pushed, none was even asked for.
    expect(runner.texts()).toEqual(['❓ Task system.agent asks: which year?']);
    expect(pendingCalls).toBe(0);

    // Taken later, a kind passed over is not pushed after the fact; what comes after is.
    await notification('n-4', 'hook', 'The second invoice arrived.');
    const again = await start(['hook', 'approval']);
    await until(() => again.texts().some((text) => text.includes('second invoice')), 'the new hook notify pushed');
    await until(() => again.adapter.sent.some((one) => one.buttons.length > 0), 'the approval pushed');
    await again.stop();
    expect(again.texts().some((text) => text.includes('from the dentist arrived'))).toBe(false);
  });

  it('pushes nothing and reads nothing with `notify: []`', async () => {
    await notification('n-1', 'failure', 'Task email.inbox.check failed after 3 attempt(s).');
    const runner = await start([]);
    // The runner's notifier asks for approvals as soon as it starts, before anything is awaited: with nothing to
    // push it does not start at all.
    expect(pendingCalls).toBe(0);
    await runner.stop();
    expect(runner.texts()).toEqual([]);
    const saved = await readFile(runner.stateFile, 'utf8').catch(() => '{"notifications": 0}');
    expect((JSON.parse(saved) as { notifications: number }).notifications).toBe(0);
  });
});

describe('the channels’ `notify` setting (manifest.yaml)', () => {
  it('is declared the same way by every channel that has allowed users, with the runner’s kinds', async () => {
    const manifest = parse(await readFile(new URL('../../manifest.yaml', import.meta.url), 'utf8')) as {
      config: Record<string, { fields?: Record<string, unknown> }>;
    };
    const channels = Object.entries(manifest.config).filter(([, setting]) => setting.fields?.allowed_users);
    expect(channels.map(([name]) => name)).toEqual(expect.arrayContaining(['telegram', 'matrix']));
    for (const [name, setting] of channels) {
      expect(setting.fields?.notify, `${name}.notify`).toMatchObject({
        type: 'list',
        items: { type: 'enum', values: [...notificationKinds] },
      });
      // Not set means every kind (notifyPreference): no default, so the key stays optional in the settings' type.
      expect(setting.fields?.notify, `${name}.notify`).not.toHaveProperty('default');
    }
  });
});

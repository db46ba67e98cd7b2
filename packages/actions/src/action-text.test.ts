// The words an action sends (a reply, a comment) are written before the owner is asked, carried by the approval
// request, and handed to the act task exactly as approved: `enqueueActions`' `writeText` (issue 30, item 3).
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { AutomationMatch, ResolvedAction } from '@assistant/automations';
import { FileNoteStore } from '@assistant/notes';
import { openFileTaskQueue, type TaskQueue } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { decideApproval } from './approval-decisions.ts';
import { readApproval } from './approvals.ts';
import { type ActPayload, enqueueActions } from './enqueue-actions.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-action-text-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup() {
  const notes = new FileNoteStore({ root: path.join(dir, 'notes') });
  const queue = await openFileTaskQueue({ directory: path.join(dir, 'queue') });
  await notes.create('cards/ada.md', { data: { name: 'Ada' }, body: '# Ada\n' });
  return { notes, queue };
}

const sendCard: ResolvedAction = {
  kind: 'platform',
  name: 'send_card',
  key: 'send_card',
  tier: 'irreversible',
  yolo: false,
};
const hug: ResolvedAction = { kind: 'platform', name: 'hug', key: 'hug', tier: 'soft', yolo: false };

function match(actions: ResolvedAction[], approval: boolean): AutomationMatch {
  return { rule: 'cards', ruleIndex: 0, provenance: 'llm', actions, approval, reason: 'close >= 0.8' };
}

const base = {
  instance: 'friendly',
  domain: 'greeter',
  platform: 'cards',
  notePath: 'cards/ada.md',
  approvalExpiresMs: 60_000,
};

/** A writer that says a different thing each time it is called, and counts its calls. */
function writer() {
  const calls: string[] = [];
  return {
    calls,
    writeText: async (action: ResolvedAction) => {
      if (action.name !== 'send_card') return undefined;
      calls.push(action.key);
      return `Dear Ada, card number ${calls.length}.`;
    },
  };
}

async function actPayloads(queue: TaskQueue): Promise<ActPayload[]> {
  const payloads: ActPayload[] = [];
  for (const entry of await queue.list({ state: 'pending' })) {
    const task = (await queue.get(entry.name?.id ?? ''))?.task;
    if (task?.type.endsWith('.act')) payloads.push(task.payload as unknown as ActPayload);
  }
  return payloads;
}

describe('the text of an action that sends words', () => {
  it('is written before the approval request is made, carried by it, and handed to the act task as approved', async () => {
    const { notes, queue } = await setup();
    const first = writer();
    const made = await enqueueActions({
      ...base,
      notes,
      queue,
      matches: [match([sendCard, hug], true)],
      writeText: first.writeText,
    });
    const id = made.approvals[0]?.id ?? '';
    const request = await readApproval(notes, id);
    expect(request?.actions).toEqual([
      expect.objectContaining({ name: 'send_card', text: 'Dear Ada, card number 1.' }),
      expect.not.objectContaining({ text: expect.anything() }),
    ]);
    // A later cycle finds the request: nothing is written again.
    await enqueueActions({
      ...base,
      notes,
      queue,
      matches: [match([sendCard, hug], true)],
      writeText: first.writeText,
    });
    expect(first.calls).toEqual(['send_card']);

    await decideApproval({ notes, queue, id, decision: 'approve', by: 'test' });
    const [payload] = await actPayloads(queue);
    expect(payload?.approval).toBe(id);
    expect(payload?.actions.find((action) => action.name === 'send_card')?.text).toBe('Dear Ada, card number 1.');
    expect(first.calls).toEqual(['send_card']);
  });

  it('is written for an action that needs no approval (!yolo) and carried by its act task, once per item', async () => {
    const { notes, queue } = await setup();
    const { calls, writeText } = writer();
    const yolo = { ...sendCard, yolo: true };
    await enqueueActions({ ...base, notes, queue, matches: [match([yolo], false)], writeText });
    const [payload] = await actPayloads(queue);
    expect(payload?.actions).toEqual([
      expect.objectContaining({ name: 'send_card', text: 'Dear Ada, card number 1.' }),
    ]);
    // Taken already: not written (nor taken) again.
    const again = await enqueueActions({ ...base, notes, queue, matches: [match([yolo], false)], writeText });
    expect(again.skipped).toEqual([{ key: 'send_card', reason: 'already taken' }]);
    expect(calls).toEqual(['send_card']);
  });

  it('that cannot be written (a model outage) holds back its rule only: no request, record or task for it', async () => {
    const { notes, queue } = await setup();
    const outage = async (action: ResolvedAction) => {
      if (action.name === 'send_card') throw new Error('the LLM profile `default` is unavailable');
      return undefined;
    };
    const hugRule: AutomationMatch = { ...match([hug], false), rule: 'hugs', ruleIndex: 1, provenance: 'rule' };
    for (const approval of [true, false]) {
      await expect(
        enqueueActions({
          ...base,
          notes,
          queue,
          matches: [match([{ ...sendCard, yolo: !approval }], approval), hugRule],
          writeText: outage,
        }),
      ).rejects.toThrow(/unavailable/);
    }
    expect(await notes.list('approvals').catch(() => [])).toEqual([]);
    // The other rule is not held back: its hug is taken, once.
    const taken = (await notes.read('cards/ada.md'))?.data.actions_taken as { action: string }[];
    expect(taken.map((entry) => entry.action)).toEqual(['hug']);
    expect((await actPayloads(queue)).map((payload) => payload.actions.map((action) => action.name))).toEqual([
      ['hug'],
    ]);
  });
});

import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import {
  type ApprovalRequest,
  bindApproval,
  checkActTask,
  decideApproval,
  enqueueActions,
  listApprovals,
  readApproval,
  requestManualAction,
} from '@assistant/actions';
import { evaluateRules } from '@assistant/automations';
import { FileNoteStore } from '@assistant/notes';
import { type JsonValue, openFileTaskQueue, RetryableError, type Task } from '@assistant/queue';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadRuntime } from './load-runtime.ts';
import { installation } from './testing/installation.ts';

const greeter = fileURLToPath(new URL('../../../tests/fixtures/integrations/custom/greeter', import.meta.url));

const config = `data_dir: ./data
integration_dirs: [./greeter]
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        classifications:
          close: "is this person close?"
        automations:
          - name: cards for friends
            when: {is_friend: true}
            then: send_card
          - name: notify friends
            when: {is_friend: true}
            then: {script: notify, inputs: {who: "{{ name }}"}}
          - name: post to friends
            when: {is_friend: true}
            then: {service: {call: greeter.friendly.post_card, inputs: {name: "{{ name }}"}}}
          - name: cards for close people anyway
            when: {close: ">= 0.8"}
            then: !yolo send_card
          - name: flowers for friends
            when: {is_friend: true}
            then: {send_gift: flowers}
          - name: notify close people
            when: {close: ">= 0.8"}
            then: {script: notify, inputs: {who: "{{ name }}"}}
            approval: required
          - name: balloons for people met lately
            when: {met: "> now() - 1d"}
            then: {send_gift: balloons}
  - type: greeter
    name: other
    platforms:
      cards:
        automations:
          - name: cards for friends
            when: {is_friend: true}
            then: send_card
scripts:
  notify:
    shell: echo notified
    inputs: [who]
`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-gate-'));
});
afterEach(async () => {
  vi.useRealTimers();
  await rm(dir, { recursive: true, force: true });
});

async function setup() {
  // The greeter, with a date field on cards for a rule that depends on the time.
  await cp(greeter, path.join(dir, 'greeter'), { recursive: true });
  const manifest = path.join(dir, 'greeter', 'manifest.yaml');
  const text = await readFile(manifest, 'utf8');
  const patched = text.replace('      name: string\n', '      name: string\n      met: {type: date, trusted: true}\n');
  if (patched === text) throw new Error('the greeter manifest changed: no `name: string` field on cards');
  await writeFile(manifest, patched);
  await writeFile(path.join(dir, 'config.yaml'), config);
  const { config: loaded, registry } = await loadRuntime({
    installation,
    configPath: path.join(dir, 'config.yaml'),
    cwd: dir,
  });
  const notes = new FileNoteStore({ root: loaded.paths.notes });
  const queue = await openFileTaskQueue({ directory: loaded.paths.queue, settings: loaded.queue });
  // Ada is a friend; Linus is not, and nobody is close to him; Anne is no friend but close; the other instance has
  // its own Ada.
  await notes.create('greeter/friendly/ada.md', { data: { name: 'Ada', is_friend: true } });
  await notes.create('greeter/friendly/linus.md', {
    data: { name: 'Linus', is_friend: false, classifications: { close: 0.1 } },
  });
  await notes.create('greeter/friendly/anne.md', {
    data: { name: 'Anne', is_friend: false, classifications: { close: 0.9 } },
  });
  await notes.create('greeter/other/ada.md', { data: { name: 'Ada', is_friend: true } });
  /** What the evaluate stage does for one item: the rules that match it, their tasks enqueued. */
  const evaluate = async (notePath: string) => {
    const note = await notes.read(notePath);
    const matches = evaluateRules(registry.automations('friendly', 'cards'), {
      classifications: (note?.data.classifications ?? {}) as Record<string, unknown>,
      fields: { is_friend: note?.data.is_friend, name: note?.data.name, met: note?.data.met },
    });
    return enqueueActions({
      notes,
      queue,
      instance: 'friendly',
      domain: 'greeter',
      platform: 'cards',
      notePath,
      matches,
      approvalExpiresMs: 60_000,
    });
  };
  const task = async (id: string): Promise<Task> => {
    const found = (await queue.get(id))?.task;
    if (!found) throw new Error(`no task ${id}`);
    return found;
  };
  const gate = (checked: Task) => checkActTask({ registry, notes, task: checked, scripts: loaded.scripts });
  return { notes, queue, registry, evaluate, task, gate, notesRoot: loaded.paths.notes };
}

/** The same task with some of its payload replaced: what anyone who can write to the queue can make of it. */
function forge(task: Task, payload: Record<string, unknown>, onResult?: Record<string, unknown>): Task {
  return {
    ...task,
    payload: { ...(task.payload as Record<string, JsonValue>), ...payload } as JsonValue,
    ...(onResult ? { onResult: { ...(task.onResult as Record<string, JsonValue>), ...onResult } as JsonValue } : {}),
  };
}

describe('checkActTask', () => {
  it('hole 1: a forged act task citing a real deterministic rule for an item it does not match is refused', async () => {
    const { evaluate, task, gate } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const card = ada.enqueued.find((entry) => entry.key === 'send_card');
    const legit = await task(card?.task ?? '');
    expect(await gate(legit)).toBeUndefined();

    // Rule 0 is real and deterministic, but Linus is no friend.
    expect(await gate(forge(legit, { item: 'greeter/friendly/linus.md' }))).toMatch(
      /^`send_card` cannot be undone, and rule 0 \("cards for friends"\) does not match greeter\/friendly\/linus\.md as it is now/,
    );
    // An item that does not exist.
    expect(await gate(forge(legit, { item: 'greeter/friendly/nobody.md' }))).toMatch(
      /no note greeter\/friendly\/nobody\.md/,
    );
    // A friend, but of another instance: the friendly instance must not act on the other's items.
    expect(await gate(forge(legit, { item: 'greeter/other/ada.md' }))).toMatch(
      /greeter\/other\/ada\.md is not an item of friendly/,
    );
    // A path that leaves the notes.
    expect(await gate(forge(legit, { item: '../config.yaml' }))).toMatch(/^`send_card` cannot be undone/);
  });

  it('hole 1: a forged act task citing a !yolo action is refused for an item its rule does not match', async () => {
    const { evaluate, task, gate } = await setup();
    const anne = await evaluate('greeter/friendly/anne.md');
    const legit = await task(anne.enqueued.find((entry) => entry.key === 'send_card')?.task ?? '');
    expect(legit.payload).toMatchObject({ rule_index: 3, provenance: 'llm' });
    expect(await gate(legit)).toBeUndefined();
    expect(await gate(forge(legit, { item: 'greeter/friendly/linus.md' }))).toMatch(
      /rule 3 \("cards for close people anyway"\) does not match greeter\/friendly\/linus\.md/,
    );
  });

  it('hole 1: forged script and service tasks citing a real rule for an item it does not match are refused', async () => {
    const { evaluate, task, gate } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const script = await task(ada.enqueued.find((entry) => entry.key === 'script:notify')?.task ?? '');
    const service = await task(
      ada.enqueued.find((entry) => entry.key === 'service:greeter.friendly.post_card')?.task ?? '',
    );
    expect(await gate(script)).toBeUndefined();
    expect(await gate(service)).toBeUndefined();
    const linus = { instance: 'friendly', platform: 'cards', item: 'greeter/friendly/linus.md' };
    const requested = (task: Task) =>
      (task.payload as { requested_by?: Record<string, unknown> }).requested_by ??
      (task.onResult as { requested_by: Record<string, unknown> }).requested_by;
    expect(
      await gate(forge(script, { requested_by: { ...requested(script), ...linus }, inputs: { who: 'Linus' } })),
    ).toMatch(/^script `notify` cannot be undone, and rule 1 \("notify friends"\) does not match/);
    expect(
      await gate(
        forge(service, { inputs: { name: 'Linus' } }, { requested_by: { ...requested(service), ...linus } as never }),
      ),
    ).toMatch(
      /^service `greeter\.friendly\.post_card` cannot be undone, and rule 2 \("post to friends"\) does not match/,
    );
  });

  it('holes 1, 15, 16: a forged script.run or service task citing a valid rule cannot carry inputs the rule would not render', async () => {
    const { evaluate, task, gate } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const script = await task(ada.enqueued.find((entry) => entry.key === 'script:notify')?.task ?? '');
    const service = await task(
      ada.enqueued.find((entry) => entry.key === 'service:greeter.friendly.post_card')?.task ?? '',
    );
    expect(script.payload).toMatchObject({ inputs: { who: 'Ada' } });
    expect(await gate(forge(script, { inputs: { who: 'Ada; rm -rf ~' } }))).toMatch(
      /^script `notify`: its inputs are not the ones rule 1 \("notify friends"\) gives greeter\/friendly\/ada\.md/,
    );
    expect(await gate(forge(script, { inputs: { who: 'Ada', extra: 'x' } }))).toMatch(/its inputs are not/);
    expect(await gate(forge(service, { inputs: { name: 'Mallory' } }))).toMatch(
      /^service `greeter\.friendly\.post_card`: its inputs are not the ones rule 2/,
    );
    // The rule routes the result to a note; a forgery feeds it to a task of its choosing.
    expect(
      await gate(forge(service, {}, { routes: [{ enqueue: 'script.run', payload: { script: 'notify' } }] })),
    ).toMatch(/^service `greeter\.friendly\.post_card`: its on_result routes are not the ones rule 2/);
  });

  it('holes 1, 16: a forged script.run task citing an approval cannot carry inputs other than the approved ones', async () => {
    const { notes, queue, evaluate, task, gate } = await setup();
    await evaluate('greeter/friendly/anne.md');
    const [request] = await listApprovals(notes, { status: 'pending' });
    expect(request).toMatchObject({ rule: 'notify close people', item: 'greeter/friendly/anne.md' });
    const decided = await decideApproval({ notes, queue, id: request?.id ?? '', decision: 'approve', by: 'test' });
    const script = await task(decided.enqueued?.[0]?.task ?? '');
    expect(script.payload).toMatchObject({ approval: request?.id, inputs: { who: 'Anne' } });
    expect(await gate(script)).toBeUndefined();
    // Refused by the binding first: the inputs do not render to what the owner was shown.
    expect(await gate(forge(script, { inputs: { who: 'Mallory' } }))).toMatch(
      /^script `notify`: what the task would run is not what approval ap-[0-9a-f]{12} showed the owner .*`input who = "Mallory"`, which the owner was not shown/,
    );
  });

  it("hole 2: an act task's argument and name must be the rule's, not just its key", async () => {
    const { evaluate, task, gate } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const gift = await task(ada.enqueued.find((entry) => entry.key === 'send_gift:"flowers"')?.task ?? '');
    expect(await gate(gift)).toBeUndefined();
    const action = (gift.payload as { actions: Record<string, unknown>[] }).actions[0];
    // The key the rule holds, with another argument.
    expect(await gate(forge(gift, { actions: [{ ...action, argument: 'a diamond ring' }] }))).toMatch(
      /^`send_gift`: its key `send_gift:"flowers"` is not its name and argument \("a diamond ring"\)/,
    );
    // Another irreversible action under the key of one the rule holds.
    expect(await gate(forge(gift, { actions: [{ ...action, name: 'send_card', argument: undefined }] }))).toMatch(
      /^`send_card`: its key `send_gift:"flowers"` is not its name and argument/,
    );
    // The key and argument agree, but the rule gives flowers.
    expect(
      await gate(
        forge(gift, { actions: [{ ...action, key: 'send_gift:"a diamond ring"', argument: 'a diamond ring' }] }),
      ),
    ).toMatch(/^`send_gift` cannot be undone, and nothing authorises it/);
  });

  it('hole 4: an approval covers the target it showed: a note whose target changed since is refused', async () => {
    const { notes, queue, registry, task, gate } = await setup();
    const { requestManualAction } = await import('@assistant/actions');
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_gift',
      argument: 'flowers',
      by: 'cli',
    });
    expect(asked.approval.actions[0]?.target).toEqual({ field: 'name', value: 'Linus' });
    const gift = await task(asked.enqueued[0]?.task ?? '');
    expect(await gate(gift)).toBeUndefined();
    await notes.update('greeter/friendly/linus.md', { set: { name: 'Mallory' } });
    expect(await gate(gift)).toMatch(
      /^`send_gift` cannot be undone, and approval ap-[0-9a-f]{12} was given for name Linus, but greeter\/friendly\/linus\.md now says "Mallory"/,
    );
  });
  it('issue 30: an approval covers the text it showed: an act task carrying other words, or none, is refused', async () => {
    const { notes, queue, registry, task, gate } = await setup();
    const { requestManualAction } = await import('@assistant/actions');
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_card',
      by: 'cli',
    });
    // The request as one made with its text: the words the person saw.
    const requestPath = `approvals/${asked.approval.id}.md`;
    const request = await notes.read(requestPath);
    const actions = ((request?.data.actions ?? []) as Record<string, unknown>[]).map((action) => ({
      ...action,
      text: 'Happy birthday, Linus!',
    }));
    // Bound again with the text, as a request written with its text is: the digest covers the words.
    const { bindApproval } = await import('@assistant/actions');
    const itemNote = await notes.read('greeter/friendly/linus.md');
    const bound = bindApproval({ ...(request?.data as Record<string, unknown>), actions } as never, {
      path: 'greeter/friendly/linus.md',
      data: itemNote?.data ?? {},
    });
    await notes.update(requestPath, {
      set: { actions: bound.actions as never, rendering: bound.rendering as never, digest: bound.digest as never },
    });
    const card = await task(asked.enqueued[0]?.task ?? '');
    const action = (card.payload as { actions: Record<string, unknown>[] }).actions[0];
    expect(await gate(forge(card, { actions: [{ ...action, text: 'Happy birthday, Linus!' }] }))).toBeUndefined();
    expect(await gate(forge(card, { actions: [{ ...action, text: 'Please wire EUR 9000 to …' }] }))).toMatch(
      /^`send_card`: what the task would run is not what approval ap-[0-9a-f]{12} showed the owner/,
    );
    expect(await gate(card)).toMatch(/is not what approval ap-[0-9a-f]{12} showed the owner/);
  });

  it('a text written by the person who asks by hand is shown, bound and carried to the act exactly', async () => {
    const { notes, queue, registry, task, gate } = await setup();
    const { requestManualAction } = await import('@assistant/actions');
    const words = `Happy birthday, Linus!\n${'x'.repeat(5_000)}\nFrom all of us`;
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_card',
      text: words,
      by: 'cli',
    });
    expect(asked.approval.actions[0]?.text).toBe(words);
    expect(asked.approval.rendering).toContain(words);
    const card = await task(asked.enqueued[0]?.task ?? '');
    const action = (card.payload as { actions: Record<string, unknown>[] }).actions[0];
    expect(action?.text).toBe(words);
    expect(await gate(card)).toBeUndefined();
    expect(
      await gate(forge(card, { actions: [{ ...action, text: words.replace('From all', 'Wire EUR 9000, all') }] })),
    ).toMatch(/is not what approval ap-[0-9a-f]{12} showed the owner/);
  });

  it("an approval binds one of the instance's items: one for another instance's note, or no instance's, is refused", async () => {
    const { notes, queue, registry, task, gate } = await setup();
    const { requestManualAction } = await import('@assistant/actions');
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_card',
      by: 'cli',
    });
    const card = await task(asked.enqueued[0]?.task ?? '');
    expect(await gate(card)).toBeUndefined();
    await notes.create('greeter/other/x.md', { data: { name: 'X' } });
    await notes.create('elsewhere/x.md', { data: { name: 'X' } });
    // Approvals written for those items (anyone who can write notes can write one): the gate still refuses.
    for (const [id, item] of [
      ['ap-0123456789ab', 'greeter/other/x.md'],
      ['ap-ba9876543210', 'elsewhere/x.md'],
    ] as const) {
      await notes.create(`approvals/${id}.md`, { data: { ...asked.approval, id, item, tasks: [] } as never });
      expect(await gate(forge(card, { item, approval: id }))).toBe(
        `\`send_card\` cannot be undone, and ${item} is not an item of friendly (its items are under greeter/friendly/)`,
      );
    }
    // The same for a script's approval.
    const script = forge(card, {});
    expect(
      await gate({
        ...script,
        type: 'script.run',
        payload: {
          script: 'notify',
          inputs: { who: 'X' },
          approval: 'ap-0123456789ab',
          requested_by: { instance: 'friendly', platform: 'cards', item: 'greeter/other/x.md', rule: 'by hand' },
        },
      }),
    ).toMatch(/^script `notify` cannot be undone, and greeter\/other\/x\.md is not an item of friendly/);
  });

  it('a note that cannot be read just now (broken frontmatter) is retried, not refused', async () => {
    const { notes, queue, registry, evaluate, task, gate, notesRoot } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const card = await task(ada.enqueued.find((entry) => entry.key === 'send_card')?.task ?? '');
    const script = await task(ada.enqueued.find((entry) => entry.key === 'script:notify')?.task ?? '');
    expect(await gate(card)).toBeUndefined();
    // A person half-way through saving it.
    const adaFile = path.join(notesRoot, 'greeter/friendly/ada.md');
    const saved = await readFile(adaFile, 'utf8');
    await writeFile(adaFile, '---\nname: [Ada\nis_friend: true\n---\n');
    await expect(gate(card)).rejects.toBeInstanceOf(RetryableError);
    await expect(gate(card)).rejects.toThrow(/the note greeter\/friendly\/ada\.md cannot be read just now/);
    await expect(gate(script)).rejects.toBeInstanceOf(RetryableError);
    await writeFile(adaFile, saved);
    expect(await gate(card)).toBeUndefined();

    // The same for the approval a task cites: a broken approval note is not "does not approve it".
    const { requestManualAction } = await import('@assistant/actions');
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_card',
      by: 'cli',
    });
    const approved = await task(asked.enqueued[0]?.task ?? '');
    expect(await gate(approved)).toBeUndefined();
    const approvalFile = path.join(notesRoot, `approvals/${asked.approval.id}.md`);
    const approval = await readFile(approvalFile, 'utf8');
    await writeFile(approvalFile, approval.replace('status: approved', 'status: [approved'));
    await expect(gate(approved)).rejects.toBeInstanceOf(RetryableError);
    // A bad approval id, or none, is still a refusal.
    expect(await gate(forge(approved, { approval: 'ap-nothing' }))).toMatch(/does not approve it/);
    expect(await gate(forge(approved, { approval: 'ap-000000000000' }))).toMatch(/does not approve it/);
  });

  it('a task retried after an outage is judged when its rule decided it, by the note, not by the task file', async () => {
    const { notes, evaluate, task, gate } = await setup();
    await notes.create('greeter/friendly/grace.md', {
      data: { name: 'Grace', is_friend: false, met: new Date(Date.now() - 3_600_000).toISOString() },
    });
    const grace = await evaluate('greeter/friendly/grace.md');
    const balloons = await task(grace.enqueued.find((entry) => entry.key === 'send_gift:"balloons"')?.task ?? '');
    expect(balloons.payload).toMatchObject({ rule_index: 6 });
    expect(await gate(balloons)).toBeUndefined();
    // Two days later (the SMTP server was down): Grace was met three days ago by now, but the rule decided it when
    // she had been met an hour before, as the note's actions_taken says.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 2 * 86_400_000);
    expect(await gate(balloons)).toBeUndefined();
    // A forged task for an item the rule never decided, backdated in its own file, is judged now.
    await notes.create('greeter/friendly/old.md', {
      data: { name: 'Old', is_friend: false, met: new Date(Date.now() - 3 * 86_400_000).toISOString() },
    });
    const backdated = {
      ...balloons,
      createdAt: new Date(Date.now() - 3 * 86_400_000).toISOString(),
      payload: { ...(balloons.payload as Record<string, unknown>), item: 'greeter/friendly/old.md' },
    };
    expect(await gate(backdated)).toMatch(
      /rule 6 \("balloons for people met lately"\) does not match greeter\/friendly\/old\.md as it is now/,
    );
  });

  it('an irreversible action already started on the item is not checked again: actOnce will not take it again', async () => {
    const { notes, evaluate, task, gate } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const card = await task(ada.enqueued.find((entry) => entry.key === 'send_card')?.task ?? '');
    // The act changed what the rule tests, then failed on its reversible part and is retried.
    await notes.update('greeter/friendly/ada.md', { set: { is_friend: false } });
    expect(await gate(card)).toMatch(/rule 0 \("cards for friends"\) does not match greeter\/friendly\/ada\.md/);
    await notes.update('greeter/friendly/ada.md', {
      set: { actions_started: [{ action: 'send_card', task: card.id, at: new Date().toISOString() }] as never },
    });
    expect(await gate(card)).toBeUndefined();
    // Only that action: another irreversible one in the same task is checked as before.
    const gift = (ada.enqueued.find((entry) => entry.key === 'send_gift:"flowers"')?.task ?? '') as string;
    expect(await gate(await task(gift))).toMatch(/rule 4 \("flowers for friends"\) does not match/);
  });

  it('an approval given when the item showed no target holds only while it shows none', async () => {
    const { notes, queue, registry, task, gate } = await setup();
    await notes.create('greeter/friendly/nameless.md', { data: { is_friend: false } });
    const { requestManualAction } = await import('@assistant/actions');
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/nameless.md',
      action: 'send_gift',
      argument: 'flowers',
      by: 'cli',
    });
    expect(asked.approval.actions[0]?.target).toEqual({ field: 'name' });
    const gift = await task(asked.enqueued[0]?.task ?? '');
    expect(await gate(gift)).toBeUndefined();
    await notes.update('greeter/friendly/nameless.md', { set: { name: '' } });
    expect(await gate(gift)).toBeUndefined();
    await notes.update('greeter/friendly/nameless.md', { set: { name: 'Mallory' } });
    expect(await gate(gift)).toMatch(
      /^`send_gift` cannot be undone, and approval ap-[0-9a-f]{12} was given when greeter\/friendly\/nameless\.md had no name, but it now says "Mallory"/,
    );
  });
});

describe('checkActTask: what the owner approves is what runs (issue 30)', () => {
  const inputValue = fc.oneof(
    fc.string(),
    fc.integer(),
    fc.boolean(),
    // Long, many-lined values whose last line alone differs from another's.
    fc.tuple(fc.string(), fc.string()).map(([head, tail]) => `${'memo line\n'.repeat(500)}${head}\n${tail}`),
  );

  it('refuses a task citing an approval for any inputs other than the approved ones, and records it on the approval', async () => {
    const { notes, queue, evaluate, task, gate } = await setup();
    await evaluate('greeter/friendly/anne.md');
    const [request] = await listApprovals(notes, { status: 'pending' });
    const decided = await decideApproval({ notes, queue, id: request?.id ?? '', decision: 'approve', by: 'test' });
    const script = await task(decided.enqueued?.[0]?.task ?? '');
    expect(await gate(script)).toBeUndefined();
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          // Another value for the approved input, another input beside it, or other inputs altogether.
          inputValue.map((who) => ({ who })),
          fc.tuple(fc.string({ minLength: 1 }), inputValue).map(([name, value]) => ({ who: 'Anne', [name]: value })),
          fc.dictionary(fc.string(), inputValue),
        ),
        async (inputs) => {
          fc.pre(!isDeepStrictEqual(inputs, { who: 'Anne' }));
          const refused = await gate(forge(script, { inputs }));
          expect(refused).toMatch(
            new RegExp(
              `^script \`notify\`: what the task would run is not what approval ${request?.id} showed the owner`,
            ),
          );
        },
      ),
      { numRuns: 40 },
    );
    // An input named `__proto__` (a key zod's record parse used to drop from the rendering, found by this property).
    const proto = JSON.parse('{"who": "Anne", "__proto__": "hidden"}') as Record<string, string>;
    expect(await gate(forge(script, { inputs: proto }))).toMatch(
      new RegExp(`^script \`notify\`: what the task would run is not what approval ${request?.id} showed the owner`),
    );
    const recorded = await readApproval(notes, request?.id ?? '');
    expect(recorded?.refusals?.length).toBeGreaterThan(0);
    expect(recorded?.refusals?.[0]).toMatchObject({
      task: script.id,
      reason: expect.stringContaining('showed the owner'),
    });
  });

  it('refuses an act task whose text is not the full text the owner approved, down to its last line', async () => {
    const { notes, queue, task, gate, registry } = await setup();
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_card',
      by: 'cli',
    });
    const card = await task(asked.enqueued[0]?.task ?? '');
    const text = `${'Dear Linus,\n'.repeat(400)}${'x'.repeat(200)}\nSend it to linus@example.org`;
    const id = 'ap-00000000abcd';
    const withText: ApprovalRequest = {
      ...asked.approval,
      id,
      tasks: [],
      actions: asked.approval.actions.map(({ digest: _digest, ...action }) => ({ ...action, text })),
    };
    const bound = bindApproval(withText, { path: 'greeter/friendly/linus.md', data: {} });
    expect(bound.rendering).toContain(`text (${text.length} characters):\n${text}`);
    await notes.create(`approvals/${id}.md`, { data: bound as never });
    const action = (card.payload as { actions: Record<string, unknown>[] }).actions[0];
    const sent = (body: string) => forge(card, { approval: id, actions: [{ ...action, text: body }] as JsonValue });
    expect(await gate(sent(text))).toBeUndefined();
    const changed = text.replace(/linus@example\.org$/, 'attacker@example.com');
    expect(await gate(sent(changed))).toMatch(
      /^`send_card`: what the task would run is not what approval ap-00000000abcd showed the owner/,
    );
    // The same length, a different last line.
    expect(await gate(sent(text.replace(/org$/, 'net')))).toMatch(/showed the owner/);
  });

  it("binds a service's inputs, result routes and log line, reversible or not", async () => {
    const { notes, evaluate, task, gate } = await setup();
    const ada = await evaluate('greeter/friendly/ada.md');
    const posted = await task(
      ada.enqueued.find((entry) => entry.key === 'service:greeter.friendly.post_card')?.task ?? '',
    );
    const approve = async (id: string, service: string) => {
      const request = bindApproval(
        {
          id,
          status: 'approved',
          created_at: new Date().toISOString(),
          expires_at: new Date().toISOString(),
          instance: 'friendly',
          domain: 'greeter',
          platform: 'cards',
          rule: 'chat c1',
          provenance: 'llm',
          reason: 'asked in a chat',
          item: 'greeter/friendly/ada.md',
          title: 'Ada',
          actions: [
            {
              kind: 'service',
              name: `greeter.friendly.${service}`,
              key: `service:greeter.friendly.${service}`,
              tier: service === 'compose' ? 'soft' : 'irreversible',
              yolo: false,
              inputs: { name: '{{ name }}' },
            },
          ],
        },
        { path: 'greeter/friendly/ada.md', data: { name: 'Ada', is_friend: true } },
      );
      expect(request.rendering).toContain('input name = "Ada"');
      await notes.create(`approvals/${id}.md`, { data: request as never });
    };
    await approve('ap-0000000000c3', 'post_card');
    await approve('ap-0000000000d4', 'compose');
    const requestedBy = (posted.onResult as { requested_by: Record<string, JsonValue> }).requested_by;
    const citing = (
      type: string,
      id: string,
      payload: Record<string, unknown>,
      onResult: Record<string, unknown> = {},
    ) => forge({ ...posted, type }, payload, { requested_by: { ...requestedBy, approval: id }, ...onResult });
    const post = 'service.greeter.post_card';
    expect(await gate(citing(post, 'ap-0000000000c3', {}))).toBeUndefined();
    expect(await gate(citing(post, 'ap-0000000000c3', { inputs: { name: 'Mallory' } }))).toMatch(
      /^service `greeter\.friendly\.post_card`: what the task would run is not what approval ap-0000000000c3 showed the owner .*`input name = "Mallory"`/,
    );
    expect(
      await gate(
        citing(post, 'ap-0000000000c3', {}, { routes: [{ enqueue: 'script.run', payload: { script: 'notify' } }] }),
      ),
    ).toMatch(/showed the owner .*`result goes to: /);
    // A service that can be undone is bound all the same: the owner approved what they read.
    const compose = 'service.greeter.compose';
    expect(await gate(citing(compose, 'ap-0000000000d4', {}))).toBeUndefined();
    expect(await gate(citing(compose, 'ap-0000000000d4', { inputs: { name: 'Mallory' } }))).toMatch(
      /^service `greeter\.friendly\.compose`: what the task would run is not what approval ap-0000000000d4 showed the owner/,
    );
  });

  it('refuses a task citing an approval made before approvals were bound (no digest): ask again', async () => {
    const { notes, queue, task, gate, registry } = await setup();
    const asked = await requestManualAction({
      registry,
      notes,
      queue,
      instance: 'friendly',
      platform: 'cards',
      notePath: 'greeter/friendly/linus.md',
      action: 'send_card',
      by: 'cli',
    });
    const card = await task(asked.enqueued[0]?.task ?? '');
    const { rendering: _rendering, digest: _digest, ...old } = asked.approval;
    await notes.update(`approvals/${asked.approval.id}.md`, {
      set: {
        rendering: undefined,
        digest: undefined,
        actions: old.actions.map(({ digest: _action, ...action }) => action) as never,
      },
    });
    expect(await gate(card)).toMatch(/was given before approvals were bound to what they show .*ask again/);
  });
});

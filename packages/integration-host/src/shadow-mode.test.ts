import { cp, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkActTask, decideApproval, enqueueActions, readApproval, shadowReport } from '@assistant/actions';
import { evaluateRules } from '@assistant/automations';
import { isAssistantError } from '@assistant/errors';
import { FileNoteStore } from '@assistant/notes';
import { type JsonValue, openFileTaskQueue, type Task } from '@assistant/queue';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadRuntime } from './load-runtime.ts';
import { installation } from './testing/installation.ts';

const greeter = fileURLToPath(new URL('../../../tests/fixtures/integrations/custom/greeter', import.meta.url));

// Two instances with the same rules: `friendly` in shadow mode, `other` not. The first rule is deterministic and
// reversible (a hug): outside shadow mode it runs at once; in shadow mode even it is only proposed.
const rules = `    platforms:
      cards:
        automations:
          - name: hugs for friends
            when: {is_friend: true}
            then: hug
          - name: cards for friends
            when: {is_friend: true}
            then: send_card
`;
const config = `data_dir: ./data
integration_dirs: [./greeter]
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
integrations:
  - type: greeter
    name: friendly
    shadow: true
${rules}  - type: greeter
    name: other
${rules}`;

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-shadow-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function setup() {
  await cp(greeter, path.join(dir, 'greeter'), { recursive: true });
  await writeFile(path.join(dir, 'config.yaml'), config);
  const { config: loaded, registry } = await loadRuntime({
    installation,
    configPath: path.join(dir, 'config.yaml'),
    cwd: dir,
  });
  const notes = new FileNoteStore({ root: loaded.paths.notes });
  const queue = await openFileTaskQueue({ directory: loaded.paths.queue, settings: loaded.queue });
  await notes.create('greeter/friendly/ada.md', { data: { name: 'Ada', is_friend: true } });
  await notes.create('greeter/other/ada.md', { data: { name: 'Ada', is_friend: true } });
  /** The evaluate stage for one item, as the worker runs it: with the instance's shadow mode. */
  const evaluate = async (instance: 'friendly' | 'other') => {
    const notePath = `greeter/${instance}/ada.md`;
    const note = await notes.read(notePath);
    return enqueueActions({
      notes,
      queue,
      instance,
      domain: 'greeter',
      platform: 'cards',
      notePath,
      title: 'Ada',
      matches: evaluateRules(registry.automations(instance, 'cards'), {
        classifications: {},
        fields: { is_friend: note?.data.is_friend, name: note?.data.name },
      }),
      approvalExpiresMs: 60_000,
      ...(registry.instance(instance)?.shadow ? { shadow: true } : {}),
    });
  };
  const task = async (id: string): Promise<Task> => {
    const found = (await queue.get(id))?.task;
    if (!found) throw new Error(`no task ${id}`);
    return found;
  };
  return { notes, queue, registry, evaluate, task, loaded };
}

describe('shadow mode', () => {
  it('config.yaml’s `shadow: true` reaches the instance; it is off by default', async () => {
    const { registry } = await setup();
    expect(registry.instance('friendly')?.shadow).toBe(true);
    expect(registry.instance('other')?.shadow).toBe(false);
  });

  it('turns every matched rule into a shadow proposal, reversible or not, and enqueues and records nothing', async () => {
    const { evaluate, notes, queue } = await setup();
    const result = await evaluate('friendly');
    expect(result.enqueued).toEqual([]);
    expect(result.approvals).toHaveLength(2);
    expect((await queue.list({ state: 'pending' })).length).toBe(0);
    expect((await notes.read('greeter/friendly/ada.md'))?.data.actions_taken).toBeUndefined();
    for (const { id } of result.approvals) {
      const request = await readApproval(notes, id);
      expect(request?.shadow).toBe(true);
      expect(request?.status).toBe('pending');
    }
    const report = await shadowReport({ notes });
    // Both proposals were made in the same millisecond: compared in rule order.
    expect(report.entries.map((entry) => [entry.instance, entry.rule, entry.wouldHave]).sort()).toEqual([
      ['friendly', 'cards for friends', 'send_card'],
      ['friendly', 'hugs for friends', 'hug'],
    ]);
    // Outside shadow mode the same rules act: the hug and the card are enqueued.
    const other = await evaluate('other');
    expect(other.enqueued.map((entry) => entry.key).sort()).toEqual(['hug', 'send_card']);
    expect((await shadowReport({ notes, instance: 'other' })).entries).toEqual([]);
  });

  it('the gate refuses an act task of an instance in shadow mode, even one its rules would authorise', async () => {
    const { evaluate, registry, notes, task, loaded } = await setup();
    const other = await evaluate('other');
    const legit = await task(other.enqueued[0]?.task ?? '');
    const gate = (checked: Task) => checkActTask({ registry, notes, task: checked, scripts: loaded.scripts });
    expect(await gate(legit)).toBeUndefined();
    const forged: Task = {
      ...legit,
      integration: 'friendly',
      payload: { ...(legit.payload as Record<string, JsonValue>), item: 'greeter/friendly/ada.md' },
    };
    expect(await gate(forged)).toMatch(/^friendly is in shadow mode: .*`assistant shadow off friendly`/);
  });

  it('a shadow proposal cannot be approved while its instance is in shadow mode; once it is not, approving runs it', async () => {
    const { evaluate, notes, queue } = await setup();
    const [hug] = (await evaluate('friendly')).approvals;
    const id = hug?.id ?? '';
    const refused = await decideApproval({ notes, queue, id, decision: 'approve', by: 'test', inShadow: () => true })
      .then(() => undefined)
      .catch((error: unknown) => error);
    expect(isAssistantError(refused, 'CONFLICT')).toBe(true);
    expect((refused as Error).message).toMatch(/still in shadow mode/);
    // A caller that does not say whether the instance is in shadow mode is refused too: the safe side.
    await expect(decideApproval({ notes, queue, id, decision: 'approve', by: 'test' })).rejects.toThrow(
      /still in shadow mode/,
    );
    expect((await readApproval(notes, id))?.status).toBe('pending');
    const approved = await decideApproval({ notes, queue, id, decision: 'approve', by: 'test', inShadow: () => false });
    expect(approved.request.status).toBe('approved');
    expect(approved.enqueued?.map((entry) => entry.key)).toEqual(['hug']);
  });
});

// The actions layer end to end in one process: a platform's check → evaluate → act through a real worker, real
// notes and a real queue; approvals; idempotence across cycles; the act stage's own gate.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { decideApproval, expireApprovals, listApprovals } from '@assistant/actions';
import { isAssistantError } from '@assistant/errors';
import { loadRuntime } from '@assistant/integration-host';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { type JsonValue, openFileTaskQueue } from '@assistant/queue';
import { runWorker } from '@assistant/worker';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { requireBubblewrap } from './helpers/bubblewrap.ts';
import { repoRoot } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const greeter = path.join(repoRoot, 'tests/fixtures/integrations/custom/greeter');

const config = `data_dir: ./data
integration_dirs: [${JSON.stringify(greeter)}]
llms:
  default: {base_url: "http://127.0.0.1:11434/v1", model: m}
worker:
  poll_interval: 50ms
integrations:
  - type: greeter
    name: friendly
    platforms:
      cards:
        classifications:
          close: "is this person close?"
        automations:
          - name: wave at friends
            when: {is_friend: true}
            then: wave
          - name: cards for close people
            when: {close: ">= 0.8"}
            then: [send_card, hug]
            approval: required
`;

async function setup(dir: TempDir, text = config) {
  await dir.write('config.yaml', text);
  const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
  const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
  const notes = new FileNoteStore({ root: runtime.config.paths.notes });
  const work = () =>
    runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
    });
  const cycle = async () => {
    await queue.enqueue({ type: 'greeter.cards.check', integration: 'friendly', source: 'scheduler' });
    await work();
  };
  const done = async (type: string) => (await queue.list({ state: 'done', type })).length;
  const humanLog = async () => {
    const files = await readdir(runtime.config.paths.logs);
    return (await Promise.all(files.map((file) => readFile(path.join(runtime.config.paths.logs, file), 'utf8')))).join(
      '',
    );
  };
  return { ...runtime, queue, notes, work, cycle, done, humanLog };
}

describe('automations through the worker', () => {
  it('acts by rule, asks for approval where required, and takes each action once across cycles', async () => {
    await using dir = await tempDir();
    const { queue, notes, work, cycle, done, humanLog } = await setup(dir);
    await cycle();

    const ada = await notes.read('greeter/friendly/ada.md');
    expect(ada?.data).toMatchObject({
      applied: ['wave'],
      actions_taken: [{ action: 'wave', rule: 'wave at friends', provenance: 'rule', task: expect.any(String) }],
    });
    expect((await notes.read('greeter/friendly/grace.md'))?.data).toMatchObject({ applied: ['wave'] });
    expect((await notes.read('greeter/friendly/linus.md'))?.data.actions_taken).toBeUndefined();
    expect(await done('greeter.cards.act')).toBe(2);

    // Ada is close (the fixture's classifier says 0.9): her card waits for a person.
    const pending = await listApprovals(notes, { status: 'pending' });
    expect(pending).toEqual([
      expect.objectContaining({
        rule: 'cards for close people',
        provenance: 'llm',
        item: 'greeter/friendly/ada.md',
        title: 'Ada',
        actions: [
          expect.objectContaining({ name: 'send_card', tier: 'irreversible' }),
          expect.objectContaining({ name: 'hug' }),
        ],
      }),
    ]);
    const log = await humanLog();
    expect(log).toMatch(
      /\*\*friendly\/cards\*\* decided: wave for Ada \(rule "wave at friends" \(rule\): is_friend = true\)/,
    );
    expect(log).toMatch(/asked for approval to send_card, hug for Ada/);

    // A second cycle finds everything taken or asked for already.
    await cycle();
    expect(await done('greeter.cards.act')).toBe(2);
    expect(await listApprovals(notes, { status: 'pending' })).toHaveLength(1);
    expect((await notes.read('greeter/friendly/ada.md'))?.data.actions_taken).toHaveLength(1);

    // A person approves: the card goes out, once.
    const id = pending[0]?.id ?? '';
    const decided = await decideApproval({ notes, queue, id, decision: 'approve', by: 'test' });
    expect(decided.request).toMatchObject({ status: 'approved', decided_by: 'test' });
    await work();
    expect((await notes.read('greeter/friendly/ada.md'))?.data).toMatchObject({
      applied: ['wave', 'send_card', 'hug'],
      actions_taken: [
        { action: 'wave' },
        { action: 'send_card', approval: id, provenance: 'llm' },
        { action: 'hug', approval: id },
      ],
    });
    await expect(decideApproval({ notes, queue, id, decision: 'approve', by: 'test' })).rejects.toThrow(
      `approval ${id} was approved already`,
    );
    await cycle();
    expect(await done('greeter.cards.act')).toBe(3);
  });

  it('refuses an act task that carries an irreversible action nothing authorises', async () => {
    await using dir = await tempDir();
    const { queue, notes, work, cycle, humanLog } = await setup(dir);
    await cycle();
    const forged = await queue.enqueue({
      type: 'greeter.cards.act',
      integration: 'friendly',
      source: 'automation',
      payload: {
        item: 'greeter/friendly/linus.md',
        rule: 'wave at friends',
        rule_index: 0,
        provenance: 'rule',
        actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'read_only', yolo: true }],
      },
    });
    const cited = await queue.enqueue({
      type: 'greeter.cards.act',
      integration: 'friendly',
      source: 'automation',
      payload: {
        item: 'greeter/friendly/linus.md',
        rule: 'cards for close people',
        rule_index: 1,
        provenance: 'llm',
        approval: (await listApprovals(notes))[0]?.id ?? 'ap-000000000000',
        actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'irreversible', yolo: false }],
      },
    });
    await work();
    const failed = async (outcome: typeof forged) =>
      outcome.status === 'enqueued' ? (await queue.get(outcome.task.id))?.task : undefined;
    expect(await failed(forged)).toMatchObject({
      error: {
        type: 'UnrecoverableError',
        message: expect.stringMatching(/^refused: `send_card` cannot be undone, and nothing authorises it/),
      },
    });
    // The cited approval is pending, and for Ada, not Linus.
    expect(await failed(cited)).toMatchObject({
      error: {
        message: expect.stringMatching(
          /^refused: `send_card` cannot be undone and approval ap-[0-9a-f]{12} does not approve it for greeter\/friendly\/linus\.md/,
        ),
      },
    });
    expect((await notes.read('greeter/friendly/linus.md'))?.data.applied).toBeUndefined();
    expect(await humanLog()).toMatch(/refused to act/);
  });

  it('drops approval requests nobody decided in time, and refuses a late decision', async () => {
    await using dir = await tempDir();
    const { queue, notes, cycle, humanLog, config: loaded } = await setup(dir);
    await cycle();
    const log = new FileHumanLog({ directory: loaded.paths.logs });
    const [request] = await listApprovals(notes, { status: 'pending' });
    const afterExpiry = Date.parse(request?.expires_at ?? '') + 1;
    const late = await decideApproval({
      notes,
      queue,
      id: request?.id ?? '',
      decision: 'approve',
      by: 'test',
      nowMs: afterExpiry,
      humanLog: log,
    }).catch((error: unknown) => error);
    expect(isAssistantError(late, 'CONFLICT')).toBe(true);
    expect((await listApprovals(notes, { status: 'expired' })).map((expired) => expired.id)).toEqual([request?.id]);
    expect(await expireApprovals({ notes, nowMs: afterExpiry })).toEqual([]);
    expect(await humanLog()).toMatch(/dropped send_card, hug for Ada: nobody approved it in time/);
    expect((await notes.read('greeter/friendly/ada.md'))?.data.applied).toEqual(['wave']);
  });

  it('runs scripts as script.run tasks with rendered inputs, their log lines in the human log, and gates irreversible ones', async () => {
    // Scripts run only under bubblewrap (or with `worker.sandbox: none`, which this test does not want).
    await requireBubblewrap();
    await using dir = await tempDir();
    await dir.write(
      'config.yaml',
      `${config.replace('            then: wave\n', '            then: [wave, {script: notify, inputs: {who: "{{ name }}"}}]\n')}scripts:
  notify:
    shell: |
      log_human "notified $ASSISTANT_INPUT_WHO"
      printf '{"who": "%s"}' "$ASSISTANT_INPUT_WHO" > "$ASSISTANT_RESULT_FILE"
    inputs: [who]
    reversible: true
  wipe:
    shell: echo wiped
`,
    );
    const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    await queue.enqueue({ type: 'greeter.cards.check', integration: 'friendly', source: 'scheduler' });
    // An irreversible script that no rule asked for, in a task that claims to come from an automation.
    const forged = await queue.enqueue({
      type: 'script.run',
      source: 'automation',
      payload: {
        script: 'wipe',
        provenance: 'llm',
        requested_by: { instance: 'friendly', platform: 'cards', item: 'x.md', rule: 'nope' },
      },
    });
    await runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
    });
    const scripts = await Promise.all(
      (await queue.list({ state: 'done', type: 'script.run' })).map(
        async (entry) => (await queue.get(entry.name?.id ?? ''))?.task?.result,
      ),
    );
    expect(scripts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ result: { who: 'Ada' }, exit_code: 0 }),
        expect.objectContaining({ result: { who: 'Grace' }, exit_code: 0 }),
      ]),
    );
    expect(scripts).toHaveLength(2);
    const log = (await readdir(runtime.config.paths.logs)).map((file) => path.join(runtime.config.paths.logs, file));
    const text = (await Promise.all(log.map((file) => readFile(file, 'utf8')))).join('');
    expect(text).toMatch(/\*\*script\/notify\*\* notified Ada/);
    expect(text).toMatch(/\*\*friendly\/cards\*\* decided: wave, script notify for Grace/);
    expect(forged.status === 'enqueued' ? (await queue.get(forged.task.id))?.task?.error?.message : '').toMatch(
      /^refused: script `wipe` cannot be undone, and nothing authorises it/,
    );
  });
});

describe('the worker gate for irreversible actions', () => {
  it('hole 1: a task file saying source: cli or api cannot run an irreversible action', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', `${config}scripts:\n  wipe:\n    shell: echo wiped\n`);
    const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    const notes = new FileNoteStore({ root: runtime.config.paths.notes });
    await notes.create('greeter/friendly/linus.md', { data: { name: 'Linus' } });
    const act = (source: 'cli' | 'api') =>
      queue.enqueue({
        type: 'greeter.cards.act',
        integration: 'friendly',
        source,
        policies: false,
        payload: {
          item: 'greeter/friendly/linus.md',
          rule: 'by hand',
          rule_index: 0,
          provenance: 'rule',
          actions: [{ kind: 'platform', name: 'send_card', key: 'send_card', tier: 'irreversible', yolo: false }],
        },
      });
    const forged = [
      await act('cli'),
      await act('api'),
      await queue.enqueue({ type: 'script.run', source: 'cli', policies: false, payload: { script: 'wipe' } }),
    ];
    await runWorker({
      config: runtime.config,
      registry: runtime.registry,
      logger: pino({ level: 'silent' }),
      signal: new AbortController().signal,
      exitWhenIdle: true,
    });
    for (const outcome of forged) {
      const record = outcome.status === 'enqueued' ? await queue.get(outcome.task.id) : undefined;
      expect(record).toMatchObject({
        state: 'failed',
        task: { error: { message: expect.stringMatching(/^refused: /) } },
      });
    }
    expect((await notes.read('greeter/friendly/linus.md'))?.data.applied).toBeUndefined();
  });

  it('hole 15: a forged service task for an irreversible service runs only with its rule or an approval', async () => {
    await using dir = await tempDir();
    const { queue, notes, work, cycle, humanLog } = await setup(
      dir,
      config.replace(
        '            then: [send_card, hug]\n',
        // `greeter.post_card`: the domain's only instance, friendly (the full call is what the task checks cite).
        '            then: [send_card, hug, {service: {call: greeter.post_card, inputs: {name: "{{ name }}"}}}]\n',
      ),
    );
    await cycle();
    const service = (requestedBy: Record<string, JsonValue> | undefined) =>
      queue.enqueue({
        type: 'service.greeter.post_card',
        integration: 'friendly',
        source: 'automation',
        // Three forgeries of the same payload: past the dedup policy.
        policies: false,
        payload: { inputs: { name: 'Linus' } },
        onResult: { routes: [{ note: true }], ...(requestedBy ? { requested_by: requestedBy } : {}) },
      });
    const item = { instance: 'friendly', platform: 'cards', item: 'greeter/friendly/linus.md' };
    const [request] = await listApprovals(notes, { status: 'pending' });
    const forged = [
      // Cites nothing.
      await service(undefined),
      // Cites a deterministic rule that never calls the service.
      await service({ ...item, rule: 'wave at friends', rule_index: 0 }),
      // Cites the rule that calls it, which needs a person, and an approval that is pending and for Ada.
      await service({ ...item, rule: 'cards for close people', rule_index: 1, approval: request?.id ?? '' }),
    ];
    await work();
    for (const outcome of forged) {
      const record = outcome.status === 'enqueued' ? await queue.get(outcome.task.id) : undefined;
      expect(record).toMatchObject({
        state: 'failed',
        task: {
          error: {
            message: expect.stringMatching(/^refused: service `greeter\.friendly\.post_card` cannot be undone/),
          },
        },
      });
    }
    // The approved way: the card for Ada is posted, once.
    await decideApproval({ notes, queue, id: request?.id ?? '', decision: 'approve', by: 'test' });
    await work();
    const posted = await queue.list({ state: 'done', type: 'service.greeter.post_card' });
    expect(posted).toHaveLength(1);
    expect((await queue.get(posted[0]?.name?.id ?? ''))?.task?.result).toEqual({ posted: 'Ada' });
    expect(await humanLog()).toMatch(/posted a card to Ada/);
    expect(await humanLog()).not.toMatch(/posted a card to Linus/);
  });

  it('hole 16: a script.run task is checked against the rule at its index, not the first rule of that name', async () => {
    await using dir = await tempDir();
    const { queue, work } = await setup(
      dir,
      `${config
        .replace('          - name: wave at friends\n', '          - name: same name\n')
        .replace('            then: wave\n', '            then: {script: wipe}\n')
        .replace('          - name: cards for close people\n', '          - name: same name\n')
        .replace('            then: [send_card, hug]\n', '            then: {script: wipe}\n')}scripts:
  wipe:
    shell: |
      printf '{"wiped": "%s"}' "$ASSISTANT_INPUT_WHO" > "$ASSISTANT_RESULT_FILE"
    inputs: [who]
`,
    );
    const script = (requestedBy: Record<string, unknown>) =>
      queue.enqueue({
        type: 'script.run',
        source: 'automation',
        policies: false,
        payload: {
          script: 'wipe',
          inputs: { who: 'Linus' },
          requested_by: { instance: 'friendly', platform: 'cards', item: 'greeter/friendly/linus.md', ...requestedBy },
        },
      });
    const forged = [
      // Rule 1 shares its name with the deterministic rule 0 but needs a person.
      await script({ rule: 'same name', rule_index: 1 }),
      // An index whose rule has another name.
      await script({ rule: 'another name', rule_index: 0 }),
      // No index at all.
      await script({ rule: 'same name' }),
    ];
    await work();
    for (const outcome of forged) {
      const record = outcome.status === 'enqueued' ? await queue.get(outcome.task.id) : undefined;
      expect(record).toMatchObject({
        state: 'failed',
        task: { error: { message: expect.stringMatching(/^refused: script `wipe` cannot be undone/) } },
      });
    }
    // The deterministic rule 0 itself still runs the script for Ada and Grace.
    await queue.enqueue({ type: 'greeter.cards.check', integration: 'friendly', source: 'scheduler' });
    await work();
    expect(await queue.list({ state: 'done', type: 'script.run' })).toHaveLength(2);
  });
});

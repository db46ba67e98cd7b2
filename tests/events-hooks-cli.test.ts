// `assistant events ls|tail` and `assistant hooks ls|test` through the real command, over a real ledger.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { openEventLedger } from '@assistant/events';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const accountantHook = [
  'description: my accountant wrote',
  'on: mail.received',
  'when: {from_address: anna@accountant.example}',
  'then:',
  '  - notify: "Your accountant wrote: {{event.data.subject}}"',
  '',
].join('\n');

const deadlineHook = [
  'on: mail.received',
  'when: {from_address: anna@accountant.example}',
  'ask: Does this mail name a deadline for me?',
  'then:',
  '  - notify: "A deadline: {{event.data.subject}}"',
  '',
].join('\n');

function mail(nativeId: string, from: string, subject: string) {
  return {
    type: 'mail.received',
    source: 'email:personal',
    nativeId,
    data: {
      instance: 'personal',
      message_id: nativeId,
      from_address: from,
      from_domain: from.split('@')[1] ?? '',
      subject,
    },
  };
}

async function setup(options: { modelUrl?: string } = {}): Promise<TempDir> {
  const dir = await tempDir();
  await dir.write(
    'config.yaml',
    `data_dir: ./data\nllms:\n  default:\n    base_url: ${options.modelUrl ?? 'http://127.0.0.1:9/v1'}\n    model: fake-model\n`,
  );
  await dir.write('hooks/accountant.yaml', accountantHook);
  await dir.write('hooks/deadline.yaml', deadlineHook);
  return dir;
}

/** Every file under `root` with its contents. */
async function snapshot(root: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files[path.relative(root, file)] = await readFile(file, 'utf8');
  }
  return files;
}

describe('assistant events', () => {
  it('lists events one line each with a problem marked, filters by type and time, pages and prints JSON', async () => {
    await using dir = await setup();
    const ledger = openEventLedger({ dataDir: path.join(dir.path, 'data') });
    await ledger.emit(mail('m1', 'anna@accountant.example', 'Invoice\u001b[2J 42'));
    await ledger.emit({
      type: 'task.done',
      source: 'queue',
      nativeId: 't1:done',
      data: { task: 't1', task_type: 'system.echo', attempts: 1 },
    });
    // Breaks its schema (no instance, no message id): stored with its problem.
    await ledger.emit({ type: 'mail.received', source: 'email:personal', nativeId: 'm2', data: { subject: 'odd' } });
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });

    const all = await cli(['events', 'ls']);
    expect(all.code).toBe(0);
    const lines = all.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(
      /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [+-]\d{2}:\d{2} {2}mail\.received {2}ev-[0-9a-f]{20} {2}/,
    );
    expect(lines[0]).toContain('from_address="anna@accountant.example"');
    // An outsider's escape sequence does not reach the terminal.
    expect(all.stdout).not.toContain('\u001b');
    expect(lines[1]).toContain('task.done');
    expect(lines[2]).toMatch(/PROBLEM: /);

    const tasks = await cli(['events', 'ls', '--type', 'task.done', '--since', '1h']);
    expect(tasks.stdout.trim().split('\n')).toEqual([expect.stringContaining('task_type="system.echo"')]);
    const old = await cli(['events', 'ls', '--until', '2000-01-01']);
    expect(old.stdout).toBe('');

    const first = await cli(['events', 'ls', '--limit', '1', '--json']);
    const page = JSON.parse(first.stdout) as { events: { type: string; cursor: string }[]; next: string };
    expect(page.events.map((event) => event.type)).toEqual(['mail.received']);
    const rest = JSON.parse((await cli(['events', 'ls', '--after', page.next, '--json'])).stdout) as typeof page;
    expect(rest.events.map((event) => event.type)).toEqual(['task.done', 'mail.received']);

    const badTime = await cli(['events', 'ls', '--since', 'yesterday-ish']);
    expect(badTime.code).not.toBe(0);
    expect(badTime.stderr).toContain('"yesterday-ish"');
    const badCursor = await cli(['events', 'ls', '--after', 'nope']);
    expect(badCursor.code).not.toBe(0);
    expect(badCursor.stderr).toContain('is not an event cursor');
  });

  it('tails new events of the types asked for until Ctrl-C', async () => {
    await using dir = await setup();
    const ledger = openEventLedger({ dataDir: path.join(dir.path, 'data') });
    await ledger.emit(mail('before', 'anna@accountant.example', 'Before'));
    const tail = startNode({ args: [cliMain, 'events', 'tail', '--type', 'mail.received', '--json'], cwd: dir.path });
    try {
      await tail.waitForOutput(/following data\/events\//, { stream: 'stderr', timeoutMs: 25_000 });
      await ledger.emit({
        type: 'task.done',
        source: 'queue',
        nativeId: 't1:done',
        data: { task: 't1', task_type: 'system.echo', attempts: 1 },
      });
      await ledger.emit(mail('after', 'bob@example.com', 'After'));
      await tail.waitForOutput(/"After"/, { timeoutMs: 20_000 });
      tail.child.kill('SIGINT');
      const run = await tail.exited;
      expect(run.code).toBe(0);
      const events = run.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as { type: string; data: { subject?: string } });
      expect(events.map((event) => [event.type, event.data.subject])).toEqual([['mail.received', 'After']]);
    } finally {
      tail.child.kill('SIGKILL');
    }
  });
});

describe('assistant hooks', () => {
  it('lists each hook with its state, last firing, breaker, timers and missed runs', async () => {
    await using dir = await setup();
    await dir.write(
      'data/hooks/breakers.json',
      JSON.stringify({ deadline: { failures: 5, opened_at: new Date().toISOString() } }),
    );
    const text = await runCli(['hooks', 'ls'], { cwd: dir.path });
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(
      'accountant  on mail.received  enabled\n  last fired: never (0 firings)\n  breaker: closed',
    );
    expect(text.stdout).toMatch(/deadline {2}on mail\.received {2}enabled\n.*\n {2}breaker: OPEN after 5 errors/);
    expect(text.stdout).toContain('timers pending: none');
    const json = JSON.parse((await runCli(['hooks', 'ls', '--json'], { cwd: dir.path })).stdout);
    expect(json.hooks).toEqual([
      expect.objectContaining({ name: 'accountant', fired_once: false, missed: 0 }),
      expect.objectContaining({ name: 'deadline', breaker: expect.objectContaining({ state: 'open' }) }),
    ]);
  });

  it('dry-runs a hook against a stored event or a file with no side effects; only --ask writes, to the ask cache', async () => {
    await using model = await FakeOpenAiServer.start({
      replies: [{ json: { fire: true, reason: 'it names Friday as the deadline' } }],
    });
    await using dir = await setup({ modelUrl: model.url });
    const ledger = openEventLedger({ dataDir: path.join(dir.path, 'data') });
    const { event } = await ledger.emit(mail('m1', 'anna@accountant.example', 'Pay by Friday'));
    await dir.write(
      'other.json',
      JSON.stringify({
        type: 'mail.received',
        data: {
          instance: 'personal',
          message_id: 'x',
          from_address: 'eve@example.com',
          from_domain: 'example.com',
          subject: 'hi',
        },
      }),
    );
    const data = path.join(dir.path, 'data');
    const before = await snapshot(data);
    const cli = (args: string[]) => runCli(args, { cwd: dir.path });

    const fires = await cli(['hooks', 'test', 'accountant', '--event', event.id]);
    expect(fires.code).toBe(0);
    expect(fires.stdout).toContain('Fast path: passed');
    expect(fires.stdout).toContain('holds: event type is mail.received (saw "mail.received")');
    expect(fires.stdout).toMatch(/holds: .*anna@accountant\.example.* \(saw "anna@accountant\.example"\)/);
    expect(fires.stdout).toContain('Slow path: none');
    expect(fires.stdout).toContain('notify "Your accountant wrote: Pay by Friday" [soft]: runs without approval');
    expect(fires.stdout).toContain('Decision: FIRES');

    const other = await cli(['hooks', 'test', 'accountant', '--event', 'other.json', '--json']);
    expect(JSON.parse(other.stdout)).toMatchObject({ fire: false, fast_path: { passed: false } });

    const notAsked = await cli(['hooks', 'test', 'deadline', '--event', event.id]);
    expect(notAsked.stdout).toContain('Slow path: not asked (pass --ask to call the model)');
    expect(notAsked.stdout).toContain('Decision: does not fire');
    expect(model.requests).toHaveLength(0);
    expect(await snapshot(data)).toEqual(before);

    const asked = await cli(['hooks', 'test', 'deadline', '--event', event.id, '--ask']);
    expect(asked.code).toBe(0);
    expect(asked.stdout).toContain('Slow path: fire: it names Friday as the deadline (the model answered)');
    expect(asked.stdout).toContain('Decision: FIRES');
    expect(model.requests).toHaveLength(1);
    const after = await snapshot(data);
    const changed = Object.keys(after).filter((file) => after[file] !== before[file]);
    expect(changed).toEqual([expect.stringMatching(/^hooks\/ask-cache\/[^/]+\/ev-[0-9a-f]{20}\.json$/)]);
    // Asked again, the cache answers.
    const cached = await cli(['hooks', 'test', 'deadline', '--event', event.id, '--ask']);
    expect(cached.stdout).toContain('(from the ask cache)');
    expect(model.requests).toHaveLength(1);

    const unknown = await cli(['hooks', 'test', 'nobody', '--event', event.id]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('the hooks are accountant, deadline');
    const missing = await cli(['hooks', 'test', 'accountant', '--event', 'ev-00000000000000000000']);
    expect(missing.stderr).toContain('no event ev-00000000000000000000');
  });
});

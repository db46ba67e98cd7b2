import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { codeDigest, FileCallLog } from './call-log.ts';
import { createExecutor, type Executor } from './executor.ts';
import { type CallHost, type LiveCall, runLoggedCell } from './logged-cell.ts';

const paths = [
  ['mail', 'search'],
  ['mail', 'send'],
  ['notes', 'read'],
];

/** A host over fake tools: `mail.send` needs the owner, decided when the test says so; it records every run. */
function createHost(options: { needsOwner?: (call: LiveCall) => boolean; refuse?: string } = {}) {
  const ran: string[] = [];
  const waits: LiveCall[] = [];
  let decide: (decision: { run: true } | { run: false; reason: string }) => void = () => {};
  let waiting: Promise<void> = Promise.resolve();
  let signalWait: () => void = () => {};
  const armWait = () => {
    waiting = new Promise<void>((resolve) => {
      signalWait = resolve;
    });
  };
  armWait();
  const host: CallHost = {
    permit: (call, onWait) => {
      if (!(options.needsOwner?.(call) ?? false)) return Promise.resolve({ run: true });
      onWait();
      waits.push(call);
      signalWait();
      return new Promise((resolve) => {
        decide = resolve;
      });
    },
    run: async ({ path: callPath, args }) => {
      ran.push(`${callPath.join('.')}(${JSON.stringify(args)})`);
      if (callPath.join('.') === 'mail.search') return [{ from: 'ann@example.com' }, { from: 'bob@example.com' }];
      if (callPath.join('.') === 'mail.send') return { sent: (args[0] as { to: string }).to };
      return 'note text';
    },
    rerunnable: (callPath) => callPath.join('.') !== 'mail.send',
  };
  return {
    host,
    ran,
    waits,
    /** Resolves once a call waits for the owner. */
    nextWait: async () => {
      await waiting;
      armWait();
    },
    decide: (decision: { run: true } | { run: false; reason: string }) => decide(decision),
  };
}

const sendToEach = `
  const mails = await tools.mail.search({ unread: true });
  const sent = [];
  for (const mail of mails) sent.push(await tools.mail.send({ to: mail.from, text: 'thanks' }));
  return sent;
`;

describe('runLoggedCell', () => {
  let executor: Executor;
  let root: string;
  beforeAll(async () => {
    executor = createExecutor({ timeoutMs: 5_000 });
    await executor.warm();
  });
  afterAll(() => executor.close());
  beforeEach(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'call-log-'));
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  const logFor = (code: string, callId = 'call-1') =>
    new FileCallLog(root, { task: 'task-1', loop: 'system.agent', call_id: callId, code_sha256: codeDigest(code) });

  it('runs live calls, logs each before the cell gets its result, and answers the same code again from the log', async () => {
    const code =
      'const a = await tools.mail.search({ q: "x" });\nconst b = await tools.notes.read("n.md");\nreturn { a: a.length, b };';
    const { host, ran } = createHost();
    const first = await runLoggedCell({ executor, code, paths, log: logFor(code), host });
    expect(first.result).toMatchObject({ ok: true, value: { a: 2, b: 'note text' } });
    expect(ran).toEqual(['mail.search([{"q":"x"}])', 'notes.read(["n.md"])']);
    expect(first).toMatchObject({ runs: 1, replayed: 0 });

    const again = await runLoggedCell({ executor, code, paths, log: logFor(code), host });
    expect(again.result).toMatchObject({ ok: true, value: { a: 2, b: 'note text' } });
    // Nothing ran a second time: both calls came from the log.
    expect(ran).toHaveLength(2);
    expect(again).toMatchObject({ runs: 1, replayed: 2 });
    expect(again.result.calls.every((call) => call.replayed === true)).toBe(true);
  });

  it('stops the cell while a call waits for the owner, and after the decision runs it again without repeating a call', async () => {
    const { host, ran, waits, nextWait, decide } = createHost({ needsOwner: (call) => call.path[1] === 'send' });
    const log = logFor(sendToEach);
    const running = runLoggedCell({ executor, code: sendToEach, paths, log, host });

    await nextWait();
    expect(waits.map((call) => call.index)).toEqual([1]);
    decide({ run: true });
    await nextWait();
    expect(waits.map((call) => call.index)).toEqual([1, 2]);
    decide({ run: true });

    const { result, runs } = await running;
    expect(result).toMatchObject({ ok: true, value: [{ sent: 'ann@example.com' }, { sent: 'bob@example.com' }] });
    expect(runs).toBe(3);
    // The search ran once, each send once, though the cell ran three times.
    expect(ran).toEqual([
      'mail.search([{"unread":true}])',
      'mail.send([{"to":"ann@example.com","text":"thanks"}])',
      'mail.send([{"to":"bob@example.com","text":"thanks"}])',
    ]);
  });

  it('gives a refused call to the cell as an error it can catch, and keeps the refusal in the log', async () => {
    const code = `
      try { await tools.mail.send({ to: 'x@example.com' }); return 'sent'; }
      catch (error) { return 'not sent: ' + error.message; }`;
    const { host, ran, nextWait, decide } = createHost({ needsOwner: () => true });
    const running = runLoggedCell({ executor, code, paths, log: logFor(code), host });
    await nextWait();
    decide({ run: false, reason: 'the owner rejected calling mail_send' });
    const { result } = await running;
    expect(result).toMatchObject({
      ok: true,
      value: expect.stringContaining('refused: the owner rejected calling mail_send'),
    });
    expect(ran).toEqual([]);
    // Run again (a restart): the refusal is answered from the log; nobody is asked again.
    const again = createHost({ needsOwner: () => true });
    const replay = await runLoggedCell({ executor, code, paths, log: logFor(code), host: again.host });
    expect(replay.result).toMatchObject({ ok: true, value: expect.stringContaining('refused:') });
    expect(again.waits).toEqual([]);
  });

  it('reports a call that differs from the log at its position as a divergence and never runs it', async () => {
    const code = 'return await tools.mail.send({ to: "ann@example.com", at: Date.now() });';
    const log = logFor(code);
    await log.finished({
      index: 0,
      path: ['mail', 'send'],
      args: [{ to: 'ann@example.com', at: 1 }],
      outcome: { status: 'ok', result: { sent: 'ann@example.com' } },
    });
    const { host, ran } = createHost();
    const { result } = await runLoggedCell({ executor, code, paths, log, host });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.kind).toBe('replay_divergence');
    expect(result.error.message).toMatch(
      /replay divergence at call 0: tools\.mail\.send was called with .*"at":1.* before/,
    );
    expect(ran).toEqual([]);
  });

  it('never runs again a call a crash left started without its result, unless it only reads', async () => {
    const code =
      'const n = await tools.notes.read("a.md");\nconst s = await tools.mail.send({ to: "ann@example.com" }).catch((e) => e.message);\nreturn { n, s };';
    const log = logFor(code);
    // The log a worker killed mid-call leaves: both started, neither finished, and a torn last line.
    await log.started({ index: 0, path: ['notes', 'read'], args: ['a.md'] });
    await log.finished({ index: 0, path: ['notes', 'read'], args: ['a.md'], outcome: { status: 'ok', result: 'old' } });
    await log.started({ index: 1, path: ['mail', 'send'], args: [{ to: 'ann@example.com' }] });
    await appendFile(log.file, '{"index":2,"path":["mail"');

    const { host, ran } = createHost();
    const { result } = await runLoggedCell({ executor, code, paths, log: logFor(code), host });
    expect(result).toMatchObject({
      ok: true,
      value: { n: 'old', s: expect.stringContaining('mail.send was started before a restart and its result was lost') },
    });
    expect(ran).toEqual([]);
    // The torn line stayed one unreadable line; the records after it are whole.
    const lines = (await readFile(log.file, 'utf8')).split('\n');
    expect(lines.filter((line) => line.startsWith('{"index":2'))).toEqual(['{"index":2,"path":["mail"']);
    expect((await logFor(code).read()).get(1)?.outcome).toMatchObject({ status: 'error' });

    // A read-only call started without a result simply runs again.
    const reading = 'return await tools.notes.read("b.md");';
    const readLog = logFor(reading);
    await readLog.started({ index: 0, path: ['notes', 'read'], args: ['b.md'] });
    const second = createHost();
    const read = await runLoggedCell({ executor, code: reading, paths, log: readLog, host: second.host });
    expect(read.result).toMatchObject({ ok: true, value: 'note text' });
    expect(second.ran).toEqual(['notes.read(["b.md"])']);
  });

  it('rejects with the reason when stopped while a call waits, leaving the call unrun', async () => {
    const controller = new AbortController();
    const { host, ran, nextWait } = createHost({ needsOwner: (call) => call.path[1] === 'send' });
    const permit = host.permit;
    // The host's permit rejects on abort, as the tool gate does.
    host.permit = (call, onWait) =>
      Promise.race([
        permit(call, onWait),
        new Promise<never>((_, reject) =>
          controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true }),
        ),
      ]);
    const running = runLoggedCell({
      executor,
      code: sendToEach,
      paths,
      log: logFor(sendToEach),
      host,
      signal: controller.signal,
    });
    await nextWait();
    controller.abort(new Error('the owner stopped the loop'));
    await expect(running).rejects.toThrow('the owner stopped the loop');
    expect(ran).toEqual(['mail.search([{"unread":true}])']);
  });

  it('reaches tools whose names are those of Object.prototype', async () => {
    const code = 'return [await tools.objects.constructor({}), await tools.valueOf.read({})];';
    const ran: string[] = [];
    const host: CallHost = {
      permit: async () => ({ run: true }),
      run: async ({ path: callPath }) => {
        ran.push(callPath.join('.'));
        return callPath.join('.');
      },
      rerunnable: () => true,
    };
    const { result } = await runLoggedCell({
      executor,
      code,
      paths: [
        ['objects', 'constructor'],
        ['valueOf', 'read'],
      ],
      log: logFor(code),
      host,
    });
    expect(result).toMatchObject({ ok: true, value: ['objects.constructor', 'valueOf.read'] });
    expect(ran).toEqual(['objects.constructor', 'valueOf.read']);
  });

  it('keeps logs of other code and other calls apart', () => {
    const a = logFor('return 1;', 'call-1');
    const b = logFor('return 2;', 'call-1');
    const c = logFor('return 1;', 'call-2');
    expect(new Set([a.file, b.file, c.file]).size).toBe(3);
    const odd = new FileCallLog(root, { task: '../../etc', loop: 'l', call_id: 'c', code_sha256: 'x' });
    // One folder under the root, whatever the task id says.
    expect(path.dirname(path.dirname(odd.file))).toBe(root);
  });
});

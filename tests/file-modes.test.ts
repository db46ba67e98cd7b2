// Data files hold mail text, transcripts and prompts: every file Assistant writes under data/ is 0600 and every
// directory 0700, whatever the umask of whoever started it. Both halves are tested under a permissive umask (022):
// writes in this process prove the explicit modes at each write site; a worker in a child process (which inherits
// the 022) proves the umask it sets, through a handler that writes a file without asking for any mode.
import { chmod, lstat, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createRecordReplayFetch } from '@assistant/llm';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { appendHistory, historyFile, TaskMetrics } from '@assistant/metrics';
import { FileHumanLog, FileNoteStore } from '@assistant/notes';
import { makeDirectoriesPrivate } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { ControlFiles } from '@assistant/steering';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

let previousUmask: number;
beforeAll(() => {
  previousUmask = process.umask(0o022);
});
afterAll(() => {
  process.umask(previousUmask);
});

/** Every entry under `root` whose mode is not 0600 (files) or 0700 (directories), as `path mode`. */
async function wrongModes(root: string): Promise<string[]> {
  const wrong: string[] = [];
  const walk = async (directory: string) => {
    for (const name of await readdir(directory)) {
      const entry = path.join(directory, name);
      const info = await lstat(entry);
      const mode = info.mode & 0o777;
      const expected = info.isDirectory() ? 0o700 : 0o600;
      if (mode !== expected) wrong.push(`${path.relative(root, entry)} ${mode.toString(8)}`);
      if (info.isDirectory()) await walk(entry);
    }
  };
  const rootMode = (await lstat(root)).mode & 0o777;
  if (rootMode !== 0o700) wrong.push(`. ${rootMode.toString(8)}`);
  await walk(root);
  return wrong;
}

/** Files under `root`, relative, so a test can say what the workload touched. */
async function filesUnder(root: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (directory: string) => {
    for (const name of await readdir(directory)) {
      const entry = path.join(directory, name);
      if ((await lstat(entry)).isDirectory()) await walk(entry);
      else found.push(path.relative(root, entry));
    }
  };
  await walk(root);
  return found;
}

describe('file modes of data/', () => {
  it('hole 12: every file written in this process is 0600 and every directory 0700, under umask 022', async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({ replies: [{ text: 'a recorded answer' }] });
    const data = path.join(dir.path, 'data');

    // The queue: enqueue, claim (with the worker file), complete, and a quarantined file with its reason.
    const queue = await openFileTaskQueue({ directory: path.join(data, 'queue') });
    const consumer = queue.consumer({ pollIntervalMs: 50 });
    // Enqueued before start, whose full listing indexes them: no waiting on the watcher. A hand-written file that
    // is not a task (planted by its literal path, first in run order) is set aside by the claim, with its reason.
    await writeFile(
      path.join(
        data,
        'queue/pending/0_20260101T000000000Z_01m81zbz7e0rvw1d46qzvhsks0--0123456789abcdef--system.echo.yaml',
      ),
      'attempts: many\n',
      { mode: 0o600 },
    );
    await queue.enqueue({ type: 'system.echo', payload: { text: 'private mail' } });
    await consumer.start();
    const claimed = await consumer.claim();
    if (!claimed) throw new Error('nothing to claim');
    await consumer.complete(claimed, { ok: true });
    expect(await queue.stats()).toMatchObject({ failed: 1, done: 1 });
    await queue.workers.publishMetrics(consumer.owner.id, new TaskMetrics().snapshot());

    // Notes (create, then update under its lock) and the human log.
    const notes = new FileNoteStore({ root: path.join(data, 'notes') });
    await notes.create('email/inbox/some-mail.md', { data: { from: 'someone' }, body: 'the mail text\n' });
    await notes.update('email/inbox/some-mail.md', { set: { read: true } });
    await new FileHumanLog({ directory: path.join(data, 'logs') }).write({ source: 'test', message: 'did a thing' });

    // Steering: a request, its outcome, and agent events.
    const control = new ControlFiles({ root: path.join(data, 'control'), taskId: claimed.task.id });
    const request = await control.request({ action: 'interject', message: 'look at this', source: 'test' });
    await control.event({ type: 'step', text: 'the agent said something' });
    await control.settle(request.id, { status: 'applied' });
    await control.event({ type: 'steering', action: 'interject' });

    // An LLM recording.
    const recordingFetch = createRecordReplayFetch({ mode: 'record', directory: path.join(data, 'llm-cache') });
    const response = await recordingFetch(`${model.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'fake-model', messages: [{ role: 'user', content: 'a private prompt' }] }),
    });
    expect(response.status).toBe(200);
    await response.text();
    await consumer.close();

    // The History page's series (its directory and lock are made here too).
    await appendHistory({
      file: historyFile(data),
      events: [{ kind: 'task', type: 'system.echo', outcome: 'done', durationMs: 5, atMs: Date.now() }],
    });

    const files = await filesUnder(data);
    for (const expected of [
      /^queue\/done\/.*system\.echo\.yaml$/,
      /^queue\/failed\/.*system\.echo\.yaml\.error\.txt$/,
      /^notes\/email\/inbox\/some-mail\.md$/,
      /^logs\/.*\.md$/,
      /^control\/[0-9a-z]{26}\/outcomes\/.*\.json$/,
      /^control\/[0-9a-z]{26}\/events\.jsonl$/,
      /^llm-cache\/.*\.json$/,
      /^metrics\/history\.json$/,
    ]) {
      expect(
        files.some((file) => expected.test(file)),
        `${expected} in ${files.join(', ')}`,
      ).toBe(true);
    }
    expect(await wrongModes(data)).toEqual([]);
  });

  it('hole 12: a worker process started with umask 022 leaves nothing but 0600 files and 0700 directories', async () => {
    await using dir = await tempDir();
    // A handler that writes a file under data/ without asking for a mode, as an integration author might.
    await dir.write(
      'integrations/careless/manifest.yaml',
      'domain: careless\ndescription: Writes a file with default modes.\ndefault_instance:\n  name: careless\ntasks:\n  write:\n    handler: ./src/write.ts#write\n',
    );
    await dir.write(
      'integrations/careless/src/write.ts',
      [
        "import { mkdir, writeFile } from 'node:fs/promises';",
        'export async function write(): Promise<string> {',
        "  await mkdir('data/careless/output', { recursive: true });",
        "  await writeFile('data/careless/output/file.txt', 'private\\n');",
        "  return 'written';",
        '}',
        '',
      ].join('\n'),
    );
    await dir.write(
      'config.yaml',
      'data_dir: ./data\nintegration_dirs: [./integrations]\nworker:\n  poll_interval: 100ms\n',
    );
    const run = async (args: readonly string[]) => {
      const child = startNode({ args: [cliMain, ...args], cwd: dir.path, env: { ASSISTANT_LOG_FORMAT: 'json' } });
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), 30_000);
      });
      const outcome = await Promise.race([child.exited, late]);
      clearTimeout(timer);
      if (outcome === 'late') {
        child.child.kill('SIGKILL');
        throw new Error(`assistant ${args.join(' ')} did not exit within 30 s`);
      }
      expect(outcome.stderr, args.join(' ')).toBe('');
      expect(outcome.code, args.join(' ')).toBe(0);
    };
    await run(['enqueue', 'careless.write']);
    await run(['enqueue', 'system.echo', '--payload', '{"text": "private"}']);
    await run(['work', '--exit-when-idle']);
    const data = path.join(dir.path, 'data');
    const files = await filesUnder(data);
    expect(files).toContain('careless/output/file.txt');
    expect(files.filter((file) => file.startsWith('queue/done/'))).toHaveLength(2);
    expect(await wrongModes(data)).toEqual([]);
  });

  it('hole 12: a data directory that came 0755 (as a git clone makes it) is made 0700 at start', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', 'data_dir: ./data\nserver:\n  port: 0\n');
    const data = path.join(dir.path, 'data');
    for (const folder of [data, path.join(data, 'queue'), path.join(data, 'notes')]) {
      await mkdir(folder, { recursive: true });
      await chmod(folder, 0o755);
    }
    const work = startNode({
      args: [cliMain, 'work', '--exit-when-idle'],
      cwd: dir.path,
      env: { ASSISTANT_LOG_FORMAT: 'json' },
    });
    const worked = await work.exited;
    expect(worked.code, worked.stderr).toBe(0);
    expect(worked.stdout).toMatch(/made .*data private: mode 755 → 700/);
    expect(await wrongModes(data)).toEqual([]);

    await chmod(data, 0o755);
    // The server's start calls the same function on data/.
    expect(await makeDirectoriesPrivate([data])).toEqual([{ directory: data, fromMode: 0o755 }]);
    expect((await stat(data)).mode & 0o777).toBe(0o700);
  });
});

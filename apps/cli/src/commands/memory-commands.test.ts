import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { memoryStores } from '@assistant/memory';
import { FileNoteStore } from '@assistant/notes';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { runCli } from '../run-cli.ts';

let dir: string;
let notesRoot: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-memory-commands-'));
  notesRoot = path.join(dir, 'data', 'notes');
  await mkdir(notesRoot, { recursive: true });
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nowner:\n  timezone: UTC\n');
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs `assistant ARGS --config <dir>/config.yaml` in-process; its exit code and what it printed. */
async function assistant(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const context: CliContext = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: {},
    cwd: dir,
  };
  const code = await runCli({ argv: [...argv, '--config', path.join(dir, 'config.yaml')], context });
  return { code, stdout, stderr };
}

function stores() {
  return memoryStores({ notes: new FileNoteStore({ root: notesRoot }) });
}

async function seedAlice() {
  const memory = stores();
  const alice = await memory.contacts.create(
    { name: 'Alice Martin', emails: ['alice@acme.example'], organisation: 'Acme', source: 'email/personal/1.md' },
    { by: 'extraction' },
  );
  await memory.contacts.create(
    { name: 'alice-a', handles: { github: ['alice-a'] }, source: 'github/acme/pulls/7.md' },
    { by: 'extraction' },
  );
  const old = await memory.facts.add({
    statement: 'The dentist appointment is on Thursday.',
    about: [`contact:${alice.slug}`],
    source: 'email/personal/1.md',
    trust: 'extracted',
    observedAt: '2026-11-01T10:00:00Z',
  });
  const replacement = await memory.facts.add({
    statement: 'The dentist appointment moved to Friday.',
    about: [`contact:${alice.slug}`],
    source: 'email/personal/2.md',
    trust: 'extracted',
    observedAt: '2026-11-02T10:00:00Z',
    supersedes: [old.id],
  });
  return { old, replacement };
}

describe('assistant tasks', () => {
  it("adds the owner's tasks, lists them soonest first by due window, and marks one done", async () => {
    const bob = await assistant('tasks', 'add', 'Answer Bob', '--due', '2020-01-06', '--about', 'topic:contract');
    expect(bob.code, bob.stderr).toBe(0);
    const [id] = bob.stdout.split(/\s+/);
    expect((await assistant('tasks', 'add', 'Renew passport', '--due', '2999-01-01')).code).toBe(0);

    const all = await assistant('tasks');
    expect(all.code, all.stderr).toBe(0);
    const lines = all.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(`${id}  2020-01-06 OVERDUE  Answer Bob  about topic:contract  [owner]`);
    expect(lines[1]).toMatch(/ {2}2999-01-01 {2}Renew passport {2}\[owner\]$/);
    expect((await assistant('tasks', 'ls', '--due', 'overdue')).stdout).not.toContain('Renew passport');

    const done = await assistant('tasks', 'done', id as string);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe(`done: ${id}  Answer Bob\n`);
    expect((await assistant('tasks', '--due', 'overdue')).stdout).toBe('no open tasks due overdue\n');
    expect((await assistant('tasks', '--status', 'done')).stdout).toContain('Answer Bob');
    // Not the queue's tasks: nothing was enqueued.
    expect((await assistant('tasks', '--json')).stdout).toContain('"title": "Renew passport"');
  });

  it('refuses a bad due window, status or date, naming what is valid', async () => {
    const window = await assistant('tasks', '--due', 'soon');
    expect(window.code).toBe(2);
    expect(window.stderr).toContain('--due must be one of overdue, today, week, all, got `soon`');
    const status = await assistant('tasks', '--status', 'closed');
    expect(status.stderr).toContain('--status must be one of open, done, dropped, got `closed`');
    const date = await assistant('tasks', 'add', 'x', '--due', 'friday');
    expect(date.code).toBe(2);
    expect(date.stderr).toContain('got `friday`');
    const unknown = await assistant('tasks', 'done', 't-nope');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('no task `t-nope` of yours');
  });
});

describe('assistant contacts', () => {
  it('lists contacts and shows one with its facts (superseded marked), observed identifiers and items', async () => {
    const { old, replacement } = await seedAlice();
    const list = await assistant('contacts', 'ls');
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toBe(
      'alice-a  alice-a  github:alice-a\nalice-martin  Alice Martin  (Acme)  alice@acme.example\n',
    );
    const show = await assistant('contacts', 'show', 'alice-martin');
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('Alice Martin  contacts/alice-martin.md\n');
    expect(show.stdout).toContain('  emails:        alice@acme.example\n');
    expect(show.stdout).toContain(
      `  ${replacement.id}  The dentist appointment moved to Friday.  [extracted, 2026-11-02`,
    );
    expect(show.stdout).toContain(`  ${old.id}  The dentist appointment is on Thursday.`);
    expect(show.stdout).toContain(`(superseded by ${replacement.id})`);
    expect(show.stdout).toContain('items:\n  email/personal/1.md\n  email/personal/2.md\n');
    const unknown = await assistant('contacts', 'show', 'nobody');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('no contact `nobody`');
  });

  it('merges and unmerges (the local CLI is the owner), both notes byte for byte as before', async () => {
    await seedAlice();
    const files = ['alice-martin.md', 'alice-a.md'].map((name) => path.join(notesRoot, 'contacts', name));
    const before = await Promise.all(files.map((file) => readFile(file, 'utf8')));
    const merge = await assistant('contacts', 'merge', 'alice-martin', 'alice-a');
    expect(merge.code, merge.stderr).toBe(0);
    expect(merge.stdout).toBe('merged alice-a into alice-martin; undo with: assistant contacts unmerge alice-a\n');
    expect((await assistant('contacts', 'ls')).stdout).toContain('→ merged into alice-martin');
    expect((await assistant('contacts', 'show', 'alice-martin')).stdout).toContain(
      '  merged from:   alice-a (alice-a)',
    );
    const unmerge = await assistant('contacts', 'unmerge', 'alice-a');
    expect(unmerge.code, unmerge.stderr).toBe(0);
    expect(unmerge.stdout).toBe('unmerged alice-a from alice-martin\n');
    expect(await Promise.all(files.map((file) => readFile(file, 'utf8')))).toEqual(before);
    // Both left a line in the human log.
    const logs = path.join(dir, 'data', 'logs');
    const log = (await Promise.all((await readdir(logs)).map((name) => readFile(path.join(logs, name), 'utf8')))).join(
      '',
    );
    expect(log).toContain('merged contact alice-a into alice-martin');
    expect(log).toContain('unmerged contact alice-a from alice-martin');
    const itself = await assistant('contacts', 'merge', 'alice-a', 'alice-a');
    expect(itself.code).toBe(2);
    expect(itself.stderr).toContain('cannot merge alice-a into itself');
  });
});

describe('assistant notes search --semantic and assistant memory', () => {
  it('searches by meaning, prints the mode and, with --explain, the score parts', async () => {
    const { replacement } = await seedAlice();
    const found = await assistant('notes', 'search', '--semantic', 'dentist appointment', '--in', 'facts', '--explain');
    expect(found.code, found.stderr).toBe(0);
    const lines = found.stdout.split('\n');
    expect(lines[0]).toBe('mode: hybrid');
    expect(lines[1]).toMatch(new RegExp(`^\\d\\.\\d{4}  facts/${replacement.id}\\.md  `));
    expect(lines[2]).toMatch(/^ {8}lexical \d\.\d{4} {2}vector \d\.\d{4} {2}entity /);
    expect(found.stdout).toContain('(superseded)');
    const words = await assistant('notes', 'search', 'dentist');
    expect(words.stdout).not.toContain('mode:');
    const alone = await assistant('notes', 'search', 'dentist', '--explain');
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('--explain and --limit go with --semantic');
    const where = await assistant('notes', 'search', '--semantic', 'x', '--where', 'trust=owner');
    expect(where.code).toBe(2);
  });

  it('reindexes and reports the status with the offline embedder', async () => {
    await seedAlice();
    const reindex = await assistant('memory', 'reindex');
    expect(reindex.code, reindex.stderr).toBe(0);
    expect(reindex.stdout).toMatch(/^reindexed\nnotes: {4}4\nembedded: 4 \(model hashing-v1-256\)\npending: {2}0\n/);
    const status = await assistant('memory', 'status', '--json');
    expect(JSON.parse(status.stdout)).toMatchObject({ notes: 4, embedded: 4, pending: 0, model: 'hashing-v1-256' });
  });

  it('with the embeddings endpoint down: search answers by words saying why, reindex exits 1 and loses nothing', async () => {
    await seedAlice();
    // A port that was just free: nothing answers there.
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    await writeFile(
      path.join(dir, 'config.yaml'),
      `data_dir: ./data\nowner:\n  timezone: UTC\nembeddings:\n  base_url: http://127.0.0.1:${port}/v1\n  model: nomic-embed-text\n  timeout: 2s\n`,
    );
    const found = await assistant('notes', 'search', '--semantic', 'dentist', '--in', 'facts');
    expect(found.code, found.stderr).toBe(0);
    expect(found.stdout).toMatch(/^mode: lexical \(degraded: .+\)\n/);
    expect(found.stdout).toContain('facts/');
    const reindex = await assistant('memory', 'reindex');
    expect(reindex.code).toBe(1);
    expect(reindex.stdout).toContain('pending:  4');
    expect(reindex.stderr).toContain('4 note(s) still wait for a vector');
  });
});

import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createBackup } from './create-backup.ts';
import { restoreBackup } from './restore-backup.ts';
import { readTarGz } from './tar-gzip.ts';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-backup-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function setup() {
  const home = path.join(directory, 'home');
  await mkdir(path.join(home, 'data', 'notes', 'email'), { recursive: true });
  await writeFile(path.join(home, 'config.yaml'), 'data_dir: ./data\n');
  await writeFile(path.join(home, 'secrets.yaml'), 'imap_password: hunter2\n', { mode: 0o600 });
  await writeFile(path.join(home, 'data', 'api-token'), 'token\n', { mode: 0o600 });
  await writeFile(path.join(home, 'data', 'notes', 'email', 'one.md'), '---\nsubject: hi\n---\nbody\n');
  await symlink('/etc', path.join(home, 'data', 'notes', 'outside'));
  const { config } = await loadConfig({ configPath: path.join(home, 'config.yaml') });
  return { home, config };
}

async function archiveNames(file: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of readTarGz({ file })) if (entry.type === 'file') names.push(entry.path);
  return names.sort();
}

describe('createBackup', () => {
  it('leaves secrets out unless asked, skips links with a warning, and restores to the same files', async () => {
    const { config } = await setup();
    const warnings: string[] = [];
    const outFile = path.join(directory, 'plain.tar.gz');
    const { manifest } = await createBackup({
      config,
      outFile,
      withSecrets: false,
      warn: (message) => warnings.push(message),
    });
    expect(await archiveNames(outFile)).toEqual(['config.yaml', 'data/notes/email/one.md', 'manifest.json']);
    expect(manifest.excluded.sort()).toEqual(['data/api-token', 'secrets.yaml']);
    expect(manifest.queue).toMatchObject({ included: true, counts: { pending: 0, active: 0, done: 0, failed: 0 } });
    expect(warnings).toEqual([expect.stringMatching(/^skipped .*outside: not a regular file or directory/)]);

    const withSecrets = path.join(directory, 'secrets.tar.gz');
    warnings.length = 0;
    await createBackup({ config, outFile: withSecrets, withSecrets: true, warn: (message) => warnings.push(message) });
    expect(await archiveNames(withSecrets)).toEqual([
      'config.yaml',
      'data/api-token',
      'data/notes/email/one.md',
      'manifest.json',
      'secrets.yaml',
    ]);
    expect(warnings[0]).toMatch(/the archive holds .*secrets\.yaml \(passwords, tokens\)/);

    const into = path.join(directory, 'restored');
    await restoreBackup({ archive: withSecrets, into });
    expect(await readFile(path.join(into, 'secrets.yaml'), 'utf8')).toBe('imap_password: hunter2\n');
    expect(await readFile(path.join(into, 'data', 'notes', 'email', 'one.md'), 'utf8')).toContain('body');
    expect((await readdir(path.join(into, 'data', 'queue'))).sort()).toEqual(
      expect.arrayContaining(['active', 'done', 'failed', 'pending']),
    );
  });

  it('refuses an archive inside the data directory and one that exists, leaving no .part behind', async () => {
    const { home, config } = await setup();
    const warn = () => {};
    await expect(
      createBackup({ config, outFile: path.join(home, 'data', 'b.tar.gz'), withSecrets: false, warn }),
    ).rejects.toThrow(/is inside the data directory/);
    const existing = path.join(directory, 'exists.tar.gz');
    await writeFile(existing, 'mine');
    await expect(createBackup({ config, outFile: existing, withSecrets: false, warn })).rejects.toThrow(
      /exists already/,
    );
    expect(await readFile(existing, 'utf8')).toBe('mine');
    expect((await readdir(directory)).filter((name) => name.endsWith('.part'))).toEqual([]);
  });
});

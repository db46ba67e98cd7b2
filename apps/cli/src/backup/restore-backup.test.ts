import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backupFormatVersion, dataFormatVersions } from './backup-manifest.ts';
import { checkedPath, restoreBackup } from './restore-backup.ts';
import { readTarGz, type TarEntry, TarGzWriter } from './tar-gzip.ts';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-restore-'));
});
afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** A ustar header made by hand, so a test can write what our writer never would (links, `..`, absolute paths). */
function rawHeader(name: string, type: string, size: number, linkName = ''): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0, 100, 'latin1');
  block.write('0000600\0', 100, 'latin1');
  block.write('0000000\0', 108, 'latin1');
  block.write('0000000\0', 116, 'latin1');
  block.write(`${size.toString(8).padStart(11, '0')}\0`, 124, 'latin1');
  block.write('00000000000\0', 136, 'latin1');
  block.write(type, 156, 'latin1');
  block.write(linkName, 157, 100, 'latin1');
  block.write('ustar\0', 257, 'latin1');
  block.write('00', 263, 'latin1');
  block.fill(0x20, 148, 156);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 'latin1');
  return block;
}

function rawArchive(entries: { name: string; type?: string; content?: string; link?: string }[]): Buffer {
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const content = Buffer.from(entry.content ?? '');
    parts.push(rawHeader(entry.name, entry.type ?? '0', content.length, entry.link));
    if (content.length > 0) parts.push(content, Buffer.alloc((512 - (content.length % 512)) % 512));
  }
  parts.push(Buffer.alloc(1_024));
  return gzipSync(Buffer.concat(parts));
}

function manifestFor(files: Record<string, string>, counts = { pending: 0, active: 0, done: 0, failed: 0 }) {
  return JSON.stringify({
    format: 'assistant-backup',
    format_version: backupFormatVersion,
    created_at: new Date().toISOString(),
    assistant_version: '0.1.0',
    node_version: process.version,
    host: 'test',
    source: { config_file: '/x/config.yaml', data_dir: '/x/data' },
    with_secrets: false,
    excluded: [],
    queue: { included: true, backend: 'file', counts, snapshot_at: new Date().toISOString(), claims_held_ms: 1 },
    data_formats: dataFormatVersions,
    files: Object.entries(files).map(([file, text]) => ({
      path: file,
      size: Buffer.byteLength(text),
      sha256: createHash('sha256').update(text).digest('hex'),
    })),
  });
}

async function writeArchive(name: string, entries: TarEntry[]): Promise<string> {
  const file = path.join(directory, name);
  const writer = new TarGzWriter({ file });
  for (const entry of entries) await writer.add(entry);
  await writer.close();
  return file;
}

describe('the tar writer and reader', () => {
  it('round-trip files with names longer than ustar holds, non-ASCII names, empty files and directories', async () => {
    const longName = `data/queue/done/5_20261128T001726442Z_01m8fr74y0r3pzaar0c5mmdvsf--ea380872537cbea8--${'x'.repeat(120)}.yaml`;
    const entries: TarEntry[] = [
      { type: 'directory', path: 'data' },
      { type: 'file', path: longName, content: Buffer.from('payload: 1\n') },
      { type: 'file', path: 'data/notes/Grüße.md', content: Buffer.from('# hi\n') },
      { type: 'file', path: 'data/empty', content: Buffer.alloc(0) },
      { type: 'file', path: 'data/big', content: Buffer.alloc(70_000, 7) },
    ];
    const file = await writeArchive('round.tar.gz', entries);
    const read: TarEntry[] = [];
    for await (const entry of readTarGz({ file })) read.push(entry);
    expect(read).toEqual(entries);
  });
});

describe('restoreBackup', () => {
  it('refuses paths that escape, absolute paths, links and devices, and leaves the target empty', async () => {
    const cases: [string, Parameters<typeof rawArchive>[0], RegExp][] = [
      ['dot-dot', [{ name: '../escaped.txt', content: 'x' }], /`\.\.\/escaped\.txt` climbs out with `\.\.`/],
      ['dot-dot inside', [{ name: 'data/../../escaped.txt', content: 'x' }], /climbs out/],
      ['absolute', [{ name: '/tmp/absolute.txt', content: 'x' }], /is an absolute path/],
      ['top level', [{ name: 'elsewhere/x.txt', content: 'x' }], /is not under/],
      [
        'symlink, then a file through it',
        [
          { name: 'data/link', type: '2', link: directory },
          { name: 'data/link/escaped.txt', content: 'x' },
        ],
        /`data\/link` is a symbolic link/,
      ],
      ['hard link', [{ name: 'data/hard', type: '1', link: '/etc/passwd' }], /is a hard link/],
      ['fifo', [{ name: 'data/pipe', type: '6' }], /is a FIFO/],
      [
        'a file, then entries under it',
        [
          { name: 'data/x', content: 'x' },
          { name: 'data/x/y', content: 'y' },
        ],
        /two of its entries collide \((ENOTDIR|EEXIST)\)/,
      ],
      [
        'a directory, then a file of its name',
        [
          { name: 'data/d/', type: '5' },
          { name: 'data/d', content: 'y' },
        ],
        /two of its entries collide \((EISDIR|EEXIST)\)/,
      ],
    ];
    for (const [label, entries, message] of cases) {
      const archive = path.join(directory, `${label}.tar.gz`);
      await writeFile(archive, rawArchive(entries));
      const into = path.join(directory, `into-${label}`, 'target');
      await mkdir(into, { recursive: true });
      await expect(restoreBackup({ archive, into }), label).rejects.toThrow(message);
      expect(await readdir(into), label).toEqual([]);
    }
    expect(await readdir(directory).then((names) => names.filter((name) => name.includes('escaped')))).toEqual([]);
    await expect(lstat(path.join(os.tmpdir(), 'absolute.txt'))).rejects.toThrow();
  });

  it('refuses a non-empty target, garbage, a file the manifest does not list, and an altered file', async () => {
    const config = 'data_dir: ./data\n';
    const good = await writeArchive('good.tar.gz', [
      { type: 'file', path: 'config.yaml', content: Buffer.from(config) },
      { type: 'file', path: 'manifest.json', content: Buffer.from(manifestFor({ 'config.yaml': config })) },
    ]);
    const busy = path.join(directory, 'busy');
    await mkdir(busy);
    await writeFile(path.join(busy, 'keep.txt'), 'mine');
    await expect(restoreBackup({ archive: good, into: busy })).rejects.toThrow(/is not empty \(it holds keep\.txt\)/);
    expect(await readFile(path.join(busy, 'keep.txt'), 'utf8')).toBe('mine');

    const garbage = path.join(directory, 'garbage.tar.gz');
    await writeFile(garbage, 'not gzip at all');
    await expect(restoreBackup({ archive: garbage, into: path.join(directory, 'g') })).rejects.toThrow(/not gzip/);
    await expect(lstat(path.join(directory, 'g'))).rejects.toThrow();

    const extra = await writeArchive('extra.tar.gz', [
      { type: 'file', path: 'config.yaml', content: Buffer.from(config) },
      { type: 'file', path: 'data/planted.sh', content: Buffer.from('echo hi') },
      { type: 'file', path: 'manifest.json', content: Buffer.from(manifestFor({ 'config.yaml': config })) },
    ]);
    await expect(restoreBackup({ archive: extra, into: path.join(directory, 'e') })).rejects.toThrow(
      /`data\/planted\.sh` is in the archive but not in its manifest/,
    );
    const altered = await writeArchive('altered.tar.gz', [
      { type: 'file', path: 'config.yaml', content: Buffer.from('data_dir: /etc\n') },
      { type: 'file', path: 'manifest.json', content: Buffer.from(manifestFor({ 'config.yaml': config })) },
    ]);
    await expect(restoreBackup({ archive: altered, into: path.join(directory, 'a') })).rejects.toThrow(
      /`config\.yaml` differs from its manifest entry/,
    );

    const restored = await restoreBackup({ archive: good, into: path.join(directory, 'ok') });
    expect(restored.files).toBe(1);
    expect(restored.formatWarnings).toEqual([]);

    // A format of another version is restored as it is, and said.
    const newer = JSON.parse(manifestFor({ 'config.yaml': config }));
    newer.data_formats.queue_task = 2;
    const later = await writeArchive('later.tar.gz', [
      { type: 'file', path: 'config.yaml', content: Buffer.from(config) },
      { type: 'file', path: 'manifest.json', content: Buffer.from(JSON.stringify(newer)) },
    ]);
    const warned = await restoreBackup({ archive: later, into: path.join(directory, 'later') });
    expect(warned.formatWarnings).toEqual([
      expect.stringMatching(/^the archive's `queue_task` is version 2, this Assistant's is 1/),
    ]);
    expect((await readdir(path.join(directory, 'ok'))).sort()).toEqual(['config.yaml', 'data', 'manifest.json']);
  });

  it('accepts only the paths a backup writes', () => {
    for (const good of ['config.yaml', 'secrets.yaml', 'manifest.json', 'data', 'data/queue/done/x.yaml']) {
      expect(checkedPath(good)).toBe(good);
    }
    for (const bad of ['', 'data//x', 'data/./x', './data', 'data\\..\\x', 'C:/x', 'config.yaml/x', 'data/\0x']) {
      expect(() => checkedPath(bad), JSON.stringify(bad)).toThrow(/the archive was not restored/);
    }
  });
});

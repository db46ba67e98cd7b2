import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { openFileTaskQueue } from '@assistant/queue';
import {
  type BackupManifest,
  backupFormatVersion,
  backupManifestSchema,
  dataFormatVersions,
} from './backup-manifest.ts';
import { readTarGz, TarFormatError } from './tar-gzip.ts';

export interface RestoreBackupOptions {
  /** The archive `assistant backup` wrote. Treated as hostile: it may come from anywhere. */
  archive: string;
  /** Where to restore; it must be empty or not exist yet. */
  into: string;
}

export interface RestoreBackupResult {
  manifest: BackupManifest;
  files: number;
  /** Data formats the archive has in versions this release does not write: what a person must know before starting. */
  formatWarnings: string[];
}

/** The only names an archive's top level may hold. */
const topLevelNames = new Set(['manifest.json', 'config.yaml', 'secrets.yaml', 'data']);

/**
 * Restores an archive into an empty directory. Every entry is checked before it is written: a path must be
 * relative, without `.`/`..` segments, backslashes or NUL, under one of the archive's four top-level names; only
 * files and directories are accepted (no link can be planted to redirect a later write). Everything is written into
 * a fresh staging directory inside `into` with exclusive creates, then checked against the manifest (each file's
 * size and SHA-256, nothing missing, nothing extra, the queue's counts as `queue stats` counts them), and only then
 * moved into place. On any failure the staging directory is removed and `into` is left as it was.
 */
export async function restoreBackup(options: RestoreBackupOptions): Promise<RestoreBackupResult> {
  const into = path.resolve(options.into);
  const created = await prepareTarget(into);
  const staging = path.join(into, `.restore-${randomBytes(6).toString('hex')}`);
  await mkdir(staging, { mode: 0o700 });
  try {
    const written = new Map<string, { size: number; sha256: string }>();
    let manifestText: string | undefined;
    try {
      for await (const entry of readTarGz({ file: options.archive })) {
        const relative = checkedPath(entry.path);
        const target = path.join(staging, ...relative.split('/'));
        if (entry.type === 'directory') {
          await mkdir(target, { recursive: true, mode: 0o700 });
          continue;
        }
        if (relative === 'manifest.json') {
          if (manifestText !== undefined) throw refused('it holds two manifest.json entries');
          manifestText = entry.content.toString('utf8');
          continue;
        }
        if (written.has(relative)) throw refused(`it holds \`${relative}\` twice`);
        await mkdir(path.dirname(target), { recursive: true, mode: 0o700 });
        // Exclusive: never through anything already there.
        await writeFile(target, entry.content, { flag: 'wx', mode: 0o600 });
        written.set(relative, {
          size: entry.content.length,
          sha256: createHash('sha256').update(entry.content).digest('hex'),
        });
      }
    } catch (error) {
      if (error instanceof TarFormatError) throw refused(error.message);
      // Two entries at one path, or a file where a directory's entries go: never what a backup writes.
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' || code === 'ENOTDIR' || code === 'EISDIR') {
        throw refused(`two of its entries collide (${code}): a file and a directory, or one name twice`);
      }
      if ((error as NodeJS.ErrnoException).code === 'Z_DATA_ERROR') throw refused('it is not gzip-compressed data');
      throw error;
    }
    const manifest = parseManifest(manifestText);
    checkAgainstManifest(manifest, written);
    if (manifest.queue.included) {
      const queue = await openFileTaskQueue({
        directory: path.join(staging, 'data', 'queue'),
        logger: { info() {}, warn() {} },
      });
      try {
        const stats = await queue.stats();
        const counts = { pending: stats.pending, active: stats.active, done: stats.done, failed: stats.failed };
        const expected = manifest.queue.counts;
        if (JSON.stringify(counts) !== JSON.stringify(expected)) {
          throw refused(
            `its queue holds ${JSON.stringify(counts)} tasks per state, but the manifest says ${JSON.stringify(expected)}`,
          );
        }
      } finally {
        await queue.close();
      }
    }
    await writeFile(path.join(staging, 'manifest.json'), manifestText ?? '', { flag: 'wx', mode: 0o600 });
    for (const name of await readdir(staging)) await rename(path.join(staging, name), path.join(into, name));
    await rmdir(staging);
    return { manifest, files: written.size, formatWarnings: formatWarnings(manifest) };
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    if (created) await rmdir(into).catch(() => {});
    throw error;
  }
}

/** A format the archive has in another version than this release's: restored as it is, but said. */
function formatWarnings(manifest: BackupManifest): string[] {
  const known: Record<string, number> = dataFormatVersions;
  const warnings: string[] = [];
  for (const [format, version] of Object.entries(manifest.data_formats)) {
    const ours = known[format];
    if (ours === undefined) {
      warnings.push(
        `the archive has data format \`${format}\` (version ${version}), which this Assistant does not know`,
      );
    } else if (ours !== version) {
      warnings.push(
        `the archive's \`${format}\` is version ${version}, this Assistant's is ${ours}: see the release notes (docs/operations.md, "Data formats") before starting it`,
      );
    }
  }
  return warnings;
}

/** Creates `into` if missing (true), accepts it empty (false), refuses anything else. */
async function prepareTarget(into: string): Promise<boolean> {
  const info = await lstat(into).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  if (info === undefined) {
    await mkdir(into, { recursive: true, mode: 0o700 });
    return true;
  }
  if (!info.isDirectory()) {
    throw new AssistantError('USAGE', `--into ${into} is not a directory`, {
      hint: 'name an empty directory, or one that does not exist yet',
    });
  }
  const names = await readdir(into);
  if (names.length > 0) {
    throw new AssistantError(
      'USAGE',
      `--into ${into} is not empty (it holds ${names.slice(0, 3).join(', ')}${names.length > 3 ? ', …' : ''}); a restore never writes over anything`,
      { hint: 'name an empty directory, or one that does not exist yet' },
    );
  }
  return false;
}

/**
 * The entry's path if it is one a backup can hold; a BACKUP_REFUSED error naming it otherwise. Exported for its test.
 */
export function checkedPath(entryPath: string): string {
  const problem = pathProblem(entryPath);
  if (problem !== undefined) throw refused(`entry \`${printable(entryPath)}\` ${problem}`);
  return entryPath;
}

function pathProblem(entryPath: string): string | undefined {
  if (entryPath === '') return 'has an empty path';
  if (entryPath.includes('\0')) return 'has a NUL byte in its path';
  if (entryPath.includes('\\')) return 'has a backslash in its path';
  if (entryPath.startsWith('/') || /^[A-Za-z]:/.test(entryPath)) return 'is an absolute path';
  const segments = entryPath.split('/');
  if (segments.some((segment) => segment === '..')) return 'climbs out with `..`';
  if (segments.some((segment) => segment === '' || segment === '.')) return 'has an empty or `.` segment';
  if (!topLevelNames.has(segments[0] ?? '')) {
    return `is not under ${[...topLevelNames].map((name) => `\`${name}\``).join(', ')}`;
  }
  if (segments.length > 1 && segments[0] !== 'data') return 'is inside a file name';
  return undefined;
}

function parseManifest(text: string | undefined): BackupManifest {
  if (text === undefined) throw refused('it has no manifest.json: it was not written by `assistant backup`');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw refused(`its manifest.json is not JSON: ${(error as Error).message}`);
  }
  const format = (value as { format_version?: unknown } | null)?.format_version;
  if (typeof format === 'number' && format !== backupFormatVersion) {
    throw refused(`it is backup format ${format}; this Assistant reads format ${backupFormatVersion}`);
  }
  const parsed = backupManifestSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw refused(`its manifest.json is not valid: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`);
  }
  return parsed.data;
}

function checkAgainstManifest(manifest: BackupManifest, written: Map<string, { size: number; sha256: string }>): void {
  const listed = new Set<string>();
  for (const file of manifest.files) {
    listed.add(file.path);
    const found = written.get(file.path);
    if (found === undefined) throw refused(`\`${printable(file.path)}\` is in its manifest but not in the archive`);
    if (found.size !== file.size || found.sha256 !== file.sha256) {
      throw refused(
        `\`${printable(file.path)}\` differs from its manifest entry (size or SHA-256): damaged or altered`,
      );
    }
  }
  for (const file of written.keys()) {
    if (!listed.has(file)) throw refused(`\`${printable(file)}\` is in the archive but not in its manifest`);
  }
}

function refused(reason: string): AssistantError {
  return new AssistantError('BACKUP_REFUSED', `the archive was not restored: ${reason}`, {
    hint: 'restore only archives `assistant backup` wrote; nothing was written',
  });
}

/** A path as an error message may show it: control characters escaped, at most 200 characters. */
function printable(text: string): string {
  const escaped = JSON.stringify(text).slice(1, -1);
  return escaped.length > 200 ? `${escaped.slice(0, 200)}…` : escaped;
}

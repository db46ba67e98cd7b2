import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, rename, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { LoadedConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { assistantVersion } from '@assistant/process';
import { QueueSnapshotBusyError, snapshotQueueFiles } from '@assistant/queue';
import { type BackupManifest, backupFormatVersion, dataFormatVersions, type QueueCounts } from './backup-manifest.ts';
import { TarGzWriter } from './tar-gzip.ts';

export interface CreateBackupOptions {
  config: LoadedConfig;
  /** The archive to write; it must not exist. */
  outFile: string;
  /** Put secrets.yaml and data/api-token in the archive too. */
  withSecrets: boolean;
  /** Told about each thing left out or skipped. */
  warn: (message: string) => void;
  /** How long claims may be held for the queue's snapshot. @default 30_000 */
  holdMs?: number;
}

export interface CreateBackupResult {
  manifest: BackupManifest;
  bytes: number;
}

/** Files in the data directory that are credentials: only with --with-secrets. */
const secretDataFiles = ['api-token'];

/**
 * Writes a backup archive while Assistant runs: config.yaml, secrets.yaml (only `withSecrets`), the queue as a
 * snapshot taken under a claims hold (snapshotQueueFiles: each task exactly once, in its state at one moment), then
 * the rest of the data directory file by file. Notes and logs are replaced atomically by their writers, so each file
 * is read whole; they are copied after the queue's moment, so they may be a little newer than it. The archive is
 * written beside its name and renamed into place once complete, so a failed backup never leaves a file that looks
 * like one.
 */
export async function createBackup(options: CreateBackupOptions): Promise<CreateBackupResult> {
  const { config, outFile } = options;
  const { paths } = config;
  const dataDir = paths.dataDir;
  if (isInside(outFile, dataDir)) {
    throw new AssistantError('USAGE', `--out ${outFile} is inside the data directory ${dataDir}`, {
      hint: 'write the archive somewhere else: the backup would contain itself',
    });
  }
  if (await exists(outFile)) {
    throw new AssistantError('USAGE', `${outFile} exists already`, { hint: 'name a new file with --out' });
  }
  const partFile = `${outFile}.part`;
  // A leftover of a backup that was killed: never an archive, and it would stop every later one.
  await rm(partFile, { force: true });
  const writer = new TarGzWriter({ file: partFile });
  const files: BackupManifest['files'] = [];
  const excluded: string[] = [];
  const addFile = async (archivePath: string, content: Buffer, mtimeMs?: number) => {
    await writer.add({ type: 'file', path: archivePath, content }, mtimeMs === undefined ? {} : { mtimeMs });
    files.push({ path: archivePath, size: content.length, sha256: createHash('sha256').update(content).digest('hex') });
  };
  try {
    await addFile('config.yaml', await readFile(paths.configFile));
    if (await exists(paths.secretsFile)) {
      if (options.withSecrets) {
        options.warn(
          `the archive holds ${paths.secretsFile} (passwords, tokens): keep it as private as secrets.yaml itself`,
        );
        await addFile('secrets.yaml', await readFile(paths.secretsFile));
      } else excluded.push('secrets.yaml');
    }

    // The queue first: its snapshot is the archive's moment.
    let queue: BackupManifest['queue'];
    await writer.add({ type: 'directory', path: 'data' });
    if (config.queue.backend === 'file') {
      let snapshot: Awaited<ReturnType<typeof snapshotQueueFiles>>;
      try {
        snapshot = await snapshotQueueFiles({
          queueRoot: paths.queue,
          holder: 'assistant backup', // the hold records the pid and host beside it
          ...(options.holdMs === undefined ? {} : { holdMs: options.holdMs }),
        });
      } catch (error) {
        if (!(error instanceof QueueSnapshotBusyError)) throw error;
        throw new AssistantError('BACKUP_FAILED', `no backup written: ${error.message}`, {
          hint: 'try again when the queue is quieter, or stop the server (which enqueues) for the moment',
        });
      }
      for (const directory of ['queue', 'queue/pending', 'queue/active', 'queue/done', 'queue/failed']) {
        await writer.add({ type: 'directory', path: `data/${directory}` });
      }
      for (const file of snapshot.files) await addFile(`data/queue/${file.path}`, file.content);
      queue = {
        included: true,
        backend: 'file',
        counts: snapshot.counts satisfies QueueCounts,
        snapshot_at: new Date(snapshot.atMs).toISOString(),
        claims_held_ms: Math.max(0, Math.round(snapshot.heldMs)),
      };
    } else {
      options.warn(
        `the queue is in ${config.queue.backend} (${config.queue.backend === 'redis' ? config.queue.redis.url : ''}), not in files: the archive holds no tasks; back that up with its own tools`,
      );
      queue = { included: false, backend: config.queue.backend, reason: 'the queue is not kept in files' };
    }

    // The rest of the data directory, and the configured directories that lie outside it, under their usual names.
    // The queue is the snapshot above, whole: its tmp/ (writes in progress), workers/ (this machine's heartbeats) and
    // the claims hold are not copied at all.
    const skip = new Set([paths.queue, path.resolve(partFile)]);
    const walk = async (directory: string, archiveDirectory: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(directory, { withFileTypes: true });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
        throw error;
      }
      entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
      for (const entry of entries) {
        const full = path.join(directory, entry.name);
        const archivePath = `${archiveDirectory}/${entry.name}`;
        if (skip.has(full)) continue;
        if (archiveDirectory === 'data' && secretDataFiles.includes(entry.name) && !options.withSecrets) {
          excluded.push(archivePath);
          continue;
        }
        if (entry.isDirectory()) {
          await writer.add({ type: 'directory', path: archivePath });
          await walk(full, archivePath);
        } else if (entry.isFile()) {
          let content: Buffer;
          try {
            content = await readFile(full);
          } catch (error) {
            // Removed since the listing (a pruned task, a finished turn's lease): it is simply not in the archive.
            if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
            throw error;
          }
          await addFile(archivePath, content);
        } else {
          // A restore refuses links (they could point anywhere), so a backup never holds one.
          options.warn(`skipped ${full}: not a regular file or directory (a link, socket or device)`);
        }
      }
    };
    const outside = (['notes', 'logs', 'control'] as const).filter((name) => !isInside(paths[name], dataDir));
    for (const name of outside) skip.add(paths[name]);
    await walk(dataDir, 'data');
    for (const name of outside) {
      options.warn(
        `${name} is configured outside the data directory (${paths[name]}): it is in the archive as data/${name}`,
      );
      await writer.add({ type: 'directory', path: `data/${name}` });
      await walk(paths[name], `data/${name}`);
    }
    if (!isInside(paths.queue, dataDir) && queue.included) {
      options.warn(
        `the queue is configured outside the data directory (${paths.queue}): it is in the archive as data/queue`,
      );
    }

    const manifest: BackupManifest = {
      format: 'assistant-backup',
      format_version: backupFormatVersion,
      created_at: new Date().toISOString(),
      assistant_version: assistantVersion,
      node_version: process.version,
      host: os.hostname(),
      source: { config_file: paths.configFile, data_dir: dataDir },
      with_secrets: options.withSecrets,
      excluded,
      queue,
      data_formats: { ...dataFormatVersions },
      files,
    };
    await writer.add({
      type: 'file',
      path: 'manifest.json',
      content: Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`),
    });
    await writer.close();
    await rename(partFile, outFile);
    return { manifest, bytes: (await lstat(outFile)).size };
  } catch (error) {
    await writer.close().catch(() => {});
    await rm(partFile, { force: true });
    throw error;
  }
}

function isInside(file: string, directory: string): boolean {
  const relative = path.relative(path.resolve(directory), path.resolve(file));
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

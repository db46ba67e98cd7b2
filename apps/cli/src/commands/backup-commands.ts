import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import { createBackup } from '../backup/create-backup.ts';
import { restoreBackup } from '../backup/restore-backup.ts';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface BackupCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** The archive to write (default: assistant-backup-YYYYMMDD-HHMMSS.tar.gz here). */
  out?: string;
  withSecrets?: boolean;
  json?: boolean;
}

/** `assistant backup`: a consistent archive of config.yaml, data/ and (with --with-secrets) secrets.yaml. */
export async function backupCommand(options: BackupCommandOptions): Promise<void> {
  const { context } = options;
  const { config } = await loadCliConfig(options);
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const outFile = path.resolve(context.cwd, options.out ?? `assistant-backup-${stamp}.tar.gz`);
  const { manifest, bytes } = await createBackup({
    config,
    outFile,
    withSecrets: options.withSecrets === true,
    warn: (message) => context.stderr.write(`warning: ${message}\n`),
  });
  if (options.json) {
    const { files, ...summary } = manifest;
    context.stdout.write(`${JSON.stringify({ file: outFile, bytes, files: files.length, ...summary }, null, 2)}\n`);
    return;
  }
  const lines = [`wrote ${outFile} (${files(manifest.files.length)}, ${formatBytes(bytes)})`];
  if (manifest.queue.included) {
    const { counts } = manifest.queue;
    lines.push(
      `queue at ${manifest.queue.snapshot_at}: ${counts.pending} pending, ${counts.active} active, ${counts.done} done, ${counts.failed} failed (claims held ${manifest.queue.claims_held_ms} ms)`,
    );
  }
  if (manifest.excluded.length > 0) {
    lines.push(`left out: ${manifest.excluded.join(', ')} (secrets; --with-secrets puts them in)`);
  }
  context.stdout.write(`${lines.join('\n')}\n`);
}

export interface RestoreCommandOptions {
  context: CliContext;
  archive: string;
  into?: string;
  json?: boolean;
}

/** `assistant restore ARCHIVE --into DIR`: checks the archive, then restores it into an empty directory. */
export async function restoreCommand(options: RestoreCommandOptions): Promise<void> {
  const { context } = options;
  if (options.into === undefined) {
    throw new AssistantError('USAGE', 'restore needs --into DIR: an empty directory (or a new one) to restore into', {
      hint: 'assistant restore assistant-backup-….tar.gz --into ~/assistant-restored',
    });
  }
  const archive = path.resolve(context.cwd, options.archive);
  const into = path.resolve(context.cwd, options.into);
  const { manifest, files: count, formatWarnings } = await restoreBackup({ archive, into });
  for (const warning of formatWarnings) context.stderr.write(`warning: ${warning}\n`);
  if (options.json) {
    const { files: _files, ...summary } = manifest;
    context.stdout.write(`${JSON.stringify({ into, files: count, ...summary }, null, 2)}\n`);
    return;
  }
  const config = path.join(into, 'config.yaml');
  const data = path.join(into, 'data');
  const lines = [
    `restored ${archive} into ${into} (${files(count)}, taken ${manifest.created_at} on ${manifest.host})`,
  ];
  if (manifest.queue.included) {
    const { counts } = manifest.queue;
    lines.push(
      `queue: ${counts.pending} pending, ${counts.active} active (returned to pending when a worker starts), ${counts.done} done, ${counts.failed} failed`,
    );
  }
  if (!manifest.with_secrets) lines.push('secrets.yaml was not in the archive: put yours beside config.yaml');
  lines.push(
    `run it with: assistant start --config ${shellWord(config)} --data ${shellWord(data)}`,
    `  (config.yaml's own data_dir still says where the data was; --data points at the restored copy)`,
  );
  context.stdout.write(`${lines.join('\n')}\n`);
}

function files(count: number): string {
  return `${count} ${count === 1 ? 'file' : 'files'}`;
}

function formatBytes(bytes: number): string {
  if (bytes < 1_024) return `${bytes} B`;
  if (bytes < 1_048_576) return `${(bytes / 1_024).toFixed(1)} KiB`;
  return `${(bytes / 1_048_576).toFixed(1)} MiB`;
}

/** A path as a word a POSIX shell reads back unchanged. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

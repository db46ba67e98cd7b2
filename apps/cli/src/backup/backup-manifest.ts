import * as z from 'zod';

// manifest.json, the last entry of every backup archive: what the archive holds and how to check it.

/** This archive layout's version; `restore` refuses another. */
export const backupFormatVersion = 1;

/**
 * The version of each on-disk format this release reads and writes. None of these files carries a version of its own
 * (docs/operations.md, "Data formats"), so the backup records them here: a release that changes one raises its
 * number, and a restore of an older archive can say which migration the data needs.
 */
export const dataFormatVersions = {
  /** data/queue/{pending,active,done,failed}/*.yaml: task YAML, names `{priority}_{time}_{id}--{fingerprint}--{type}.yaml`, active ones `…@{worker}.yaml`. */
  queue_task: 1,
  /** notes/**\/*.md: markdown with YAML frontmatter. */
  notes: 1,
  /** notes/approvals/*.md: approval requests bound to the digest of their rendering. */
  approvals: 1,
  /** logs/YYYY-MM-DD.md: the human log. */
  human_log: 1,
  /** data/supervisor.json: `assistant start`'s children, restarts and pids. */
  supervisor_state: 1,
} as const;

const countsSchema = z.object({
  pending: z.int().nonnegative(),
  active: z.int().nonnegative(),
  done: z.int().nonnegative(),
  failed: z.int().nonnegative(),
});

export const backupManifestSchema = z.object({
  format: z.literal('assistant-backup'),
  format_version: z.literal(backupFormatVersion),
  created_at: z.iso.datetime(),
  assistant_version: z.string(),
  node_version: z.string(),
  host: z.string(),
  source: z.object({ config_file: z.string(), data_dir: z.string() }),
  with_secrets: z.boolean(),
  /** What was left out on purpose, relative to the archive root (secrets without --with-secrets). */
  excluded: z.array(z.string()),
  queue: z.discriminatedUnion('included', [
    z.object({
      included: z.literal(true),
      backend: z.literal('file'),
      /** Tasks per state at the snapshot's moment, as `assistant queue stats` counts them. */
      counts: countsSchema,
      snapshot_at: z.iso.datetime(),
      claims_held_ms: z.int().nonnegative(),
    }),
    z.object({ included: z.literal(false), backend: z.string(), reason: z.string() }),
  ]),
  data_formats: z.record(z.string(), z.int().positive()),
  files: z.array(
    z.object({
      path: z.string(),
      size: z.int().nonnegative(),
      sha256: z.string().regex(/^[0-9a-f]{64}$/),
    }),
  ),
});

export type BackupManifest = z.infer<typeof backupManifestSchema>;
export type QueueCounts = z.infer<typeof countsSchema>;

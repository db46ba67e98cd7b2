import path from 'node:path';

export interface DataPathsOptions {
  /** `config.paths.dataDir`. */
  dataDir: string;
  /** `config.paths.queue`, which `directories.queue` may put outside the data directory. */
  queueDir: string;
}

/** Shows absolute paths the way the API answers with them. */
export interface DataPaths {
  /** `queue/done/5_….yaml`: relative to the data directory, `/`-separated; never an absolute path. */
  shown(absolute: string): string;
  /**
   * An error message with every mention of the absolute data directory (or the queue's) made relative. Only a whole
   * path counts: the root must start a path and be followed by a separator or end there, so `https://host/data/x`
   * or `/data2` stay as they are when the data directory is `/data`.
   */
  scrub(text: string): string;
}

/**
 * Paths in responses are relative to the data directory: an absolute path tells a caller the owner's user name and
 * home layout, and the owner's own tools know where the data directory is.
 */
export function dataPaths(options: DataPathsOptions): DataPaths {
  const dataDir = path.resolve(options.dataDir);
  const queueDir = path.resolve(options.queueDir);
  const inside = (root: string, absolute: string): string | undefined => {
    const relative = path.relative(root, absolute);
    return relative.startsWith('..') || path.isAbsolute(relative) ? undefined : relative;
  };
  const posix = (relative: string) => relative.split(path.sep).join('/');
  const roots: [string, string][] = [[dataDir, '']];
  if (inside(dataDir, queueDir) === undefined) roots.push([queueDir, 'queue/']);
  roots.sort((left, right) => right[0].length - left[0].length);
  // A filesystem root (`/`, `C:\`) would match every path, and there is no layout under it to hide.
  const patterns = roots
    .filter(([root]) => path.parse(root).root !== root)
    .map(([root, replacement]) => ({ pattern: rootPattern(root), length: root.length, replacement }));
  return {
    shown(absolute) {
      const fromData = inside(dataDir, absolute);
      if (fromData !== undefined) return posix(fromData);
      // `directories.queue` elsewhere: name it as the queue's, as if it were in its usual place.
      const fromQueue = inside(queueDir, absolute);
      if (fromQueue !== undefined) return posix(path.join('queue', fromQueue));
      return path.basename(absolute);
    },
    scrub(text) {
      let result = text;
      // Longest root first, so a queue folder outside the data directory is not cut at the data directory's name.
      for (const { pattern, length, replacement } of patterns) {
        // `root/…` becomes `…` (or `queue/…`); the root itself becomes `.` (or `queue`).
        result = result.replace(pattern, (match) =>
          match.length > length ? replacement : replacement === '' ? '.' : replacement.slice(0, -1),
        );
      }
      return result;
    },
  };
}

/**
 * Matches `root` as a whole path: not preceded by a character that would make it part of a longer path or a URL,
 * and followed by separators (consumed) or by the end of the path.
 */
function rootPattern(root: string): RegExp {
  const escaped = root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\w.~%+@/\\\\-])${escaped}(?:[/\\\\]+|(?=$|[\\s'"\`),;:\\]}>]))`, 'g');
}

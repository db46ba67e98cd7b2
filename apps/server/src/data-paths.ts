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
  /** `text` with every mention of the absolute data directory made relative: a backstop for messages. */
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
      for (const [root, replacement] of roots) {
        if (!result.includes(root)) continue;
        result = result
          .split(`${root}${path.sep}`)
          .join(replacement)
          .split(root)
          .join(replacement === '' ? '.' : replacement.slice(0, -1));
      }
      return result;
    },
  };
}

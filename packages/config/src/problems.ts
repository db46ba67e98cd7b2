/** Where a problem is, as a person finds it in their editor. Lines and columns count from 1. */
export interface SourcePosition {
  line: number;
  col: number;
}

export type ConfigPath = readonly (string | number)[];

/** One thing wrong with (or worth knowing about) the configuration, located in its file. */
export interface ConfigProblem {
  severity: 'error' | 'warning';
  /** The file as the user named it (config.yaml, secrets.yaml, …). */
  file: string;
  /** Absent only when the problem concerns a whole file (a missing or unreadable one). */
  position?: SourcePosition;
  /** Key path inside the file; empty for the document itself. */
  path: ConfigPath;
  message: string;
  hint?: string;
}

/** `integrations[0].platforms.inbox` — how paths are shown to people. */
export function formatPath(path: ConfigPath): string {
  let text = '';
  for (const segment of path) {
    if (typeof segment === 'number') text += `[${segment}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(segment)) text += text === '' ? segment : `.${segment}`;
    else text += `[${JSON.stringify(segment)}]`;
  }
  return text === '' ? '(document)' : text;
}

/** `config.yaml:12:7: integrations[0].schedule.every: <message>` plus an indented hint line when there is one. */
export function formatProblem(problem: ConfigProblem): string {
  const where = problem.position ? `${problem.file}:${problem.position.line}:${problem.position.col}` : problem.file;
  const head = `${where}: ${problem.path.length > 0 ? `${formatPath(problem.path)}: ` : ''}${problem.message}`;
  return problem.hint ? `${head}\n  hint: ${problem.hint}` : head;
}

/** Problems in reading order: by file, then line, then column. */
export function sortProblems(problems: readonly ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort(
    (a, b) =>
      a.file.localeCompare(b.file) ||
      (a.position?.line ?? 0) - (b.position?.line ?? 0) ||
      (a.position?.col ?? 0) - (b.position?.col ?? 0),
  );
}

/** Damerau-Levenshtein (optimal string alignment) distance, for "did you mean" hints. */
function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const table: number[] = new Array<number>(rows * cols).fill(0);
  const at = (i: number, j: number): number => table[i * cols + j] ?? 0;
  for (let i = 0; i < rows; i++) table[i * cols] = i;
  for (let j = 0; j < cols; j++) table[j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, at(i - 2, j - 2) + 1);
      table[i * cols + j] = best;
    }
  }
  return at(a.length, b.length);
}

/** The candidate closest to `input`, when it is close enough to be a plausible typo. */
export function nearest(input: string, candidates: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  const lower = input.toLowerCase();
  for (const candidate of candidates) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  const allowed = Math.max(2, Math.floor(input.length / 3));
  return bestDistance <= allowed ? best : undefined;
}

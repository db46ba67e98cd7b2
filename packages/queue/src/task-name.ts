import { taskIdPattern } from './task-id.ts';

/** What the queue knows about a task without reading it: enough to list, sort and count. */
export interface TaskName {
  /** 0–9, lower runs first. */
  priority: number;
  /** When the task becomes ready to run, in ms since the epoch (whole milliseconds). */
  readyAtMs: number;
  id: string;
  /** The dedup key: type and canonical payload, hashed. */
  fingerprint: string;
  type: string;
}

/** `email.inbox.check`, `service.research.search`: lower-case dot-separated words. */
export const taskTypePattern = /^[a-z0-9][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*$/;
export const maxTaskTypeLength = 100;

// {priority}_{YYYYMMDDTHHMMSSmmmZ}_{id}--{fingerprint}--{type}.yaml — every field but the type is fixed-width,
// so a plain `ls` lists pending tasks in run order: priority, then ready time, then creation (the id).
const namePattern =
  /^([0-9])_(\d{4})(\d\d)(\d\d)T(\d\d)(\d\d)(\d\d)(\d{3})Z_([0-9a-hjkmnp-tv-z]{26})--([0-9a-f]{16})--(.+)\.yaml$/;

/** The fixed-width UTC timestamp of a task name: `20261122T154501123Z`. */
export function formatNameTimestamp(timeMs: number): string {
  const date = new Date(timeMs);
  const year = date.getUTCFullYear();
  if (!Number.isFinite(timeMs) || year < 1970 || year > 9999) {
    throw new RangeError(`Expected a time between 1970 and 9999, got ${String(timeMs)}`);
  }
  const two = (value: number) => String(value).padStart(2, '0');
  return (
    `${String(year).padStart(4, '0')}${two(date.getUTCMonth() + 1)}${two(date.getUTCDate())}` +
    `T${two(date.getUTCHours())}${two(date.getUTCMinutes())}${two(date.getUTCSeconds())}` +
    `${String(date.getUTCMilliseconds()).padStart(3, '0')}Z`
  );
}

export function encodeTaskName(name: TaskName): string {
  if (!Number.isInteger(name.priority) || name.priority < 0 || name.priority > 9) {
    throw new RangeError(`Expected \`priority\` to be a digit 0-9, got \`${String(name.priority)}\``);
  }
  if (!taskIdPattern.test(name.id)) throw new RangeError(`Expected a 26-character task id, got \`${name.id}\``);
  if (!/^[0-9a-f]{16}$/.test(name.fingerprint)) {
    throw new RangeError(`Expected a 16-hex-digit fingerprint, got \`${name.fingerprint}\``);
  }
  assertTaskType(name.type);
  return `${name.priority}_${formatNameTimestamp(Math.floor(name.readyAtMs))}_${name.id}--${name.fingerprint}--${name.type}.yaml`;
}

/** Parses a task file name; `undefined` when the name is not one (a stray file, an editor's swap file). */
export function decodeTaskName(fileName: string): TaskName | undefined {
  const match = namePattern.exec(fileName);
  if (!match) return undefined;
  const [, priority, year, month, day, hour, minute, second, millisecond, id, fingerprint, type] = match;
  if (type === undefined || !taskTypePattern.test(type) || type.length > maxTaskTypeLength) return undefined;
  const parts = [year, month, day, hour, minute, second, millisecond].map(Number);
  const [y = 0, mo = 1, d = 1, h = 0, mi = 0, s = 0, ms = 0] = parts;
  const readyAtMs = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  // Date.UTC rolls 2026-02-31 over into March; a name that does not round-trip is not one we wrote.
  if (Number.isNaN(readyAtMs) || formatNameTimestamp(readyAtMs) !== fileName.slice(2, 21)) return undefined;
  return { priority: Number(priority), readyAtMs, id: id ?? '', fingerprint: fingerprint ?? '', type };
}

export function isTaskType(type: string): boolean {
  return type.length <= maxTaskTypeLength && taskTypePattern.test(type);
}

export function assertTaskType(type: string): void {
  if (!isTaskType(type)) {
    throw new RangeError(
      `Expected a task type of lower-case dot-separated words such as \`email.inbox.check\`, got \`${type}\``,
    );
  }
}

/**
 * The name a task gets when it goes back to pending/: ready at `readyAtMs`, but always strictly later than its
 * current name. So a name enters active/ at most once, and a process acting on what it read a moment ago about
 * active/x can never rename a later claim of the same task: that claim lives under another name.
 */
export function requeuedTaskName(name: TaskName, readyAtMs: number): { name: TaskName; fileName: string } {
  const next = { ...name, readyAtMs: Math.max(Math.floor(readyAtMs), name.readyAtMs + 1) };
  return { name: next, fileName: encodeTaskName(next) };
}

/** The part of a name that identifies a task in any state: `_{id}--`. */
export function idMarker(id: string): string {
  return `_${id}--`;
}

/**
 * Whether `fileName` holds a later version of its task than `otherFileName` (two files of one id, which only a power
 * cut or a hand copy leaves): every return to pending/ takes a strictly later ready time, so the later ready time is
 * the later version; equal ones are told apart by name, so every process picks the same file.
 */
export function isLaterVersion(fileName: string, name: TaskName, otherFileName: string, other: TaskName): boolean {
  if (name.readyAtMs !== other.readyAtMs) return name.readyAtMs > other.readyAtMs;
  return fileName > otherFileName;
}

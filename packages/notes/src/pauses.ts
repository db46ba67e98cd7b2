import type { FrontmatterData } from './frontmatter.ts';
import { BrokenNoteError, type Note, type NoteStore } from './note-store.ts';

/**
 * What can be paused: an integration instance (its schedule does not fire and its queued tasks wait), one automation
 * rule (`instance/platform/rule name`: it does not match), or one schedule (the scheduler does not fire it).
 */
export type PauseKind = 'instance' | 'rule' | 'schedule';

export const pauseKinds: readonly PauseKind[] = ['instance', 'rule', 'schedule'];

/** One paused thing, as the note records it. Everything but the name may be missing from a hand-written entry. */
export interface PauseEntry {
  kind: PauseKind;
  name: string;
  /** Who paused it: `cli`, `api`, `dashboard`, or whatever the owner wrote. */
  by?: string;
  /** When, as written (an ISO time when Assistant wrote it). */
  at?: string;
  reason?: string;
}

/** The pause note as read: what is paused, and what in it could not be understood (each skipped, not fatal). */
export interface PauseState {
  entries: PauseEntry[];
  /** Entries or keys that could not be read, each saying where and what; they pause nothing. */
  problems: string[];
  /**
   * Set when the note's frontmatter does not parse: `system/paused.md:3:5: …`. Nothing is known to be paused then;
   * the note is left as it is, and pausing or resuming is refused until it is fixed.
   */
  broken?: string;
}

/** Where the pause note lives, relative to the notes root. */
export const pauseNotePath = 'system/paused.md';

/** The frontmatter key that holds each kind's entries. */
const sectionOf: Record<PauseKind, string> = { instance: 'instances', rule: 'rules', schedule: 'schedules' };

const noteBody = `# Paused

What is paused in Assistant, written by \`assistant pause\`, \`POST /api/pauses\` and the dashboard's Config page.
You may edit this file by hand: remove an entry (or set \`instances: {}\`) to resume it, or add one as
\`name: {reason: why}\`; the server and the worker read it again before every scheduled run and every task.

- \`instances\`: an integration instance: its schedule does not fire, and its tasks wait in pending/ (they are
  looked at again every 30 seconds, and run once it is resumed).
- \`rules\`: one automation rule, as \`instance/platform/rule name\`: it is not applied to any item, and
  \`assistant automations explain\` says it is paused.
- \`schedules\`: one schedule (named like its instance): it does not fire; tasks enqueued otherwise still run.
`;

/**
 * The owner-readable note of what is paused (`system/paused.md`): frontmatter with `instances:`, `rules:` and
 * `schedules:` maps from name to `{by, at, reason}`. Read tolerantly (a bare `name:` pauses it; a malformed entry is
 * a problem, not a crash); written under the note's lock, keeping the owner's comments and order; a note whose
 * frontmatter does not parse is reported and never overwritten.
 */
export class PauseStore {
  readonly #notes: NoteStore;

  constructor(options: { notes: NoteStore }) {
    this.#notes = options.notes;
  }

  /** What is paused now. Never throws for the note's contents: a broken note comes back as `broken`. */
  async read(): Promise<PauseState> {
    let note: Note | undefined;
    try {
      note = await this.#notes.read(pauseNotePath);
    } catch (error) {
      if (error instanceof BrokenNoteError) return { entries: [], problems: [], broken: error.message };
      throw error;
    }
    return note === undefined ? { entries: [], problems: [] } : parsePauses(note.data);
  }

  /**
   * Pauses `kind` `name`, recording who, when and why; pausing what is already paused keeps the first record and
   * says so (`already`). Refused with a BrokenNoteError when the note does not parse.
   */
  async pause(options: {
    kind: PauseKind;
    name: string;
    by: string;
    reason?: string | undefined;
    nowMs?: number;
  }): Promise<{ entry: PauseEntry; already: boolean }> {
    const entry: PauseEntry = {
      kind: options.kind,
      name: options.name,
      by: options.by,
      at: new Date(options.nowMs ?? Date.now()).toISOString(),
      ...(options.reason ? { reason: options.reason } : {}),
    };
    let already: PauseEntry | undefined;
    await this.#change((data) => {
      const state = parsePauses(data);
      already = state.entries.find((found) => found.kind === options.kind && found.name === options.name);
      if (already) return undefined;
      const section = sectionMap(data[sectionOf[options.kind]]);
      const record: FrontmatterData = { by: entry.by ?? '', at: entry.at ?? '' };
      if (entry.reason) record.reason = entry.reason;
      return { [sectionOf[options.kind]]: { ...section, [options.name]: record } };
    });
    return already ? { entry: already, already: true } : { entry, already: false };
  }

  /** Resumes `kind` `name`: its entry is removed. The entry removed, or undefined when it was not paused. */
  async resume(options: { kind: PauseKind; name: string }): Promise<PauseEntry | undefined> {
    let removed: PauseEntry | undefined;
    await this.#change((data) => {
      removed = parsePauses(data).entries.find((found) => found.kind === options.kind && found.name === options.name);
      if (!removed) return undefined;
      const raw = data[sectionOf[options.kind]];
      // A list of names (a hand-written form) stays a list; a map loses the key.
      if (Array.isArray(raw)) {
        return { [sectionOf[options.kind]]: raw.filter((item) => item !== options.name) };
      }
      const section = { ...sectionMap(raw) };
      delete section[options.name];
      return { [sectionOf[options.kind]]: section };
    });
    return removed;
  }

  /** Applies a change to the note's frontmatter under its lock, creating the note with its explanation when missing. */
  async #change(decide: (data: FrontmatterData) => FrontmatterData | undefined): Promise<void> {
    const existing = await this.#notes.read(pauseNotePath);
    if (existing === undefined) {
      const set = decide({});
      if (set === undefined) return;
      try {
        await this.#notes.create(pauseNotePath, {
          data: { instances: {}, rules: {}, schedules: {}, ...set },
          body: noteBody,
        });
        return;
      } catch (error) {
        // Another writer created it meanwhile: fall through to the update, under the lock.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    await this.#notes.update(pauseNotePath, { change: (current) => ({ set: decide(current.data) ?? {} }) });
  }
}

function sectionMap(value: unknown): Record<string, unknown> {
  if (Array.isArray(value))
    return Object.fromEntries(value.filter((item) => typeof item === 'string').map((name) => [name, null]));
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {};
}

/**
 * The entries of a pause note's frontmatter. Each section is a map from name to a record (or to nothing, for a bare
 * `name:`), or a list of names; anything else is a problem and pauses nothing.
 */
export function parsePauses(data: FrontmatterData): PauseState {
  const entries: PauseEntry[] = [];
  const problems: string[] = [];
  for (const kind of pauseKinds) {
    const key = sectionOf[kind];
    const section = data[key];
    if (section === undefined || section === null) continue;
    if (Array.isArray(section)) {
      for (const item of section) {
        if (typeof item === 'string' && item !== '') entries.push({ kind, name: item });
        else problems.push(`${pauseNotePath}: \`${key}\` lists ${JSON.stringify(item)}, which is not a name`);
      }
      continue;
    }
    if (typeof section !== 'object') {
      problems.push(`${pauseNotePath}: \`${key}\` should be a map of names, got ${JSON.stringify(section)}`);
      continue;
    }
    for (const [name, record] of Object.entries(section as Record<string, unknown>)) {
      if (record === null || record === undefined || record === true) {
        entries.push({ kind, name });
        continue;
      }
      if (typeof record !== 'object' || Array.isArray(record)) {
        // `name: on holiday` is read as the reason: what the owner obviously meant.
        if (typeof record === 'string') entries.push({ kind, name, reason: record });
        else
          problems.push(
            `${pauseNotePath}: \`${key}.${name}\` should be {by, at, reason}, got ${JSON.stringify(record)}`,
          );
        continue;
      }
      const fields = record as Record<string, unknown>;
      const text = (field: string) => {
        const value = fields[field];
        return typeof value === 'string' && value !== ''
          ? value
          : value instanceof Date
            ? value.toISOString()
            : undefined;
      };
      const by = text('by');
      const at = text('at');
      const reason = text('reason');
      entries.push({
        kind,
        name,
        ...(by === undefined ? {} : { by }),
        ...(at === undefined ? {} : { at }),
        ...(reason === undefined ? {} : { reason }),
      });
    }
  }
  return { entries, problems };
}

/** The entry pausing `kind` `name`, if any. */
export function findPause(state: PauseState, kind: PauseKind, name: string): PauseEntry | undefined {
  return state.entries.find((entry) => entry.kind === kind && entry.name === name);
}

/** `paused by cli at 2026-11-28T10:00:00.000Z: on holiday`, for logs, explain and error messages. */
export function describePause(entry: PauseEntry): string {
  return `paused${entry.by ? ` by ${entry.by}` : ''}${entry.at ? ` at ${entry.at}` : ''}${entry.reason ? `: ${entry.reason}` : ''}`;
}

/** A rule's name in the pause note: `instance/platform/rule name` (`automation N` for a rule without a name). */
export function rulePauseName(options: { instance: string; platform: string; rule: string }): string {
  return `${options.instance}/${options.platform}/${options.rule}`;
}

/** For `evaluateRules`' `paused`: why a rule of `instance`'s `platform` is paused, or undefined. */
export function pausedRules(
  state: PauseState,
  options: { instance: string; platform: string },
): (rule: { name: string }) => string | undefined {
  return (rule) => {
    const entry = findPause(state, 'rule', rulePauseName({ ...options, rule: rule.name }));
    return entry ? describePause(entry) : undefined;
  };
}

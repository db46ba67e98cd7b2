import { createHash } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { SlackEnvelope, SlackInbound, SlackReceived } from './slack-adapter.ts';

/**
 * The Events API's spool (events mode, decision 0072): the webhook handler writes each event it verified into
 * `data/chat/slack/<instance>.events/` (durably, before Slack gets its 200), the listener's adapter reads the folder
 * in order and removes a file once the runner stored its event. A file is named by the event's own key (its
 * `event_id`, or a press's user and `action_ts`), so a Slack retry of an event still in the spool writes nothing; one
 * handled already is spooled again and found stored by its message id (the chat inbox's client id).
 */
export function spoolFolder(dataDir: string, instance: string): string {
  return path.join(dataDir, 'chat', 'slack', `${instance}.events`);
}

/** In-process wake-ups: the webhook and the listener run in the same server, so a spooled event is read at once. */
const waiters = new Map<string, Set<() => void>>();

/** Orders events spooled in the same millisecond by this process. */
let sequence = 0;

interface SpoolFile {
  received: number;
  sequence?: number;
  envelope: SlackEnvelope;
}

/** Writes an envelope into the spool unless one of the same key is there; true when it was new. */
export async function spoolEnvelope(folder: string, key: string, envelope: SlackEnvelope): Promise<boolean> {
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const name = `${createHash('sha256').update(key).digest('hex').slice(0, 32)}.json`;
  const file = path.join(folder, name);
  const temporary = path.join(folder, `.${name}.${process.pid}.${Date.now()}.tmp`);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(
      `${JSON.stringify({ received: Date.now(), sequence: ++sequence, envelope } satisfies SpoolFile)}\n`,
    );
    await handle.sync();
  } finally {
    await handle.close();
  }
  let fresh = true;
  try {
    // A retry while the first delivery waits in the spool keeps the first (and its place in the order).
    await readFile(file);
    fresh = false;
    await unlink(temporary);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await rename(temporary, file);
  }
  for (const wake of waiters.get(folder) ?? []) wake();
  return fresh;
}

/** The listener's side of the spool: the oldest events first, each removed once the runner stored it. */
export class SlackSpoolInbound implements SlackInbound {
  readonly #folder: string;
  /** How often the folder is read when no wake-up came (a spool written by another process). */
  readonly #pollMs: number;

  constructor(options: { folder: string; pollMs?: number }) {
    this.#folder = options.folder;
    this.#pollMs = options.pollMs ?? 1_000;
  }

  async next(signal: AbortSignal): Promise<SlackReceived[]> {
    const found = await this.#read();
    if (found.length > 0 || signal.aborted) return found;
    await new Promise<void>((resolve) => {
      const set = waiters.get(this.#folder) ?? new Set();
      waiters.set(this.#folder, set);
      const done = () => {
        clearTimeout(timer);
        set.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, this.#pollMs);
      set.add(done);
      signal.addEventListener('abort', done, { once: true });
    });
    return this.#read();
  }

  async #read(): Promise<SlackReceived[]> {
    let names: string[];
    try {
      names = (await readdir(this.#folder)).filter((name) => name.endsWith('.json') && !name.startsWith('.'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    const files: (SpoolFile & { file: string })[] = [];
    for (const name of names) {
      const file = path.join(this.#folder, name);
      try {
        const parsed = JSON.parse(await readFile(file, 'utf8')) as SpoolFile;
        files.push({ ...parsed, file });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        // A file that is not JSON was not written by the webhook (it renames whole files): set aside, not lost.
        await rename(file, `${file}.unreadable`).catch(() => {});
      }
    }
    files.sort(
      (a, b) => a.received - b.received || (a.sequence ?? 0) - (b.sequence ?? 0) || a.file.localeCompare(b.file),
    );
    return files.slice(0, 50).map((one) => ({
      envelope: one.envelope,
      acknowledge: async () => {
        await unlink(one.file).catch((error: NodeJS.ErrnoException) => {
          if (error.code !== 'ENOENT') throw error;
        });
      },
    }));
  }

  async close(): Promise<void> {}
}

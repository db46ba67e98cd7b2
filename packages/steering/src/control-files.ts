import { randomBytes } from 'node:crypto';
import { watch } from 'node:fs';
import { appendFile, mkdir, open, readdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { scrubSecrets } from '@assistant/errors';
import * as z from 'zod';

/**
 * Steering through files, so the server and the CLI steer work that runs in the worker, across processes and across
 * a worker restart. Per task, under `data/control/<task-id>/`:
 * - `requests/<time>-<sequence>-<random>.json`: one steering request each, written atomically; names sort in the
 *   order they were made, and the worker applies them in that order.
 * - `outcomes/<request-id>.json`: what became of each request (applied, refused, and the answer to an `ask`).
 * - `events.jsonl`: notifications, clarifications, steps and steering as they happen, one JSON object per line.
 */
export const steeringActions = ['pause', 'resume', 'stop', 'interject', 'ask', 'answer'] as const;
export type SteeringAction = (typeof steeringActions)[number];

export const steeringRequestSchema = z
  .strictObject({
    id: z.string(),
    action: z.enum(steeringActions),
    message: z.string().max(20_000).optional(),
    reason: z.string().max(2_000).optional(),
    clarification_id: z.string().optional(),
    created_at: z.string(),
    source: z.string(),
  })
  .superRefine((request, context) => {
    const needsMessage = request.action === 'interject' || request.action === 'ask' || request.action === 'answer';
    if (needsMessage && !request.message) {
      context.addIssue({ code: 'custom', path: ['message'], message: `\`${request.action}\` needs a message` });
    }
    if (request.action === 'answer' && !request.clarification_id) {
      context.addIssue({ code: 'custom', path: ['clarification_id'], message: '`answer` needs the clarification id' });
    }
  });
export type SteeringRequest = z.infer<typeof steeringRequestSchema>;

const steeringOutcomeSchema = z.looseObject({
  request_id: z.string(),
  status: z.enum(['applied', 'refused']),
  message: z.string().optional(),
  answer: z.string().optional(),
  at: z.string(),
});
export type SteeringOutcome = z.infer<typeof steeringOutcomeSchema>;

/** One line of `events.jsonl`. */
export interface ControlEvent {
  type: string;
  at: string;
  lineage?: readonly string[];
  [key: string]: unknown;
}

let sequence = 0;

export class ControlFiles {
  readonly directory: string;

  constructor(options: { root: string; taskId: string }) {
    if (!/^[0-9a-z]{26}$/.test(options.taskId)) throw new Error(`not a task id: ${options.taskId}`);
    this.directory = path.join(options.root, options.taskId);
  }

  get requestsDirectory(): string {
    return path.join(this.directory, 'requests');
  }

  get outcomesDirectory(): string {
    return path.join(this.directory, 'outcomes');
  }

  get eventsFile(): string {
    return path.join(this.directory, 'events.jsonl');
  }

  /** Writes a request (temp file, then rename, so the worker never reads half of one); returns it with its id. */
  async request(request: Omit<SteeringRequest, 'id' | 'created_at'>): Promise<SteeringRequest> {
    const now = Date.now();
    sequence = (sequence + 1) % 1_000_000;
    const id = `${String(now).padStart(14, '0')}-${String(sequence).padStart(6, '0')}-${randomBytes(4).toString('hex')}`;
    const full = steeringRequestSchema.parse({ ...request, id, created_at: new Date(now).toISOString() });
    await mkdir(this.requestsDirectory, { recursive: true, mode: 0o700 });
    await atomicWrite(path.join(this.requestsDirectory, `${id}.json`), `${JSON.stringify(full, null, 2)}\n`);
    return full;
  }

  /** Requests not yet applied, in the order they were made. Unreadable files come back as refusals to write. */
  async pending(): Promise<{ request?: SteeringRequest; file: string; problem?: string }[]> {
    let names: string[];
    try {
      names = (await readdir(this.requestsDirectory)).filter((name) => name.endsWith('.json')).sort();
    } catch {
      return [];
    }
    const found = [];
    for (const name of names) {
      const file = path.join(this.requestsDirectory, name);
      try {
        const parsed = steeringRequestSchema.safeParse(JSON.parse(await readFile(file, 'utf8')));
        found.push(
          parsed.success
            ? { request: parsed.data, file }
            : { file, problem: parsed.error.issues[0]?.message ?? 'invalid' },
        );
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
        found.push({ file, problem: `not JSON: ${(error as Error).message}` });
      }
    }
    return found;
  }

  /** Records what became of a request and removes the request: outcome first, so nothing is applied twice. */
  async settle(requestFile: string, outcome: Omit<SteeringOutcome, 'at'>): Promise<void> {
    await mkdir(this.outcomesDirectory, { recursive: true, mode: 0o700 });
    const full = { ...outcome, at: new Date().toISOString() };
    await atomicWrite(
      path.join(this.outcomesDirectory, `${outcome.request_id}.json`),
      `${JSON.stringify(full, null, 2)}\n`,
    );
    await unlink(requestFile).catch(() => {});
  }

  async outcome(requestId: string): Promise<SteeringOutcome | undefined> {
    try {
      const parsed = steeringOutcomeSchema.safeParse(
        JSON.parse(await readFile(path.join(this.outcomesDirectory, `${requestId}.json`), 'utf8')),
      );
      return parsed.success ? parsed.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** Waits for a request's outcome (watching the folder, polling as a fallback), up to `timeoutMs`. */
  async waitForOutcome(
    requestId: string,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<SteeringOutcome | undefined> {
    await mkdir(this.outcomesDirectory, { recursive: true, mode: 0o700 });
    const deadline = Date.now() + options.timeoutMs;
    let wake: (() => void) | undefined;
    let watcher: ReturnType<typeof watch> | undefined;
    try {
      watcher = watch(this.outcomesDirectory, () => wake?.());
      watcher.on('error', () => {});
    } catch {
      // Polling below still finds it.
    }
    try {
      while (Date.now() < deadline && !options.signal?.aborted) {
        const outcome = await this.outcome(requestId);
        if (outcome) return outcome;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 100);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
      return await this.outcome(requestId);
    } finally {
      watcher?.close();
    }
  }

  /** Appends an event line; O_APPEND keeps concurrent writers' lines whole. */
  async event(event: Omit<ControlEvent, 'at'> & { at?: string }): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    // Events carry error messages and results: an LLM error that echoes the token must not reach the file (or SSE).
    await appendFile(this.eventsFile, `${scrubSecrets(JSON.stringify({ at: new Date().toISOString(), ...event }))}\n`, {
      mode: 0o600,
    });
  }

  /**
   * Events from byte `offset` on, each with the offset just after its line (a resume point, the SSE event id), and
   * the offset after the last complete line.
   */
  async eventsFrom(offset: number): Promise<{ events: (ControlEvent & { offset: number })[]; offset: number }> {
    let handle: Awaited<ReturnType<typeof open>> | undefined;
    try {
      handle = await open(this.eventsFile, 'r');
      const { size } = await handle.stat();
      if (size <= offset) return { events: [], offset };
      const buffer = Buffer.alloc(size - offset);
      await handle.read(buffer, 0, buffer.length, offset);
      const text = buffer.toString('utf8');
      const end = text.lastIndexOf('\n') + 1;
      const events: (ControlEvent & { offset: number })[] = [];
      let position = offset;
      for (const line of text.slice(0, end).split('\n').slice(0, -1)) {
        position += Buffer.byteLength(line) + 1;
        if (line.trim() === '') continue;
        try {
          events.push({ ...(JSON.parse(line) as ControlEvent), offset: position });
        } catch {
          // A line a crashed writer left half-written: skip it, keep reading.
        }
      }
      return { events, offset: offset + Buffer.byteLength(text.slice(0, end)) };
    } catch {
      return { events: [], offset };
    } finally {
      await handle?.close();
    }
  }

  async exists(): Promise<boolean> {
    return (await stat(this.directory).catch(() => undefined))?.isDirectory() ?? false;
  }
}

async function atomicWrite(file: string, text: string): Promise<void> {
  const temporary = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  // 0o600: steering messages and answers are the owner's words about their mail and work.
  await writeFile(temporary, scrubSecrets(text), { mode: 0o600 });
  await rename(temporary, file);
}

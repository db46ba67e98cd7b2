import { watch } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { AssistantError } from '@assistant/errors';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { listenForShutdown } from '../listen-for-shutdown.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface LogCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** `YYYY-MM-DD`. @default today */
  date?: string;
  follow?: boolean;
}

function today(): string {
  const now = new Date();
  const pad = (value: number) => String(value).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

/** `assistant log [--date D] [--follow]`: the human log of a day; `--follow` keeps printing new lines. */
export async function logCommand(options: LogCommandOptions): Promise<void> {
  const date = options.date ?? today();
  if (!/^\d{4}-\d\d-\d\d$/.test(date)) {
    throw new AssistantError('USAGE', `--date must look like 2026-11-22, got \`${date}\``);
  }
  const { config } = await loadCliConfig(options);
  const file = path.join(config.paths.logs, `${date}.md`);
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (!options.follow) {
      options.context.stderr.write(`no log for ${date} yet (${file})\n`);
      return;
    }
  }
  options.context.stdout.write(text);
  if (options.follow) await follow(file, Buffer.byteLength(text), options.context);
}

/** Prints what is appended to `file` from `offset` on, until SIGINT or SIGTERM. */
async function follow(file: string, offset: number, context: CliContext): Promise<void> {
  let position = offset;
  let reading = Promise.resolve();
  const readMore = () => {
    reading = reading.then(async () => {
      const handle = await open(file, 'r').catch(() => undefined);
      if (!handle) return;
      try {
        const { size } = await handle.stat();
        if (size <= position) return;
        const buffer = Buffer.alloc(size - position);
        await handle.read(buffer, 0, buffer.length, position);
        // Only whole lines: a writer's line arrives in one write, but a read can land between two.
        const end = buffer.lastIndexOf(10) + 1;
        if (end === 0) return;
        context.stdout.write(buffer.subarray(0, end).toString('utf8'));
        position += end;
      } finally {
        await handle.close();
      }
    });
  };
  // Watch the folder, not the file: the day's file may not exist yet.
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const watcher = watch(path.dirname(file), (_event, name) => {
    if (name === path.basename(file)) readMore();
  });
  const shutdown = listenForShutdown();
  try {
    readMore();
    await new Promise<void>((resolve) => shutdown.signal.addEventListener('abort', () => resolve(), { once: true }));
  } finally {
    watcher.close();
    shutdown[Symbol.dispose]();
    await reading;
  }
}

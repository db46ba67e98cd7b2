import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDuration } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import {
  isTaskType,
  type JsonValue,
  jsonTextNestingDepth,
  jsonValueSchema,
  maxTaskNestingDepth,
} from '@assistant/queue';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { openCliRuntime, writeJson } from '../open-cli-queue.ts';

export interface EnqueueCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  type: string;
  /** JSON text, or `@file` to read JSON from a file. */
  payload?: string;
  priority?: string;
  /** A duration: the task becomes ready that much later. */
  delay?: string;
  json?: boolean;
}

/** Adds a task by hand: source `cli`, so dedup and rate limits do not apply. Prints the new task's id. */
export async function enqueueCommand(options: EnqueueCommandOptions): Promise<void> {
  const { context } = options;
  if (!isTaskType(options.type)) {
    throw new AssistantError('USAGE', `task type \`${options.type}\` is not lower-case dot-separated words`, {
      hint: 'task types look like system.echo or email.inbox.check',
    });
  }
  const priority = options.priority === undefined ? 5 : Number(options.priority);
  if (!/^[0-9]$/.test(options.priority ?? '5')) {
    throw new AssistantError('USAGE', `--priority must be a digit 0-9, got \`${options.priority}\``, {
      hint: 'lower runs first: 1 chat, 3 discovery, 5 default, 7 act, 9 low',
    });
  }
  let delayMs = 0;
  if (options.delay !== undefined) {
    const parsed = parseDuration(options.delay);
    if (parsed === undefined) {
      throw new AssistantError('USAGE', `--delay \`${options.delay}\` is not a duration`, {
        hint: 'e.g. 30s, 10m, 2h, 1d',
      });
    }
    delayMs = parsed;
  }
  const payload = await readPayload(options.payload, context);
  const { queue, registry } = await openCliRuntime(options);
  if (!registry.taskType(options.type)) {
    // A worker would fail it with "no handler"; better to say so now, with what does exist.
    const known = registry.taskTypes().map((info) => info.type);
    throw new AssistantError('USAGE', `no integration handles task type \`${options.type}\``, {
      hint: `known task types: ${known.join(', ')}`,
    });
  }
  const outcome = await queue.enqueue({
    type: options.type,
    payload,
    priority,
    readyAtMs: Date.now() + delayMs,
    source: 'cli',
  });
  if (outcome.status !== 'enqueued') throw new Error(`unexpected ${outcome.status}: manual enqueues bypass policies`);
  if (options.json) {
    writeJson(context, { id: outcome.task.id, state: 'pending', path: outcome.location, task: outcome.task });
  } else {
    context.stdout.write(`${outcome.task.id}\n`);
  }
}

async function readPayload(text: string | undefined, context: CliContext): Promise<JsonValue> {
  if (text === undefined) return null;
  let source = text;
  let where = '--payload';
  if (text.startsWith('@')) {
    const file = path.resolve(context.cwd, text.slice(1));
    where = file;
    try {
      source = await readFile(file, 'utf8');
    } catch (error) {
      throw new AssistantError('USAGE', `cannot read the payload file ${file}: ${(error as Error).message}`);
    }
  }
  // Measured on the text, before parsing: the same limit the queue enforces, said before any work is done.
  if (jsonTextNestingDepth(source, maxTaskNestingDepth) > maxTaskNestingDepth) {
    throw new AssistantError(
      'USAGE',
      `${where} is nested more than ${maxTaskNestingDepth} levels deep; the limit is ${maxTaskNestingDepth} (maxTaskNestingDepth)`,
      { hint: 'flatten the payload, or store deep content in a note and put its path in the payload' },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(source);
  } catch (error) {
    throw new AssistantError('USAGE', `${where} is not valid JSON: ${(error as Error).message}`, {
      hint: `quote it for the shell: --payload '{"text": "hello"}', or pass @file.json`,
    });
  }
  const checked = jsonValueSchema.safeParse(parsed);
  if (!checked.success) {
    // JSON.parse's output is JSON data except for numbers such as 1e999, which it reads as Infinity.
    throw new AssistantError('USAGE', `${where} holds a number too large for JSON (it reads as Infinity)`, {
      hint: 'write very large numbers as strings',
    });
  }
  return checked.data;
}

import { AssistantError } from '@assistant/errors';
import { Document, LineCounter, parseDocument, Scalar, visit } from 'yaml';
import * as z from 'zod';
import { maxTaskNestingDepth, valueNestingDepth, yamlTextNesting } from './input-limits.ts';
import { readTaskYamlFast, writeTaskYamlFast } from './internal/task-yaml-fast.ts';
import { taskIdPattern } from './task-id.ts';
import { decodeTaskName, type TaskName } from './task-name.ts';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/**
 * How a task came to be: manual triggers (api, cli) bypass policies; scheduler and automation go through them. `chat`:
 * a chat model's tool asked for it (a workflow run started from a conversation), so its input is not the owner's own
 * words.
 */
export const taskSources = ['api', 'cli', 'scheduler', 'automation', 'retry', 'file', 'chat'] as const;
export type TaskSource = (typeof taskSources)[number];

export interface TaskError {
  /** The error's class name, e.g. `RetryableError`, `TypeError`, `WorkerDied`. */
  type: string;
  message: string;
  stack?: string | undefined;
}

export interface TaskOwner {
  /** The worker's id: `{host}-{pid}-{random}`. */
  id: string;
  pid: number;
  host: string;
}

/** One finished-with-an-error attempt, kept so a task that finally fails shows everything that went wrong. */
export interface TaskAttempt {
  attempt: number;
  startedAt: string;
  finishedAt: string;
  worker?: string;
  error: TaskError;
}

/** A task as its YAML file holds it (camelCase here, snake_case on disk). Times are ISO 8601 strings. */
export interface Task {
  id: string;
  type: string;
  priority: number;
  createdAt: string;
  readyAt: string;
  source: TaskSource;
  integration?: string;
  payload: JsonValue;
  /** Attempts started so far (a claim counts one). */
  attempts: number;
  maxAttempts: number;
  onResult?: JsonValue;
  startedAt?: string;
  finishedAt?: string;
  worker?: TaskOwner;
  result?: JsonValue;
  error?: TaskError;
  history: TaskAttempt[];
}

/** Plain JSON data: what payloads and results may hold. */
export const jsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.string(),
    z.number().refine(Number.isFinite, { error: 'numbers must be finite' }),
    z.boolean(),
    z.null(),
    z.array(jsonValueSchema),
    z.record(z.string(), jsonValueSchema),
  ]),
);
const isoTime = z.iso.datetime({ offset: true });
const taskErrorSchema = z.strictObject({ type: z.string(), message: z.string(), stack: z.string().optional() });

const taskFileSchema = z.strictObject({
  id: z.string().regex(taskIdPattern, { error: 'expected the 26-character id from the file name' }).optional(),
  type: z.string().optional(),
  priority: z.int().min(0).max(9).optional(),
  created_at: isoTime.optional(),
  ready_at: isoTime.optional(),
  source: z.enum(taskSources).optional(),
  integration: z.string().optional(),
  payload: jsonValueSchema.optional(),
  attempts: z.int().min(0).optional(),
  max_attempts: z.int().min(1).max(100).optional(),
  on_result: jsonValueSchema.optional(),
  started_at: isoTime.optional(),
  finished_at: isoTime.optional(),
  worker: z.strictObject({ id: z.string(), pid: z.int(), host: z.string() }).optional(),
  result: jsonValueSchema.optional(),
  error: taskErrorSchema.optional(),
  history: z
    .array(
      z.strictObject({
        attempt: z.int().min(1),
        started_at: isoTime,
        finished_at: isoTime,
        worker: z.string().optional(),
        error: taskErrorSchema,
      }),
    )
    .optional(),
});

/** A task file that cannot be read as a task: the reason goes beside it in failed/. */
export class TaskFileError extends Error {
  override name = 'TaskFileError';
}

export interface ParseTaskFileOptions {
  /** The file name, whose fields win over the content's: renaming a file re-prioritises or reschedules it. */
  name: TaskName;
  /** Used when a hand-written file says nothing about attempts. */
  defaultMaxAttempts: number;
  /** Refuse files larger than this many bytes. @default 1 MiB */
  maxBytes?: number;
  /** Used when a hand-written file has no `created_at`. @default the time in the id */
  createdAtMs?: number;
}

/**
 * Reads a task file. Hand-written files may leave out everything the name already says (id, type, priority,
 * ready time) and everything with a default; what they do say must agree with the name and the schema.
 */
export function parseTaskFile(text: string, options: ParseTaskFileOptions): Task {
  const maxBytes = options.maxBytes ?? 1_048_576;
  const bytes = Buffer.byteLength(text);
  if (bytes > maxBytes) {
    throw new TaskFileError(`file is ${bytes} bytes; the limit is ${maxBytes} (queue.max_task_bytes)`);
  }
  // The hot path: a file as stringifyTask writes an ordinary task, read without the YAML library (same data, far
  // less CPU). Anything else, hand edits and problems included, is read the slow way below.
  const fast = readTaskYamlFast(text);
  const parsed = taskFileSchema.safeParse(fast ?? readTaskYaml(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : '';
    throw new TaskFileError(`${where}${issue?.message ?? 'not a task'}`);
  }
  return taskOf(parsed.data, options);
}

/** A task file's text as data, with the YAML library and every limit on what it may hold. */
function readTaskYaml(text: string): unknown {
  // Measured before parsing: the parser, the conversion to JS and zod all recurse, and a 200 000-deep sequence
  // cost them a quarter of a gigabyte before it was refused. One level more than a payload may have: the file's own
  // mapping holds the payload (and result, on_result) one level down.
  const { depth, hasAlias } = yamlTextNesting(text, maxTaskFileNestingDepth);
  if (depth > maxTaskFileNestingDepth) throw nestedTooDeep('');
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { uniqueKeys: true, prettyErrors: false, lineCounter });
  // Warnings too: an unknown tag such as `!secret` means nothing in a task file, and would silently become text.
  const problem = document.errors[0] ?? document.warnings[0];
  if (problem) {
    const { line, col } = lineCounter.linePos(problem.pos[0]);
    throw new TaskFileError(`YAML syntax at line ${line}, column ${col}: ${firstLine(problem.message)}`);
  }
  // maxAliasCount refuses alias bombs (a few lines that expand to gigabytes) before they are expanded.
  let data: unknown;
  try {
    data = document.toJS({ maxAliasCount: 100 }) ?? {};
  } catch (error) {
    throw new TaskFileError(`YAML: ${firstLine(error instanceof Error ? error.message : String(error))}`);
  }
  // Aliases can nest a collection inside another without the text showing it: measured again, before zod. Without
  // an alias the pre-scan's bound holds for the parsed value, and the walk is skipped.
  if (hasAlias && valueNestingDepth(data, maxTaskFileNestingDepth) > maxTaskFileNestingDepth) {
    throw nestedTooDeep(' through aliases');
  }
  return data;
}

/** The task a checked file describes, its name's fields winning. */
function taskOf(file: z.infer<typeof taskFileSchema>, options: ParseTaskFileOptions): Task {
  const { name } = options;
  if (file.id !== undefined && file.id !== name.id) {
    throw new TaskFileError(`id: the file says \`${file.id}\` but its name says \`${name.id}\``);
  }
  if (file.type !== undefined && file.type !== name.type) {
    throw new TaskFileError(`type: the file says \`${file.type}\` but its name says \`${name.type}\``);
  }
  const task: Task = {
    id: name.id,
    type: name.type,
    priority: name.priority,
    createdAt: file.created_at ?? new Date(options.createdAtMs ?? Date.now()).toISOString(),
    readyAt: new Date(name.readyAtMs).toISOString(),
    source: file.source ?? 'file',
    payload: file.payload ?? null,
    attempts: file.attempts ?? 0,
    maxAttempts: file.max_attempts ?? options.defaultMaxAttempts,
    history: (file.history ?? []).map((entry) => ({
      attempt: entry.attempt,
      startedAt: entry.started_at,
      finishedAt: entry.finished_at,
      ...(entry.worker === undefined ? {} : { worker: entry.worker }),
      error: entry.error,
    })),
  };
  if (file.integration !== undefined) task.integration = file.integration;
  if (file.on_result !== undefined) task.onResult = file.on_result;
  if (file.started_at !== undefined) task.startedAt = file.started_at;
  if (file.finished_at !== undefined) task.finishedAt = file.finished_at;
  if (file.worker !== undefined) task.worker = file.worker;
  if (file.result !== undefined) task.result = file.result;
  if (file.error !== undefined) task.error = file.error;
  return task;
}

/**
 * A task as its file holds it: snake_case keys, absent fields left out. The REST API answers with the same shape.
 * Written as given: results and errors are scrubbed of every loaded secret where they enter a Task (the consumer's
 * `complete` and `toTaskError`), so rewriting a task (each claim, each retry) does not rescan its history. The
 * payload is never scrubbed, since its fingerprint names the file.
 */
export function taskFileData(task: Task): Record<string, unknown> {
  const file: Record<string, unknown> = {
    id: task.id,
    type: task.type,
    priority: task.priority,
    created_at: task.createdAt,
    ready_at: task.readyAt,
    source: task.source,
    integration: task.integration,
    payload: task.payload,
    attempts: task.attempts,
    max_attempts: task.maxAttempts,
    on_result: task.onResult,
    started_at: task.startedAt,
    finished_at: task.finishedAt,
    worker: task.worker,
    result: task.result,
    error: task.error,
    history:
      task.history.length === 0
        ? undefined
        : task.history.map((entry) => ({
            attempt: entry.attempt,
            started_at: entry.startedAt,
            finished_at: entry.finishedAt,
            worker: entry.worker,
            error: entry.error,
          })),
  };
  for (const key of Object.keys(file)) if (file[key] === undefined) delete file[key];
  return file;
}

/** The YAML text of a task, keys in a fixed order that reads top to bottom like the task's life. */
export function stringifyTask(task: Task): string {
  const data = taskFileData(task);
  // The hot path: the same bytes as below for an ordinary task, without building the library's document.
  const fast = writeTaskYamlFast(data);
  if (fast !== undefined) return fast;
  // No aliases: they would make hand edits confusing.
  const document = new Document(data, { aliasDuplicateObjects: false });
  visit(document, {
    Scalar(_key, node) {
      if (typeof node.value === 'string' && blockScalarLosesIt(node.value)) node.type = Scalar.QUOTE_DOUBLE;
    },
  });
  // No line folding: a payload string must come back byte for byte.
  return document.toString({ lineWidth: 0 });
}

/**
 * The `yaml` writer puts multi-line strings in block scalars (`|`), but without the indentation indicator that a
 * block needs when its first non-blank line is preceded by lines holding only spaces or tabs: `" \n"` came back as
 * `"\n"`, and `" \n\t\n"` did not parse at all, so a task that enqueue accepted was quarantined by the worker.
 * Those strings are written double-quoted instead.
 */
function blockScalarLosesIt(text: string): boolean {
  if (!text.includes('\n')) return false;
  const lines = text.split('\n');
  const firstContent = lines.findIndex((line) => line.trim() !== '');
  if (firstContent === -1) return true;
  return lines.slice(0, firstContent).some((line) => line.length > 0);
}

/** The deepest a task file may nest: a payload's limit plus the file's own top-level mapping. */
export const maxTaskFileNestingDepth = maxTaskNestingDepth + 1;

function nestedTooDeep(how: string): TaskFileError {
  return new TaskFileError(
    `nested more than ${maxTaskFileNestingDepth} levels deep${how}; the limit is ${maxTaskFileNestingDepth} for a task file, ${maxTaskNestingDepth} for its payload (maxTaskNestingDepth)`,
  );
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}

/**
 * Reads a task file as the file backend would find it under `fileName` (a hand-written task, a docs example): the
 * name carries priority, ready time, id, fingerprint and type. Throws TaskFileError when the name is not a task
 * name or the text is not a task.
 */
export function parseNamedTaskFile(
  fileName: string,
  text: string,
  options: { defaultMaxAttempts?: number } = {},
): Task {
  const name = decodeTaskName(fileName);
  if (!name) {
    throw new TaskFileError(
      `${fileName} is not a task file name: expected {priority}_{YYYYMMDDTHHMMSSmmmZ}_{id}--{fingerprint}--{type}.yaml`,
    );
  }
  return parseTaskFile(text, { name, defaultMaxAttempts: options.defaultMaxAttempts ?? 3 });
}

/**
 * A task record from elsewhere (another backend, `assistant queue migrate`) checked as the worker's reader would read
 * it back from a file: BAD_REQUEST naming the task when it is not one.
 */
export function checkTaskRecord(task: Task, maxBytes?: number): Task {
  try {
    if (!taskIdPattern.test(task.id)) throw new TaskFileError(`\`${task.id}\` is not a task id`);
    const name = { priority: task.priority, readyAtMs: Date.parse(task.readyAt), id: task.id, type: task.type };
    return parseTaskFile(stringifyTask(task), {
      name: { ...name, fingerprint: '' },
      defaultMaxAttempts: task.maxAttempts,
      ...(maxBytes === undefined ? {} : { maxBytes }),
    });
  } catch (error) {
    if (!(error instanceof TaskFileError || error instanceof RangeError)) throw error;
    throw new AssistantError(
      'BAD_REQUEST',
      `task ${String(task.id)} (${String(task.type)}) is not a valid task: ${error.message}`,
    );
  }
}

import { AssistantError } from '@assistant/errors';
import { taskFingerprint } from './fingerprint.ts';
import { maxTaskNestingDepth, valueNestingDepth } from './input-limits.ts';
import type { EnqueueOptions } from './interfaces.ts';
import type { QueuePolicy } from './queue-config.ts';
import { type JsonValue, jsonValueSchema, type Task, type TaskSource } from './task-file.ts';
import { isTaskType } from './task-name.ts';

/** An enqueue's options as every backend checks them, before it looks at its store. */
export interface CheckedEnqueue {
  type: string;
  priority: number;
  /** As the worker's reader will make of it (zod drops `__proto__` keys, for one): what is fingerprinted and kept. */
  payload: JsonValue;
  onResult: JsonValue | undefined;
  source: TaskSource;
  /** The dedup key: type and canonical payload, hashed. */
  fingerprint: string;
  /** Dedup and rate limits apply: scheduler and automation enqueues, unless told otherwise. */
  usePolicies: boolean;
}

/**
 * Checks an enqueue's options (BAD_REQUEST naming what is wrong), the same for every backend: a task one backend
 * refuses, the other refuses too, and what is accepted the worker can always read back.
 */
export function checkEnqueue(options: EnqueueOptions): CheckedEnqueue {
  if (!isTaskType(options.type)) {
    throw new AssistantError(
      'BAD_REQUEST',
      `Expected a task type of lower-case dot-separated words such as \`email.inbox.check\`, got \`${options.type}\``,
    );
  }
  const priority = options.priority ?? 5;
  if (!Number.isInteger(priority) || priority < 0 || priority > 9) {
    throw new AssistantError('BAD_REQUEST', `Expected \`priority\` to be a digit 0-9, got \`${String(priority)}\``);
  }
  // Before anything that recurses (zod, the fingerprint's canonical JSON, YAML): a payload the worker could not read
  // back must never be stored.
  assertNestingDepth('payload', options.payload ?? null);
  if (options.onResult !== undefined) assertNestingDepth('on_result', options.onResult);
  const payload = checkedJson('payload', options.payload ?? null);
  const onResult = options.onResult === undefined ? undefined : checkedJson('on_result', options.onResult);
  const source = options.source ?? 'api';
  return {
    type: options.type,
    priority,
    payload,
    onResult,
    source,
    fingerprint: taskFingerprint(options.type, payload),
    usePolicies: options.policies ?? (source === 'scheduler' || source === 'automation'),
  };
}

/** A new task record, attempts not started: what an enqueue stores. */
export function newTask(
  checked: CheckedEnqueue,
  fields: { id: string; nowMs: number; readyAtMs: number; policy: QueuePolicy; integration?: string | undefined },
): Task {
  const task: Task = {
    id: fields.id,
    type: checked.type,
    priority: checked.priority,
    createdAt: new Date(fields.nowMs).toISOString(),
    readyAt: new Date(fields.readyAtMs).toISOString(),
    source: checked.source,
    payload: checked.payload,
    attempts: 0,
    maxAttempts: fields.policy.maxAttempts,
    history: [],
  };
  if (fields.integration !== undefined) task.integration = fields.integration;
  if (checked.onResult !== undefined) task.onResult = checked.onResult;
  return task;
}

function assertNestingDepth(field: string, value: unknown): void {
  const depth = valueNestingDepth(value, maxTaskNestingDepth);
  if (depth > maxTaskNestingDepth) {
    throw new AssistantError(
      'BAD_REQUEST',
      `${field} is nested more than ${maxTaskNestingDepth} levels deep; the limit is ${maxTaskNestingDepth} (maxTaskNestingDepth)`,
      { hint: 'flatten the structure, or store deep content in a note and put its path in the payload' },
    );
  }
}

function checkedJson(field: string, value: unknown): JsonValue {
  const checked = jsonValueSchema.safeParse(value);
  if (!checked.success) {
    throw new AssistantError('BAD_REQUEST', `${field} is not plain JSON data: ${checked.error.issues[0]?.message}`);
  }
  return checked.data;
}

import { jsonValueSchema, type Task, taskSources } from '@assistant/queue';
import * as z from 'zod';

const errorSchema = z.object({ type: z.string(), message: z.string(), stack: z.string().optional() });

/** A Task as this backend stores it in a BullMQ job's `data`: the same shape the file backend's YAML holds. */
const storedTaskSchema = z.object({
  id: z.string(),
  type: z.string(),
  priority: z.int().min(0).max(9),
  createdAt: z.string(),
  readyAt: z.string(),
  source: z.enum(taskSources),
  integration: z.string().optional(),
  payload: jsonValueSchema,
  attempts: z.int().min(0),
  maxAttempts: z.int().min(1),
  onResult: jsonValueSchema.optional(),
  startedAt: z.string().optional(),
  finishedAt: z.string().optional(),
  worker: z.object({ id: z.string(), pid: z.int(), host: z.string() }).optional(),
  result: jsonValueSchema.optional(),
  error: errorSchema.optional(),
  history: z.array(
    z.object({
      attempt: z.int(),
      startedAt: z.string(),
      finishedAt: z.string(),
      worker: z.string().optional(),
      error: errorSchema,
    }),
  ),
});

/** Reads a job's `data` back as a Task; a string that is not one gives `problem` (a job written by hand, say). */
export function parseStoredTask(text: string | null | undefined): { task: Task } | { problem: string } {
  if (text === null || text === undefined) return { problem: 'the job has no data' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { problem: `the job's data is not JSON: ${(error as Error).message}` };
  }
  const checked = storedTaskSchema.safeParse(value);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    return { problem: `the job's data is not a task: ${issue?.path.join('.') ?? ''} ${issue?.message ?? ''}`.trim() };
  }
  // zod leaves optional keys out when absent; the Task type's optional fields accept exactly that.
  return { task: checked.data as Task };
}

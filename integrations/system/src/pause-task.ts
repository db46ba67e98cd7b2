import { PauseStore } from '@assistant/notes';
import { type HandlerContext, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';

const payloadSchema = z.strictObject({
  integration: z.string().regex(/^[a-z][a-z0-9_-]*$/),
  reason: z.string().max(2_000).optional(),
  /** Who paused it, as `system/paused.md` records it: `hook:failures`. */
  by: z.string().min(1).max(200),
});

/**
 * `system.pause`: pauses an integration instance in `system/paused.md`, as `assistant pause instance NAME` does (its
 * schedule, triggers and queued tasks wait until the owner resumes it). Pausing what is paused already keeps the first
 * record. Hooks' `pause:` enqueues it (`when the same task fails three times in an hour, pause its integration`).
 */
export async function runPauseTask(context: HandlerContext) {
  const checked = payloadSchema.safeParse(context.payload);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new UnrecoverableError(
      `system.pause expects {"integration", "by", "reason"?}; ${issue?.path.join('.') || 'payload'}: ${issue?.message}`,
    );
  }
  const { integration, reason, by } = checked.data;
  const { entry, already } = await new PauseStore({ notes: context.notes }).pause({
    kind: 'instance',
    name: integration,
    by,
    reason,
  });
  if (!already) await context.log.human(`paused ${integration}`, { reason: reason ?? by });
  return { integration, already, at: entry.at };
}

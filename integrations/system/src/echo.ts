import type { HandlerContext, JsonValue } from '@assistant/sdk';

/** `system.echo`: returns its payload and leaves a line in the human log. */
export async function echo({ payload, task, log }: HandlerContext): Promise<JsonValue> {
  await log.human(`echoed task ${task.id}`, { reason: 'system.echo returns its payload' });
  return payload;
}

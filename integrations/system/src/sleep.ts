import { type HandlerContext, UnrecoverableError } from '@assistant/sdk';
import * as z from 'zod';

const sleepPayload = z.strictObject({ ms: z.int().min(0).max(86_400_000) });

/** `system.sleep` (`{ms}`): waits, and stops as soon as its signal aborts (timeout, shutdown). */
export async function sleep({ payload, signal }: HandlerContext): Promise<{ sleptMs: number }> {
  const checked = sleepPayload.safeParse(payload);
  // The same payload fails the same way on every attempt: fail it now rather than retry it.
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const where = issue?.path.length ? `payload.${issue.path.join('.')}` : 'payload';
    throw new UnrecoverableError(
      `system.sleep expects a payload like {"ms": 1000} (0 to 86400000 ms); ${where}: ${issue?.message}`,
    );
  }
  const { ms } = checked.data;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return { sleptMs: ms };
}

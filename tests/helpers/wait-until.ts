/**
 * Polls `check` until it returns something other than undefined or false, and resolves with that. For state held by
 * another process (a queue file, an HTTP answer), where there is no event in this process to wait on; the short
 * interval keeps a test from waiting longer than the thing takes, and `timeoutMs` turns a hang into a failure that
 * names `what` it waited for.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: {
    /** What the test waits for, as the timeout's error says it: "the task to reach done/". */
    what: string;
    /** @default 25_000 (below the integration tier's 30 s test timeout, so this error is the one reported) */
    timeoutMs?: number;
  },
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 25_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${options.what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

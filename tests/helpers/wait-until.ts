/**
 * Polls `check` until it returns something other than undefined or false, and resolves with that. For state held by
 * another process (a queue file, an HTTP answer), where there is no event in this process to wait on; the short
 * interval keeps a test from waiting longer than the thing takes, and `timeoutMs` turns a hang into a clear failure.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined | false> | T | undefined | false,
  options: { timeoutMs?: number; what?: string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 25_000);
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline)
      throw new Error(`waited ${options.timeoutMs ?? 25_000} ms for ${options.what ?? 'a condition'}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Lets everything already scheduled run: `turns` rounds of the event loop (promise jobs, then I/O and immediates).
 * A test uses it to show that something does not happen, without sleeping for a guessed time.
 */
export async function settle(turns = 20): Promise<void> {
  for (let turn = 0; turn < turns; turn += 1) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

import { writeSync } from 'node:fs';

/** Set by `assistant start` for its children: write watchdog lines. */
const watchdogVariable = 'ASSISTANT_WATCHDOG';
/** How a watchdog line starts (apps/cli/src/start-supervisor.js): a record separator, which no log line does. */
const beatPrefix = '\u001eassistant-watchdog ';

/**
 * Tells `assistant start`'s supervisor that this process's event loop still turns: a line on stdout every quarter of
 * `silenceLimitMs` saying how long the supervisor may wait for the next one (the supervisor takes these lines out of
 * what it prints). A process that stays silent longer is stuck (a handler's endless synchronous loop, or Node hanging
 * while it exits) and the supervisor kills it and starts it again; the next worker returns the stuck one's tasks to
 * pending. Does nothing in a process not started that way.
 *
 * Stdout rather than a pipe of its own: the worker's lean restart (`process.execve`) keeps only stdin, stdout and
 * stderr. Each line is one small synchronous write, as the logger's are, so the two never interleave mid-line.
 */
export function beatForSupervisor(options: { silenceLimitMs: number }): void {
  const asked = process.env[watchdogVariable] === '1';
  // Not for the scripts and MCP servers this process starts.
  delete process.env[watchdogVariable];
  if (!asked) return;
  const line = Buffer.from(`${beatPrefix}${Math.round(options.silenceLimitMs)}\n`);
  const beat = () => {
    try {
      writeSync(1, line);
    } catch (error) {
      // A full pipe only loses this beat; a supervisor that is gone (EPIPE) has nothing left to be told.
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') clearInterval(timer);
    }
  };
  const timer = setInterval(beat, Math.max(100, Math.floor(options.silenceLimitMs / 4)));
  timer.unref();
  beat();
}

import type { LlmProfiles } from '@assistant/llm';
import type { Logger } from 'pino';

/** One dependency that is down now, as this worker saw it go down. */
interface OpenOutage {
  what: string;
  startedMs: number;
  /** Failures seen since the first: retries of tasks, or failed calls through the model's breaker. */
  retries: number;
}

/**
 * Logs an outage (an LLM profile, an IMAP server, GitHub) once at WARN when it starts and once at WARN when it ends,
 * with how long it lasted and how many retries it cost. Every retry between the two is a debug line: a model down
 * for an hour retries each waiting task every minute, and a console line for each would bury everything else.
 * A dependency is named by a key: `llm:<profile>` for a model profile (its breaker says when it is down and up), or
 * `task:<instance>/<type>` for the tasks of one type of one instance (an IMAP check that cannot connect).
 */
export class OutageLog {
  readonly #logger: Logger;
  readonly #nowMs: () => number;
  readonly #open = new Map<string, OpenOutage>();

  constructor(options: { logger: Logger; nowMs?: () => number }) {
    this.#logger = options.logger;
    this.#nowMs = options.nowMs ?? Date.now;
  }

  /**
   * The dependency `key` failed. The first failure starts the outage and is logged at WARN; the next ones only
   * count. Returns whether this failure started it, so the caller logs its own line about the retry at debug.
   */
  failing(options: {
    key: string;
    what: string;
    message: string;
    /** The failures since the first, when the caller counts them (a model's breaker); else each call is one. */
    retries?: number;
  }): boolean {
    const open = this.#open.get(options.key);
    if (open) {
      open.retries = options.retries ?? open.retries + 1;
      return false;
    }
    this.#open.set(options.key, { what: options.what, startedMs: this.#nowMs(), retries: options.retries ?? 0 });
    this.#logger.warn(
      { outage: options.key },
      `${options.what} is failing: ${options.message}; retrying quietly until it works (each retry is logged at debug)`,
    );
    return true;
  }

  /** The dependency `key` works again: ends its outage with one WARN line, or does nothing when none is open. */
  recovered(key: string): void {
    const open = this.#open.get(key);
    if (!open) return;
    this.#open.delete(key);
    const lastedMs = this.#nowMs() - open.startedMs;
    this.#logger.warn(
      { outage: key, lastedMs, retries: open.retries },
      `${open.what} works again after ${formatLasted(lastedMs)} (${open.retries} ${open.retries === 1 ? 'retry' : 'retries'} meanwhile)`,
    );
  }

  /** Whether an outage of `key` is open now. */
  isOpen(key: string): boolean {
    return this.#open.has(key);
  }
}

function formatLasted(lastedMs: number): string {
  if (lastedMs < 1_000) return `${lastedMs}ms`;
  if (lastedMs < 60_000) return `${Math.round(lastedMs / 1_000)}s`;
  const minutes = Math.floor(lastedMs / 60_000);
  if (minutes < 60) return `${minutes}m ${Math.round((lastedMs % 60_000) / 1_000)}s`;
  return `${Math.floor(minutes / 60)}h ${minutes % 60}m`;
}

/**
 * Opens or closes the outage of a profile as its breaker says: open (or half open, a trial out) is down, closed is
 * up. Called on every change of the profile's gate, so it only looks at the breaker's state.
 */
export function watchModelOutage(llm: Pick<LlmProfiles, 'status'>, profile: string, outages: OutageLog): void {
  const status = llm.status().find((candidate) => candidate.profile === profile);
  if (!status) return;
  const key = `llm:${profile}`;
  if (status.breaker.state === 'closed') outages.recovered(key);
  else {
    outages.failing({
      key,
      what: `the LLM profile \`${profile}\` (${status.model})`,
      message: status.breaker.lastError ?? 'its endpoint does not answer',
      // The gate notifies on every slot change; its breaker counts the failed calls.
      retries: Math.max(0, status.breaker.consecutiveFailures - 1),
    });
  }
}

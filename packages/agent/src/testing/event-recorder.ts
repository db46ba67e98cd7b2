import type { AgentEvent } from '../loop/agent-event.ts';

/** Options of {@link EventRecorder.waitFor}. */
export interface WaitForEventOptions {
  /** Only events at or after this index of `events` count; pass `events.length` to wait for a new one. @default 0 */
  fromIndex?: number;
  /** @default 10_000 */
  timeoutMs?: number;
}

/** Collects agent events and lets a test wait for one, instead of sleeping. */
export interface EventRecorder {
  readonly events: AgentEvent[];
  /** Pass as `onEvent`. */
  onEvent(event: AgentEvent): void;
  /** Resolves with the first matching event (already seen or still to come); rejects after the timeout. */
  waitFor(matches: (event: AgentEvent) => boolean, options?: WaitForEventOptions): Promise<AgentEvent>;
}

/** Creates an {@link EventRecorder}. */
export function createEventRecorder(): EventRecorder {
  const events: AgentEvent[] = [];
  const waiters = new Set<(event: AgentEvent) => void>();
  return {
    events,
    onEvent(event) {
      events.push(event);
      for (const waiter of [...waiters]) waiter(event);
    },
    waitFor(matches, options = {}) {
      const seen = events.slice(options.fromIndex ?? 0).find(matches);
      if (seen !== undefined) return Promise.resolve(seen);
      const timeoutMs = options.timeoutMs ?? 10_000;
      return new Promise<AgentEvent>((resolve, reject) => {
        const waiter = (event: AgentEvent): void => {
          if (!matches(event)) return;
          waiters.delete(waiter);
          clearTimeout(timer);
          resolve(event);
        };
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`No matching agent event within ${timeoutMs} ms; saw ${events.length} events`));
        }, timeoutMs);
        waiters.add(waiter);
      });
    },
  };
}

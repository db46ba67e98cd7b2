export interface AdaptiveLimitOptions {
  /** The limit never goes above this. */
  maxLimit: number;
  /** Where the limit starts: one request at a time, whose answers give the no-load latency. @default 1 */
  initialLimit?: number;
}

/** The most requests an adaptive gate sends at once when `max_in_flight` is not set. */
export const defaultAdaptiveCeiling = 64;

/** A request sent under the limit, from {@link AdaptiveLimit.sent}: report its outcome with it. */
export interface LimitTicket {
  readonly generation: number;
  readonly window: number;
}

/** A growth needs less than this many requests queued at the server (per this process's share). */
const growBelowQueued = 0.25;
/** The limit shrinks when more than this many requests are queued at the server. */
const shrinkAboveQueued = 1;
/** A window is at least this many requests, and at least the limit: about one round trip of every request out. */
const minimumWindow = 3;

interface Window {
  expected: number;
  answered: number;
  totalMs: number;
  fastestMs: number;
  saturated: number;
}

/**
 * How many requests a profile's gate sends at once when `max_in_flight` is not set: found from the endpoint's
 * latency, as TCP Vegas and Netflix's concurrency-limits find a link's or a service's capacity (decision 0076).
 *
 * A model server runs C requests at once and queues the rest. While the gate keeps no more than C open, every request
 * takes the server's no-load time; one more, and the extra one waits its turn, so the mean time to answer rises by
 * the share of the queue. Over a window of requests sent with the limit in use (about one round trip's worth, judged
 * once every one of them has answered, so that the first answers back do not bias it), Little's law gives the
 * requests queued at the server: `limit × (1 − noLoad ÷ mean)`, where noLoad is the fastest answer seen (a window at
 * limit 1 starts it afresh: one request at a time cannot queue behind this process's own). Below a quarter of a
 * request queued, the limit grows by one; above one, it shrinks by one; between, it holds. Alone on an endpoint the
 * limit so settles at C or C + 1: at C + 1 about one request is always queued (a little less, for the time each
 * answer spends between the server and the gate), far from the quarter a growth needs. An answer saying the endpoint
 * is overloaded or down (429, 5xx, refused, timed out) halves the limit, once for all the requests already out.
 * The limit starts at 1 and grows only from windows that used it (a caller that sends less never raises it).
 *
 * Several processes on one endpoint each run their own limit without talking to each other. They see the same queue,
 * and each holds its own share of it between a quarter and one request, so none can keep much more than another:
 * the limits meet at about the same value.
 *
 * Latency is compared raw, not per output token: a model whose answers vary much in length makes the mean noisy, and
 * the limit then settles lower than the server could take (decision 0076). Set `max_in_flight` for such a server.
 */
export class AdaptiveLimit {
  readonly #maxLimit: number;
  #limit: number;
  // Bumped at every change of the limit: answers to requests sent before it are about another limit.
  #generation = 0;
  // Requests sent under this generation; the n-th belongs to window floor(n / window size).
  #sentCount = 0;
  // The windows of this generation with requests still out, by number; the lowest is the next to be judged.
  #windows = new Map<number, Window>();
  #nextWindow = 0;
  // The fastest answer seen; started afresh by a window at limit 1, which cannot queue behind this process's own.
  #noLoadMs: number | undefined;
  #queued: number | undefined;

  constructor(options: AdaptiveLimitOptions) {
    if (!(Number.isInteger(options.maxLimit) && options.maxLimit >= 1)) {
      throw new RangeError(`Expected maxLimit to be a whole number of at least 1, got ${options.maxLimit}`);
    }
    this.#maxLimit = options.maxLimit;
    this.#limit = Math.min(options.maxLimit, Math.max(1, Math.floor(options.initialLimit ?? 1)));
  }

  /** Requests that may be out at once now. */
  get limit(): number {
    return this.#limit;
  }

  get maxLimit(): number {
    return this.#maxLimit;
  }

  /** The requests queued at the server by the last judged window's estimate; undefined before the first. */
  get queued(): number | undefined {
    return this.#queued;
  }

  /** The no-load latency the estimate compares against; undefined before the first judged window. */
  get noLoadMs(): number | undefined {
    return this.#noLoadMs;
  }

  /**
   * A request goes out. `saturated`: the gate is using its whole limit with it (otherwise the caller, not the
   * endpoint, sets the pace, and its window says nothing about one more).
   */
  sent(options: { saturated: boolean }): LimitTicket {
    const size = this.#windowSize();
    const number = Math.floor(this.#sentCount / size);
    this.#sentCount += 1;
    let window = this.#windows.get(number);
    if (!window) {
      window = { expected: 0, answered: 0, totalMs: 0, fastestMs: Number.POSITIVE_INFINITY, saturated: 0 };
      this.#windows.set(number, window);
    }
    window.expected += 1;
    if (options.saturated) window.saturated += 1;
    return { generation: this.#generation, window: number };
  }

  /**
   * The request was answered after `latencyMs`. A window is judged once every request sent in it has reported, so
   * its mean is not biased to the answers that came first. Returns whether the limit changed.
   */
  answered(ticket: LimitTicket, latencyMs: number): boolean {
    const window = this.#windowOf(ticket);
    if (!window) return false;
    window.answered += 1;
    window.totalMs += Math.max(0, latencyMs);
    window.fastestMs = Math.min(window.fastestMs, Math.max(0, latencyMs));
    return this.#judge();
  }

  /** The request says nothing about the endpoint's pace (cancelled, or refused for its content): left out. */
  ignored(ticket: LimitTicket): boolean {
    const window = this.#windowOf(ticket);
    if (!window) return false;
    window.expected -= 1;
    if (window.saturated > window.expected) window.saturated = window.expected;
    return this.#judge();
  }

  /**
   * A request the endpoint refused as overloaded or unavailable (429, 5xx, connection refused, timed out): the limit
   * halves, once for every request sent under the same limit. Returns whether the limit changed.
   */
  dropped(ticket: LimitTicket): boolean {
    if (ticket.generation !== this.#generation) return false;
    const halved = Math.max(1, Math.floor(this.#limit / 2));
    // Even at 1 the generation moves on, so the other failures of the same outage are not counted again.
    if (halved === this.#limit) {
      this.#restart();
      return false;
    }
    return this.#set(halved);
  }

  #windowSize(): number {
    return Math.max(minimumWindow, this.#limit);
  }

  #windowOf(ticket: LimitTicket): Window | undefined {
    return ticket.generation === this.#generation ? this.#windows.get(ticket.window) : undefined;
  }

  // Judges the next window when all its requests have reported, and the ones after it that are complete too.
  #judge(): boolean {
    const size = this.#windowSize();
    for (;;) {
      const window = this.#windows.get(this.#nextWindow);
      // Complete: all `size` requests were sent in it and all have reported.
      if (!window || this.#sentCount < (this.#nextWindow + 1) * size || window.answered < window.expected) return false;
      this.#windows.delete(this.#nextWindow);
      this.#nextWindow += 1;
      if (window.answered === 0) continue;
      const saturated = window.saturated * 2 >= window.expected;
      if (this.#decide({ meanMs: window.totalMs / window.answered, fastestMs: window.fastestMs, saturated }))
        return true;
    }
  }

  #decide(window: { meanMs: number; fastestMs: number; saturated: boolean }): boolean {
    const { meanMs, fastestMs, saturated } = window;
    // The fastest answer seen: never above the no-load mean, so the estimate errs towards more queued (a lower
    // limit), never towards one more request than the server takes. One request at a time cannot queue behind this
    // process's own, so a window at limit 1 starts the estimate afresh (a server that became slower is followed).
    if (this.#limit === 1 || this.#noLoadMs === undefined || fastestMs < this.#noLoadMs) this.#noLoadMs = fastestMs;
    const queued = meanMs > 0 ? this.#limit * (1 - this.#noLoadMs / meanMs) : 0;
    this.#queued = queued;
    if (queued > shrinkAboveQueued && this.#limit > 1) return this.#set(this.#limit - 1);
    // Only a window that used the limit (at least half its requests sent with it full) says whether one more fits.
    if (queued < growBelowQueued && saturated && this.#limit < this.#maxLimit) return this.#set(this.#limit + 1);
    return false;
  }

  #set(limit: number): true {
    this.#limit = limit;
    this.#restart();
    return true;
  }

  #restart(): void {
    this.#generation += 1;
    this.#sentCount = 0;
    this.#nextWindow = 0;
    this.#windows = new Map();
  }
}

import type { ControlEvent, SteeringOutcome, SteeringRequest, SteeringSettlement } from './steering-request.ts';

/** A request waiting in a channel, in the order requests were made. */
export interface PendingSteeringRequest {
  /** The request's name in the channel (steeringRequestIdPattern): what `settle` takes. */
  id: string;
  /** Absent when the request could not be read; `problem` says why, and it is settled as refused. */
  request?: SteeringRequest | undefined;
  problem?: string | undefined;
}

/** A request to make of a task's loop: the channel adds its id and the time. */
export type NewSteeringRequest = Omit<SteeringRequest, 'id' | 'created_at'>;

/**
 * One task's steering channel as code in the worker uses it: applySteering reads and settles the requests and
 * writes the loop's events; a chat turn makes requests of other tasks and waits for their outcomes. ControlFiles
 * keeps it in `data/control/<task-id>/` on this machine; HttpSteeringChannel reaches the same files through the
 * server's API, for a worker on another machine. Either way the server, CLI and dashboard see the same thing.
 */
export interface SteeringChannel {
  readonly taskId: string;
  /**
   * How often applySteering looks for requests when `watchRequests` has not woken it: the fallback for a missed
   * wake, so cheap locally and rare over the network.
   */
  readonly pollMs: number;
  /** Requests not yet settled, in the order they were made. */
  pending(): Promise<PendingSteeringRequest[]>;
  /** Records what became of a request and removes it from `pending`: outcome first, so nothing is applied twice. */
  settle(requestId: string, outcome: SteeringSettlement): Promise<void>;
  /** Appends one event to the task's events (SSE, `assistant task watch`, the dashboard), in call order. */
  event(event: Omit<ControlEvent, 'at'> & { at?: string }): Promise<void>;
  /** Whether anything (a request, an outcome, an event) was ever written for the task. */
  exists(): Promise<boolean>;
  /**
   * Calls `onRequest` soon after a request may have arrived, until `close()`; it may call it when none did, and it
   * may miss one (`pollMs` covers that).
   */
  watchRequests(onRequest: () => void, options?: { logger?: { warn(message: string): void } }): WatchedRequests;
  /** Makes a request of the task's loop; returns it with its id. */
  request(request: NewSteeringRequest): Promise<SteeringRequest>;
  /** Waits for a request's outcome, up to `timeoutMs`; undefined when none came. */
  waitForOutcome(
    requestId: string,
    options: { timeoutMs: number; signal?: AbortSignal },
  ): Promise<SteeringOutcome | undefined>;
}

export interface WatchedRequests {
  /** Resolves once the watch is in place (never rejects): a request made after this wakes `onRequest`. */
  ready: Promise<void>;
  close(): Promise<void>;
}

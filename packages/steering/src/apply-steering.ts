import type { SteeringChannel } from './steering-channel.ts';
import type { SteeringRequest, SteeringSettlement } from './steering-request.ts';

/** What steering needs of a running loop: the agent package's SteerableHandle has all of it. */
export interface SteerableTarget {
  pause(): void;
  resume(): void;
  interject(message: string): void;
  stop(reason?: string): void;
  ask(question: string): Promise<string>;
  answerClarification(id: string, answer: string): void;
  done(): boolean;
}

export interface ApplySteeringOptions {
  /** The task's channel: ControlFiles on this machine, HttpSteeringChannel through the server. */
  channel: SteeringChannel;
  target: SteerableTarget;
  logger?: { warn(message: string): void };
  /** A fallback look for requests when the channel's watch is quiet. @default the channel's `pollMs` */
  pollMs?: number;
}

/**
 * Applies the steering requests made of one task, in order, as they arrive, until `close()`: the channel's watch
 * wakes it at once (a file watcher locally, a long poll through the server), a fallback poll covers a missed wake.
 * Requests made before the task started (while it was pending, or while the worker restarted) are applied first.
 * Each request's outcome is recorded before the request is removed, so a crash never applies one twice.
 */
export function applySteering(options: ApplySteeringOptions): { close(): Promise<void>; drained(): Promise<void> } {
  const { channel, target } = options;
  let closed = false;
  let running: Promise<void> = Promise.resolve();
  let again = false;
  const asks = new Set<Promise<unknown>>();
  /**
   * Requests this run has taken up and not yet settled: an `ask` still waiting for its answer, or an outcome the
   * channel could not record (the server out of reach for a moment). They stay pending in the channel meanwhile,
   * and must not be applied again when the next look finds them; an unrecorded outcome is retried instead.
   */
  const taken = new Map<string, SteeringSettlement | 'asking'>();
  /** Requests this run has settled: a look that listed one just before it was settled must not apply it again. */
  const settled = new Set<string>();

  const settle = async (id: string, outcome: SteeringSettlement) => {
    taken.set(id, outcome);
    try {
      await channel.settle(id, outcome);
      settled.add(id);
      taken.delete(id);
    } catch (error) {
      options.logger?.warn(`could not record the outcome of steering request ${id}: ${(error as Error).message}`);
    }
  };

  const event = async (details: Record<string, unknown>) => {
    try {
      await channel.event({ type: 'steering', ...details });
    } catch (error) {
      options.logger?.warn(`could not write a steering event: ${(error as Error).message}`);
    }
  };

  const applyOne = async (request: SteeringRequest, id: string) => {
    try {
      switch (request.action) {
        case 'pause':
          target.pause();
          break;
        case 'resume':
          target.resume();
          break;
        case 'stop':
          target.stop(request.reason ?? 'stopped by the owner');
          break;
        case 'interject':
          target.interject(request.message ?? '');
          break;
        case 'answer':
          target.answerClarification(request.clarification_id ?? '', request.message ?? '');
          break;
        case 'ask': {
          // Answered by a separate read-only call; later requests do not wait for it.
          taken.set(id, 'asking');
          const asking = target
            .ask(request.message ?? '')
            .then(
              (answer): SteeringSettlement => ({ status: 'applied', answer }),
              (error: unknown): SteeringSettlement => ({ status: 'refused', message: (error as Error).message }),
            )
            .then((outcome) => settle(id, outcome));
          asks.add(asking);
          void asking.finally(() => asks.delete(asking));
          await event({ action: 'ask', request: request.id, question: request.message });
          return;
        }
      }
    } catch (error) {
      await settle(id, { status: 'refused', message: (error as Error).message });
      return;
    }
    await settle(id, { status: 'applied' });
    await event({
      action: request.action,
      request: request.id,
      ...(request.message ? { message: request.message } : {}),
      // Which clarification an answer answered: the dashboard shows only the ones still open.
      ...(request.clarification_id ? { clarification_id: request.clarification_id } : {}),
      ...(request.reason ? { reason: request.reason } : {}),
    });
  };

  const drainOnce = async () => {
    for (const entry of await channel.pending()) {
      if (closed) return;
      if (settled.has(entry.id)) continue;
      const earlier = taken.get(entry.id);
      if (earlier === 'asking') continue;
      if (earlier) {
        await settle(entry.id, earlier);
        continue;
      }
      if (!entry.request) {
        await settle(entry.id, { status: 'refused', message: `unreadable request: ${entry.problem}` });
        continue;
      }
      await applyOne(entry.request, entry.id);
    }
  };

  const drain = () => {
    if (closed) return running;
    if (again) return running;
    again = true;
    running = running.then(async () => {
      again = false;
      // A channel out of reach (the server restarting) fails this look only; the next wake or poll tries again.
      await drainOnce().catch((error: unknown) =>
        options.logger?.warn(`could not read steering requests: ${(error as Error).message}`),
      );
    });
    return running;
  };

  const watched = channel.watchRequests(() => void drain(), options.logger ? { logger: options.logger } : {});
  // The first look follows the watch, so a request made in between wakes it rather than waiting for the poll.
  const started = watched.ready.then(() => drain());
  const timer = setInterval(() => void drain(), options.pollMs ?? channel.pollMs);
  timer.unref();

  return {
    drained: async () => {
      await started;
      await drain();
    },
    close: async () => {
      if (closed) return;
      await started;
      await drain();
      closed = true;
      clearInterval(timer);
      await watched.close();
      await running;
      await Promise.allSettled([...asks]);
    },
  };
}

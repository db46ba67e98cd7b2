import { watch } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import type { ControlFiles, SteeringRequest } from './control-files.ts';

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
  files: ControlFiles;
  target: SteerableTarget;
  logger?: { warn(message: string): void };
  /** A fallback look at the folder when the watcher is quiet (file systems where watching does not work). @default 250 */
  pollMs?: number;
}

/**
 * Applies the steering requests written for one task, in order, as they arrive, until `close()`: a watcher on the
 * requests folder wakes it at once (well within 100 ms), a short poll covers file systems where watching does not
 * work. Requests written before the task started (while it was pending, or while the worker restarted) are applied
 * first. Each request's outcome is written before the request file is removed, so a crash never applies one twice.
 */
export function applySteering(options: ApplySteeringOptions): { close(): Promise<void>; drained(): Promise<void> } {
  const { files, target } = options;
  let closed = false;
  let running: Promise<void> = Promise.resolve();
  let again = false;
  let watcher: ReturnType<typeof watch> | undefined;
  const asks = new Set<Promise<unknown>>();

  const applyOne = async (request: SteeringRequest, file: string) => {
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
          const asking = target
            .ask(request.message ?? '')
            .then((answer) => files.settle(file, { request_id: request.id, status: 'applied', answer }))
            .catch((error: unknown) =>
              files.settle(file, { request_id: request.id, status: 'refused', message: (error as Error).message }),
            );
          asks.add(asking);
          void asking.finally(() => asks.delete(asking));
          await files.event({ type: 'steering', action: 'ask', request: request.id, question: request.message });
          return;
        }
      }
      await files.settle(file, { request_id: request.id, status: 'applied' });
      await files.event({
        type: 'steering',
        action: request.action,
        request: request.id,
        ...(request.message ? { message: request.message } : {}),
        // Which clarification an answer answered: the dashboard shows only the ones still open.
        ...(request.clarification_id ? { clarification_id: request.clarification_id } : {}),
        ...(request.reason ? { reason: request.reason } : {}),
      });
    } catch (error) {
      await files.settle(file, { request_id: request.id, status: 'refused', message: (error as Error).message });
    }
  };

  const drain = () => {
    if (closed) return running;
    if (again) return running;
    again = true;
    running = running.then(async () => {
      again = false;
      for (const entry of await files.pending()) {
        if (closed) return;
        if (!entry.request) {
          const id =
            entry.file
              .split('/')
              .at(-1)
              ?.replace(/\.json$/, '') ?? 'unknown';
          await files.settle(entry.file, {
            request_id: id,
            status: 'refused',
            message: `unreadable request: ${entry.problem}`,
          });
          continue;
        }
        await applyOne(entry.request, entry.file);
      }
    });
    return running;
  };

  const start = async () => {
    await mkdir(files.requestsDirectory, { recursive: true, mode: 0o700 });
    if (closed) return;
    try {
      watcher = watch(files.requestsDirectory, () => void drain());
      watcher.on('error', () => {});
    } catch (error) {
      options.logger?.warn(`cannot watch ${files.requestsDirectory}: ${(error as Error).message}; polling`);
    }
    await drain();
  };
  const started = start();
  const timer = setInterval(() => void drain(), options.pollMs ?? 250);
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
      watcher?.close();
      await running;
      await Promise.allSettled([...asks]);
    },
  };
}

// For the worker's tests: a real worker in this process over the test's runtime, run until the queue is idle, quietly.
import { pino } from 'pino';
import { type RunWorkerOptions, runWorker } from '../run-worker.ts';

export function runUntilIdle(options: Omit<RunWorkerOptions, 'logger' | 'signal' | 'exitWhenIdle'>): Promise<void> {
  return runWorker({
    ...options,
    logger: pino({ level: 'silent' }),
    signal: new AbortController().signal,
    exitWhenIdle: true,
  });
}

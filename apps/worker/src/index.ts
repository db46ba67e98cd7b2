export { type CreateHandlerContextOptions, createHandlerContext } from './create-handler-context.ts';
export {
  dataDirectories,
  type EnsureDataDirectoriesOptions,
  ensureDataDirectories,
  queueDirectoryNames,
} from './data-directories.ts';
export { type RunWorkerOptions, runWorker } from './run-worker.ts';
export type { WorkerServices } from './worker-services.ts';

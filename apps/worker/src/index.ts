export {
  type CreateHandlerContextOptions,
  createHandlerContext,
  type WorkerServices,
} from './create-handler-context.ts';
export {
  dataDirectories,
  type EnsureDataDirectoriesOptions,
  ensureDataDirectories,
  queueDirectoryNames,
} from './data-directories.ts';
export { type RunWorkerOptions, runWorker } from './run-worker.ts';

export {
  dataDirectories,
  type EnsureDataDirectoriesOptions,
  ensureDataDirectories,
  queueDirectoryNames,
} from './data-directories.ts';
export { type RunWorkerOptions, runWorker } from './run-worker.ts';
export { builtinHandlers, type TaskContext, type TaskHandler } from './task-handlers.ts';

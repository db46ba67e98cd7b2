export {
  dataDirectories,
  type EnsureDataDirectoriesOptions,
  ensureDataDirectories,
  queueDirectoryNames,
} from './data-directories.ts';
export { type RunWorkerOptions, runWorker } from './run-worker.ts';

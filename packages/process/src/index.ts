export { assistantVersion } from './assistant-version.ts';
export { type CreateLoggerOptions, createLogger } from './create-logger.ts';
export { type ExitAfterShutdownGraceOptions, exitAfterShutdownGrace } from './exit-after-shutdown-grace.ts';
export { installation } from './installation.ts';
export {
  dataDirectories,
  type MadePrivate,
  makeDirectoriesPrivate,
  queueDirectoryNames,
} from './make-directories-private.ts';
export { type OpenQueueOptions, openQueue } from './open-queue.ts';
export { assertPortFree, explainListenError, type ListenAddress } from './port-in-use.ts';
export {
  type LoadedProcessConfig,
  type ProcessMainOptions,
  type ProcessRunOptions,
  runProcessMain,
} from './run-process-main.ts';

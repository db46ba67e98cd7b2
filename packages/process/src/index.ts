export { assistantVersion } from './assistant-version.ts';
export { type CreateLoggerOptions, createLogger } from './create-logger.ts';
export {
  type ExitAfterShutdownGraceOptions,
  exitAfterShutdownGrace,
  shutdownMarginMs,
} from './exit-after-shutdown-grace.ts';
export { type MadePrivate, makeDirectoriesPrivate } from './make-directories-private.ts';
export {
  type LoadedProcessConfig,
  type ProcessMainOptions,
  type ProcessRunOptions,
  runProcessMain,
} from './run-process-main.ts';

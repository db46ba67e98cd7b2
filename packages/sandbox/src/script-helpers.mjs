// The helpers a `node:` script imports to talk to Assistant:
//   const { logHuman, setResult } = await import(process.env.ASSISTANT_HELPERS);
// Plain JavaScript with no dependencies, because it runs inside the owner's script, possibly inside a sandbox that
// sees nothing of Assistant but this file.
import { writeFileSync, writeSync } from 'node:fs';

// runScript opens a pipe on file descriptor 3 and reads one `level<TAB>message` line per log entry.
const logDescriptor = 3;
// The reader truncates at 1,000 characters too; truncating here keeps each write small enough to reach the pipe
// in one piece, so lines from a script that logs quickly never interleave.
const maximumMessageLength = 1_000;

/**
 * @param {'human' | 'info' | 'warn'} level
 * @param {unknown} message
 */
function log(level, message) {
  const text = String(message)
    .replace(/[\r\n\t]+/g, ' ')
    .slice(0, maximumMessageLength);
  writeSync(logDescriptor, `${level}\t${text}\n`);
}

/**
 * Logs a line written for the owner: it shows in the task's human log.
 * @param {unknown} message
 */
export function logHuman(message) {
  log('human', message);
}

/**
 * Logs a diagnostic line.
 * @param {unknown} message
 */
export function logInfo(message) {
  log('info', message);
}

/**
 * Logs a warning.
 * @param {unknown} message
 */
export function logWarn(message) {
  log('warn', message);
}

/**
 * Sets the script's result: any JSON value. Calling it again replaces the earlier result.
 * @param {unknown} value
 */
export function setResult(value) {
  const file = process.env.ASSISTANT_RESULT_FILE;
  if (file === undefined || file === '') {
    throw new Error('setResult: ASSISTANT_RESULT_FILE is not set; is this script running under Assistant?');
  }
  // JSON.stringify(undefined) is undefined, not text; an absent result is null.
  writeFileSync(file, JSON.stringify(value ?? null));
}

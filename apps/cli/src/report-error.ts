import { ConfigError, formatProblem } from '@assistant/config';
import { type ErrorCode, isAssistantError } from '@assistant/errors';
import { CommanderError } from 'commander';

/** What the CLI prints for an error and the exit code it leaves with. */
export interface ErrorReport {
  /** Lines for stderr, without trailing newlines. */
  lines: string[];
  exitCode: number;
}

// Usage and config errors exit 2, so scripts can tell "you asked wrong" from "it broke" (exit 1).
const usageCodes: readonly ErrorCode[] = ['USAGE', 'CONFIG_INVALID', 'CONFIG_NOT_FOUND', 'MANIFEST_INVALID'];

const systemHints: Record<string, string> = {
  EADDRINUSE: 'another process uses that address: stop it, or change `server.port` in config.yaml',
  EACCES: 'permission denied: check the owner and mode of the path, or pick a port above 1023',
  EADDRNOTAVAIL: '`server.host` is not an address of this machine',
};

/**
 * Turns any error into one `assistant: <message>` line and a `hint:` line. Stack traces are kept for errors
 * nobody anticipated: those are bugs, and the stack is what a bug report needs.
 */
export function reportError(error: unknown): ErrorReport {
  if (error instanceof CommanderError) return reportCommanderError(error);
  if (error instanceof ConfigError) {
    return {
      lines: [
        `assistant: ${error.message}`,
        ...error.warnings.map((warning) => `warning: ${formatProblem(warning)}`),
        ...(error.hint ? [`hint: ${error.hint}`] : []),
      ],
      exitCode: 2,
    };
  }
  if (isAssistantError(error)) {
    return {
      lines: [`assistant: ${error.message}`, ...(error.hint ? [`hint: ${error.hint}`] : [])],
      exitCode: usageCodes.includes(error.code) ? 2 : 1,
    };
  }
  if (isSystemError(error)) {
    const hint = systemHints[error.code];
    return { lines: [`assistant: ${error.message}`, ...(hint ? [`hint: ${hint}`] : [])], exitCode: 1 };
  }
  const detail = error instanceof Error ? (error.stack ?? error.message) : String(error);
  return {
    lines: [`assistant: unexpected error: ${detail}`, 'hint: this is a bug; please report it with the lines above'],
    exitCode: 1,
  };
}

function reportCommanderError(error: CommanderError): ErrorReport {
  // Help and version were asked for and already printed.
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return { lines: [], exitCode: 0 };
  // Help printed because a command needs a subcommand (`assistant`, `assistant config`): a usage error.
  if (error.code === 'commander.help') return { lines: [], exitCode: 2 };
  const [first = '', ...rest] = error.message.split('\n');
  const suggestion = /^\(Did you mean (.+)\?\)$/.exec(rest.join(' ').trim());
  return {
    lines: [
      `assistant: ${first.replace(/^error: /, '')}`,
      suggestion ? `hint: did you mean ${suggestion[1]}?` : 'hint: run `assistant --help` for commands and flags',
    ],
    exitCode: 2,
  };
}

function isSystemError(error: unknown): error is Error & { code: string } {
  return error instanceof Error && typeof (error as { code?: unknown }).code === 'string' && 'syscall' in error;
}

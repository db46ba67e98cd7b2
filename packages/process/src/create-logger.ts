import { AssistantError, scrubSecrets } from '@assistant/errors';
import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';
import * as z from 'zod';

const logEnvironment = z.object({
  ASSISTANT_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ASSISTANT_LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
});

export interface CreateLoggerOptions {
  /** Shown on every line, so interleaved logs say which process wrote them. */
  name: string;
  /** Read for ASSISTANT_LOG_LEVEL and ASSISTANT_LOG_FORMAT. @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Where lines go. @default stdout, pretty when stdout is a terminal, JSON lines otherwise */
  destination?: DestinationStream;
}

/**
 * The process logger. Authorization headers are redacted wherever they appear, because request objects get
 * logged while debugging and a token in a log file is a leaked token; every line is scrubbed of loaded secrets.
 */
export async function createLogger(options: CreateLoggerOptions): Promise<Logger> {
  const parsed = logEnvironment.safeParse(options.env ?? process.env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AssistantError(
      'USAGE',
      `environment variable ${String(issue?.path[0])} is invalid: ${issue?.message ?? 'unexpected value'}`,
      {
        hint: 'ASSISTANT_LOG_LEVEL is one of fatal, error, warn, info, debug, trace, silent; ASSISTANT_LOG_FORMAT json or pretty',
      },
    );
  }
  const loggerOptions: LoggerOptions = {
    name: options.name,
    level: parsed.data.ASSISTANT_LOG_LEVEL,
    // The hostname is noise on a personal machine; the pid tells server and worker restarts apart.
    base: { pid: process.pid },
    redact: {
      paths: ['req.headers.authorization', 'request.headers.authorization', 'headers.authorization'],
      censor: '[redacted]',
    },
    // The last stop before a line leaves the process: every loaded secret, in any of its common encodings, goes,
    // wherever in the line it sits (an error body that echoes a token, a cause's stack, a request URL).
    hooks: { streamWrite: (line) => scrubSecrets(line) },
  };
  if (options.destination) return pino(loggerOptions, options.destination);
  const format = parsed.data.ASSISTANT_LOG_FORMAT ?? (process.stdout.isTTY ? 'pretty' : 'json');
  if (format === 'json') return pino(loggerOptions);
  // Loaded only when wanted: machines and pipes read JSON lines, people read pretty ones. `sync` keeps the
  // last lines before an exit from being lost in a worker thread.
  const { default: pretty } = await import('pino-pretty');
  return pino(loggerOptions, pretty({ sync: true, ignore: 'hostname', translateTime: 'SYS:HH:MM:ss.l' }));
}

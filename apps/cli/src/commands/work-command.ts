import type { LoadedConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { listenForShutdown } from '../listen-for-shutdown.ts';
import { loadCliConfig } from '../load-cli-config.ts';

export interface WorkCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** Tasks at once; overrides `worker.concurrency`. */
  concurrency?: string;
  /** Exit 0 once no task is ready or active. */
  exitWhenIdle?: boolean;
  /** Comma-separated task types or patterns (`email.*.classify`) this worker takes; the others it leaves. */
  types?: string;
  /**
   * The server's URL: this worker runs on another machine, reaching notes, the human log and steering through the
   * server's API (with the token in ASSISTANT_TOKEN, or `server.token`) and claiming from Redis.
   */
  server?: string;
}

/** Runs the worker in this process until SIGINT or SIGTERM. */
export async function workCommand(options: WorkCommandOptions): Promise<void> {
  const concurrency = options.concurrency === undefined ? undefined : Number(options.concurrency);
  if (concurrency !== undefined && (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 256)) {
    throw new AssistantError(
      'USAGE',
      `--concurrency must be a whole number from 1 to 256, got \`${options.concurrency}\``,
    );
  }
  const types = options.types === undefined ? undefined : parseTypes(options.types);
  const { config, registry, hooks } = await loadCliConfig(options);
  const remote = options.server === undefined ? undefined : remoteServer(options.server, options.context.env, config);
  // Imported here so that `assistant version` and friends do not pay for loading the worker.
  const [{ createLogger, exitAfterShutdownGrace }, { runWorker }] = await Promise.all([
    import('@assistant/process'),
    import('@assistant/worker'),
  ]);
  const logger = await createLogger({ name: 'worker', env: options.context.env });
  // try/finally rather than `using`: the bin runs this on Node 22 too, which lacks explicit resource management.
  const shutdown = listenForShutdown({ onRepeat: (signal) => logger.info(`${signal} received; already stopping`) });
  // Whatever a handler does with its signal, SIGTERM ends this process within the grace period (plus a margin).
  const deadline = exitAfterShutdownGrace({ signal: shutdown.signal, graceMs: config.worker.shutdownGraceMs, logger });
  try {
    shutdown.signal.addEventListener('abort', () => logger.info(`${String(shutdown.signal.reason)} received`), {
      once: true,
    });
    await runWorker({
      config,
      registry,
      hooks,
      logger,
      signal: shutdown.signal,
      ...(concurrency === undefined ? {} : { concurrency }),
      exitWhenIdle: options.exitWhenIdle === true,
      ...(types === undefined ? {} : { types }),
      ...(remote === undefined ? {} : { remote }),
    });
  } finally {
    deadline[Symbol.dispose]();
    shutdown[Symbol.dispose]();
  }
}

/** `email.*.classify,github.*.classify` → the patterns, each checked as a task type with `*` allowed. */
function parseTypes(text: string): string[] {
  const patterns = text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  const bad = patterns.find((pattern) => !/^[a-z0-9_*-]+(\.[a-z0-9_*-]+)*$/.test(pattern));
  if (patterns.length === 0 || bad !== undefined) {
    throw new AssistantError(
      'USAGE',
      `--types takes task types or patterns separated by commas, such as \`email.*.classify,system.*\`; got \`${bad ?? text}\``,
    );
  }
  return patterns;
}

/**
 * Where a remote worker reaches the server, and with what token. A remote worker shares nothing with the server but
 * Redis and the API, so the file queue (which is the server's disk) is refused, and so is a server with no token.
 */
function remoteServer(
  text: string,
  env: NodeJS.ProcessEnv,
  config: LoadedConfig,
): { serverUrl: string; token: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new AssistantError('USAGE', `--server takes the server's URL, such as http://10.0.0.5:6767; got \`${text}\``);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new AssistantError('USAGE', `--server takes an http:// or https:// URL; got \`${text}\``);
  }
  if (url.username !== '' || url.password !== '') {
    throw new AssistantError('USAGE', '--server takes no credentials in the URL: the token goes in ASSISTANT_TOKEN');
  }
  if (config.queue.backend !== 'redis') {
    throw new AssistantError(
      'USAGE',
      'a worker with --server claims from Redis, and config.yaml says `queue.backend: file`',
      {
        hint: 'set `queue.backend: redis` and `queue.redis` in config.yaml (docs/scale-out.md)',
      },
    );
  }
  const token = env.ASSISTANT_TOKEN?.trim() || config.server.token?.reveal().trim();
  if (!token) {
    throw new AssistantError('USAGE', "a worker with --server needs the install's API token", {
      hint: 'put the output of `assistant token` (on the server) in ASSISTANT_TOKEN, or `server.token` in config.yaml',
    });
  }
  return { serverUrl: url.toString().replace(/\/$/, ''), token };
}

import { type ChildProcess, spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './free-port.ts';

/** The one command that makes these tests runnable; CI's `.ci/run` runs it too. */
export const redisInstallCommand = 'apt-get install -y --no-install-recommends redis-server';

export interface StartRedisOptions {
  /** How long to wait for the server to answer PING, or to go away. @default 15_000 */
  timeoutMs?: number;
  /** Where to look for `redis-server`; a test sets it to show the "not installed" message. @default PATH, /usr/bin, /usr/local/bin, /usr/sbin */
  binaryDirectories?: string[];
  /**
   * Keep the data across a restart as an owner's Redis would (`appendonly yes`), every write on disk before it is
   * answered (`appendfsync always`), so a SIGKILL loses nothing a client was told had happened.
   * @default false (no persistence: quicker, and most tests never restart Redis)
   */
  persistence?: boolean;
}

/** A private redis-server on loopback, its working directory a temporary one; persistent only if asked. */
export interface RedisServer extends AsyncDisposable {
  host: '127.0.0.1';
  port: number;
  /** `redis://127.0.0.1:{port}` */
  url: string;
  directory: string;
  /** Stops the server (SIGTERM) and waits until it exited. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILLs the server, as a crash would. */
  kill(): Promise<void>;
  /**
   * Stops the server if it runs (SIGTERM) and starts it again on the same port with the same directory, resolved
   * once it answers PING: with `persistence`, it comes back with its data.
   */
  restart(): Promise<void>;
  /** Stops the server and removes `directory`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * Starts a private `redis-server` (Debian's redis-server package) on a free loopback port, resolved once it answers
 * PING. Throws a clear error, never skips, when redis-server is not installed: a test that needs a real Redis fails
 * loudly where it cannot get one.
 */
export async function startRedis(options: StartRedisOptions = {}): Promise<RedisServer> {
  const timeoutMs = options.timeoutMs ?? 15_000;
  const binary = await findBinary(options.binaryDirectories ?? defaultDirectories());
  if (binary === undefined) throw new Error(`redis-server not found; install Redis: ${redisInstallCommand}`);
  const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-redis-'));
  const persistence = options.persistence
    ? ['--appendonly', 'yes', '--appendfsync', 'always']
    : ['--save', '', '--appendonly', 'no'];
  const launch = (port: number) => launchRedis({ binary, port, directory, persistence, timeoutMs });
  let lastError: unknown;
  // A port that was free a moment ago can be taken before redis-server binds it; a few fresh picks make that harmless.
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const port = await freePort();
    try {
      return handle(await launch(port), port, directory, timeoutMs, () => launch(port));
    } catch (error) {
      lastError = error;
    }
  }
  await rm(directory, { recursive: true, force: true });
  throw lastError;
}

interface LaunchOptions {
  binary: string;
  port: number;
  directory: string;
  persistence: string[];
  timeoutMs: number;
}

/** Starts redis-server and resolves with its process once it answers PING; a server that does not is killed. */
async function launchRedis(options: LaunchOptions): Promise<ChildProcess> {
  const { port, directory, timeoutMs } = options;
  const child = spawn(
    options.binary,
    ['--port', String(port), '--bind', '127.0.0.1', ...options.persistence, '--dir', directory],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4_000);
  });
  try {
    await waitForPing(port, child, timeoutMs);
    return child;
  } catch (error) {
    await stopChild(child, 'SIGKILL', timeoutMs);
    throw new Error(`redis-server on port ${port} did not start: ${(error as Error).message} ${stderr}`.trim());
  }
}

function handle(
  first: ChildProcess,
  port: number,
  directory: string,
  timeoutMs: number,
  launch: () => Promise<ChildProcess>,
): RedisServer {
  let child = first;
  // Stop, kill and restart run one at a time, so a restart never overlaps a kill from the same test.
  let queue: Promise<void> = Promise.resolve();
  const serialise = (operation: () => Promise<void>): Promise<void> => {
    const result = queue.then(operation);
    queue = result.catch(() => {});
    return result;
  };
  const stop = (signal: NodeJS.Signals) => serialise(() => stopChild(child, signal, timeoutMs));
  let disposed: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port,
    url: `redis://127.0.0.1:${port}`,
    directory,
    stop: () => stop('SIGTERM'),
    kill: () => stop('SIGKILL'),
    restart: () =>
      serialise(async () => {
        await stopChild(child, 'SIGTERM', timeoutMs);
        child = await launch();
      }),
    [Symbol.asyncDispose]() {
      disposed ??= (async () => {
        await stop('SIGTERM');
        await rm(directory, { recursive: true, force: true });
      })();
      return disposed;
    },
  };
}

async function stopChild(child: ChildProcess, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const outcome = await Promise.race([exited.then(() => 'exited'), delay(timeoutMs).then(() => 'timeout')]);
  if (outcome === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
}

/** Resolves once the server answers PING with +PONG; rejects when it exits first or the time is up. */
async function waitForPing(port: number, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`it exited (${child.exitCode ?? child.signalCode})`);
    if (await pingOnce(port)) return;
    await delay(50);
  }
  throw new Error(`no answer to PING within ${timeoutMs} ms`);
}

function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    const finish = (value: boolean) => {
      socket.destroy();
      resolve(value);
    };
    socket.setTimeout(1_000, () => finish(false));
    socket.on('error', () => finish(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      answer += chunk.toString();
      if (answer.includes('\r\n')) finish(answer.startsWith('+PONG'));
    });
  });
}

function defaultDirectories(): string[] {
  return [...(process.env.PATH ?? '').split(path.delimiter), '/usr/bin', '/usr/local/bin', '/usr/sbin'];
}

async function findBinary(directories: readonly string[]): Promise<string | undefined> {
  for (const directory of directories.filter((entry) => entry !== '')) {
    const candidate = path.join(directory, 'redis-server');
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here; try the next directory.
    }
  }
  return undefined;
}

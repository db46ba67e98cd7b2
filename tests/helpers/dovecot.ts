import { execFile, spawn } from 'node:child_process';
import { constants, readFileSync } from 'node:fs';
import { access, chmod, mkdir, mkdtemp, open, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { freePort } from './free-port.ts';

/** The one command that makes these tests runnable; CI's `.ci/run` runs it too. */
export const dovecotInstallCommand = 'apt-get install -y --no-install-recommends dovecot-imapd';

/** A login on the private server. Written to a passwd-file, so neither part may contain `:` or a line break. */
interface DovecotUser {
  name: string;
  password: string;
}

export interface StartDovecotOptions {
  /**
   * The logins the server accepts; the first is the one `Dovecot.user` / `Dovecot.password` name.
   * @default [{ name: 'alice@example.test', password: 'alice-test-password' }]
   */
  users?: DovecotUser[];
  /**
   * How long to wait for the server to greet (on start and restart) or to go away (on stop and kill).
   * @default 15_000
   */
  timeoutMs?: number;
  /**
   * Where to look for `dovecot` and `doveadm`; tests set it to show the "not installed" message.
   * @default the directories on PATH, then /usr/sbin, /usr/local/sbin and /sbin
   */
  binaryDirectories?: string[];
}

/** A private Dovecot IMAP server on loopback, with its own configuration, mail and logs in `directory`. */
export interface Dovecot extends AsyncDisposable {
  host: '127.0.0.1';
  port: number;
  /** The first user's login name. */
  user: string;
  /** The first user's password. */
  password: string;
  /** The temporary directory holding `dovecot.conf`, `users`, `mail/`, `run/`, `state/` and `dovecot.log`. */
  directory: string;
  /** Stops the server gracefully (`doveadm stop`) and waits until the port is closed. Idempotent; keeps the mail. */
  stop(): Promise<void>;
  /** SIGKILLs the master process and all its children, as a crash would; waits until the port is closed. */
  kill(): Promise<void>;
  /** Stops the server if it is running and starts it again on the same port with the same mail. */
  restart(): Promise<void>;
  /** Stops (or, failing that, kills) the server and removes `directory`. */
  [Symbol.asyncDispose](): Promise<void>;
}

const defaultUsers: DovecotUser[] = [{ name: 'alice@example.test', password: 'alice-test-password' }];

/**
 * The special-use mailboxes every test mailbox has. `auto = create` makes Dovecot create them at a user's first
 * login, so a test can append to Archive or Drafts without creating them first.
 */
const mailboxes = [
  { name: 'Archive', specialUse: '\\Archive' },
  { name: 'Drafts', specialUse: '\\Drafts' },
  { name: 'Sent', specialUse: '\\Sent' },
  { name: 'Junk', specialUse: '\\Junk' },
] as const;

/**
 * Starts a private Dovecot (the Debian `dovecot-imapd` package) on a free loopback port, resolved once it answers
 * `* OK`. Throws a clear error, never skips, when Dovecot is not installed or the process is not root: a test that
 * needs a real IMAP server should fail loudly where it cannot get one.
 */
export async function startDovecot(options: StartDovecotOptions = {}): Promise<Dovecot> {
  const users = options.users ?? defaultUsers;
  const timeoutMs = options.timeoutMs ?? 15_000;
  const firstUser = users[0];
  if (firstUser === undefined) throw new Error('startDovecot: expected at least one user, got an empty `users` list');
  for (const user of users) {
    if (/[:\r\n]/.test(user.name) || /[:\r\n]/.test(user.password) || user.name === '') {
      throw new Error(
        `startDovecot: user names and passwords must be non-empty without ":" or line breaks, got ${JSON.stringify(user.name)}`,
      );
    }
  }
  const binaries = await findDovecotBinaries(options.binaryDirectories ?? defaultBinaryDirectories());
  if (process.getuid?.() !== 0) {
    throw new Error(
      `startDovecot: Dovecot must be started as root for this private configuration (it switches mail processes to ` +
        `the user nobody and logins to dovenull); this process runs as uid ${process.getuid?.()}. Run the integration ` +
        'tier as root, as CI does (README "Testing"); `npm run test:unit` needs no root.',
    );
  }

  const directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-dovecot-'));
  try {
    // mkdtemp makes the directory 0700; Dovecot's unprivileged processes (auth as dovecot, logins as dovenull,
    // mail as nobody) must reach the users file, the sockets and the mail below it.
    await chmod(directory, 0o755);
    const mailDirectory = path.join(directory, 'mail');
    await mkdir(mailDirectory);
    // Homes are created under here by the mail process, which runs as nobody.
    await chmod(mailDirectory, 0o777);
    await writeFile(
      path.join(directory, 'users'),
      users.map((user) => `${user.name}:{PLAIN}${user.password}\n`).join(''),
      { mode: 0o644 },
    );
    // A port that was free a moment ago can be taken before Dovecot binds it; a few fresh picks make that harmless.
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const port = await freePort();
      const configFile = path.join(directory, 'dovecot.conf');
      await writeFile(configFile, dovecotConfig(directory, port));
      try {
        await launch({ binaries, directory, configFile, port, timeoutMs });
        return createHandle({ binaries, directory, configFile, port, timeoutMs, user: firstUser });
      } catch (error) {
        lastError = error;
        if (!(error instanceof PortInUseError)) throw error;
      }
    }
    throw lastError;
  } catch (error) {
    await rm(directory, { recursive: true, force: true });
    throw error;
  }
}

interface DovecotBinaries {
  dovecot: string;
  doveadm: string;
}

interface Instance {
  binaries: DovecotBinaries;
  directory: string;
  configFile: string;
  port: number;
  timeoutMs: number;
}

class PortInUseError extends Error {}

function createHandle(instance: Instance & { user: DovecotUser }): Dovecot {
  let running = true;
  // Stop, kill and restart run one at a time, so a restart never overlaps a kill from the same test.
  let queue: Promise<void> = Promise.resolve();
  const serialise = (operation: () => Promise<void>): Promise<void> => {
    const result = queue.then(operation);
    queue = result.catch(() => {});
    return result;
  };
  const stop = async () => {
    if (!running) return;
    await stopGracefully(instance);
    running = false;
  };
  const kill = async () => {
    if (!running) return;
    await killInstance(instance);
    running = false;
  };
  let disposed: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port: instance.port,
    user: instance.user.name,
    password: instance.user.password,
    directory: instance.directory,
    stop: () => serialise(stop),
    kill: () => serialise(kill),
    restart: () =>
      serialise(async () => {
        await stop();
        await launch(instance);
        running = true;
      }),
    [Symbol.asyncDispose]() {
      disposed ??= serialise(async () => {
        // Every step runs even when one fails, so a failed graceful stop still leaves no server and no directory.
        const errors: unknown[] = [];
        try {
          await stop();
        } catch (error) {
          errors.push(error);
          try {
            await kill();
          } catch (killError) {
            errors.push(killError);
          }
        }
        await rm(instance.directory, { recursive: true, force: true }).catch((error: unknown) => errors.push(error));
        if (errors.length > 0) throw new AggregateError(errors, `could not clean up Dovecot in ${instance.directory}`);
      });
      return disposed;
    },
  };
}

/** The configuration from docs/DEPENDENCIES.md, with every path inside `directory` and listening only on `port`. */
function dovecotConfig(directory: string, port: number): string {
  const mailboxBlocks = mailboxes
    .map((mailbox) => `  mailbox ${mailbox.name} {\n    special_use = ${mailbox.specialUse}\n    auto = create\n  }\n`)
    .join('');
  return `# Written by tests/helpers/dovecot.ts: a private, throw-away IMAP server for one test.
protocols = imap
listen = 127.0.0.1
base_dir = ${directory}/run
state_dir = ${directory}/state
log_path = ${directory}/dovecot.log
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
# Dovecot delays every failed login by 2 s against password guessing; tests of wrong passwords need no such wait.
auth_failure_delay = 0
first_valid_uid = 1
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${directory}/users
}
userdb {
  driver = static
  args = uid=nobody gid=nogroup home=${directory}/mail/%u
}
mail_location = maildir:~/Maildir
namespace inbox {
  inbox = yes
${mailboxBlocks}}
service imap-login {
  chroot =
  inet_listener imap {
    address = 127.0.0.1
    port = ${port}
  }
  inet_listener imaps {
    port = 0
  }
}
`;
}

/** Debian puts dovecot in /usr/sbin, which a non-root PATH often lacks. */
function defaultBinaryDirectories(): string[] {
  return [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin', '/sbin'];
}

async function findDovecotBinaries(directories: readonly string[]): Promise<DovecotBinaries> {
  const find = async (name: string) => {
    for (const directory of directories.filter((entry) => entry !== '')) {
      const candidate = path.join(directory, name);
      try {
        await access(candidate, constants.X_OK);
        return candidate;
      } catch {
        // Not here; try the next directory.
      }
    }
    return undefined;
  };
  const dovecot = await find('dovecot');
  const doveadm = await find('doveadm');
  if (dovecot === undefined || doveadm === undefined) {
    // In CI a missing Dovecot is a broken machine, not a reason to skip: .ci/run installs it.
    const where =
      process.env.CI === 'true' ? ' (CI installs it in .ci/run, so this machine is not set up as CI expects)' : '';
    throw new Error(
      `startDovecot: the tests need a real IMAP server, but ${dovecot === undefined ? '`dovecot`' : '`doveadm`'} ` +
        `was not found in ${directories.join(', ')}${where}; install Dovecot: ${dovecotInstallCommand} (as root, after apt-get update)`,
    );
  }
  return { dovecot, doveadm };
}

/** Runs `dovecot -c <conf>` (it daemonizes and exits) and waits until the port greets with `* OK`. */
async function launch(instance: Instance): Promise<void> {
  const result = await runDaemonizing(instance);
  if (result.error !== undefined) {
    const log = await logTail(instance.directory);
    const message = `dovecot -c ${instance.configFile} failed (${result.error.message}):\n${result.stderr}\n--- dovecot.log ---\n${log}`;
    if (/Address already in use/i.test(`${result.stderr}\n${log}`)) throw new PortInUseError(message);
    throw new Error(message);
  }
  try {
    await waitForGreeting(instance.port, instance.timeoutMs);
  } catch (error) {
    const log = await logTail(instance.directory);
    // A master that runs but never greets would outlive the test (and its removed directory): kill it first.
    const masterPid = await readMasterPid(instance.directory);
    if (masterPid !== undefined && isAlive(masterPid)) await killInstance(instance).catch(() => {});
    throw new Error(`Dovecot started but did not greet on 127.0.0.1:${instance.port}\n--- dovecot.log ---\n${log}`, {
      cause: error,
    });
  }
}

/**
 * Starts `dovecot -c <conf>` and resolves when that first process exits, which it does once the master has forked
 * into the background. Its stderr goes to a file, not a pipe: the daemonized master inherits the descriptor and
 * holds it open, so a pipe (as `execFile` uses) would not close until Dovecot stops.
 */
async function runDaemonizing(instance: Instance): Promise<RunResult> {
  const stderrFile = path.join(instance.directory, 'dovecot-start.stderr');
  const stderr = await open(stderrFile, 'w');
  try {
    const child = spawn(instance.binaries.dovecot, ['-c', instance.configFile], {
      stdio: ['ignore', 'ignore', stderr.fd],
    });
    const error = await new Promise<Error | undefined>((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(new Error(`did not daemonize within ${instance.timeoutMs}ms`));
      }, instance.timeoutMs);
      child.once('error', (spawnError) => {
        clearTimeout(timer);
        resolve(spawnError);
      });
      child.once('exit', (code, signalName) => {
        clearTimeout(timer);
        resolve(code === 0 ? undefined : new Error(`exit code ${code}, signal ${signalName}`));
      });
    });
    return error === undefined ? { stderr: '' } : { error, stderr: await readFile(stderrFile, 'utf8') };
  } finally {
    await stderr.close();
  }
}

async function stopGracefully(instance: Instance): Promise<void> {
  const masterPid = await readMasterPid(instance.directory);
  const deadline = Date.now() + instance.timeoutMs;
  // The master may already be gone (killed from outside, or crashed): `doveadm stop` would fail on that, yet all
  // a stop has to ensure then is that nothing listens any more.
  if (masterPid === undefined || !isAlive(masterPid)) return waitForPortClosed(instance.port, deadline);
  const result = await run(instance.binaries.doveadm, ['-c', instance.configFile, 'stop'], instance.timeoutMs);
  if (result.error !== undefined) {
    throw new Error(`doveadm -c ${instance.configFile} stop failed (${result.error.message}):\n${result.stderr}`);
  }
  await waitUntil(() => !isAlive(masterPid), deadline, `Dovecot master ${masterPid} to exit`);
  await waitForPortClosed(instance.port, deadline);
}

async function killInstance(instance: Instance): Promise<void> {
  const masterPid = await readMasterPid(instance.directory);
  if (masterPid === undefined || !isAlive(masterPid)) {
    throw new Error(`no running Dovecot master (pid file ${instance.directory}/run/master.pid says ${masterPid})`);
  }
  // Freeze the master first so it cannot fork a new child between listing its children and killing them.
  signal(masterPid, 'SIGSTOP');
  const pids = [masterPid, ...(await descendants(masterPid))];
  for (const pid of pids) signal(pid, 'SIGKILL');
  const deadline = Date.now() + instance.timeoutMs;
  await waitUntil(() => pids.every((pid) => !isAlive(pid)), deadline, `Dovecot processes ${pids.join(', ')} to die`);
  // A crash leaves master.pid behind. Dovecot ignores a stale one, unless the pid was reused or the killed master
  // is an unreaped zombie (containers without an init): then it would refuse to start, so remove it.
  await rm(path.join(instance.directory, 'run', 'master.pid'), { force: true });
  await waitForPortClosed(instance.port, deadline);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    // Already gone is what we want.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

async function readMasterPid(directory: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt((await readFile(path.join(directory, 'run', 'master.pid'), 'utf8')).trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Every process below `root`, found by walking the parent pids in /proc (Linux; Dovecot here is Debian's). */
async function descendants(root: number): Promise<number[]> {
  const parents = new Map<number, number>();
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const parent = parentPid(entry);
    if (parent !== undefined) parents.set(Number(entry), parent);
  }
  const found: number[] = [];
  const frontier = [root];
  while (frontier.length > 0) {
    const current = frontier.pop();
    for (const [pid, parent] of parents) {
      if (parent === current && !found.includes(pid)) {
        found.push(pid);
        frontier.push(pid);
      }
    }
  }
  return found;
}

/** /proc/<pid>/stat is `pid (command) state ppid …`; the command may hold spaces or parentheses, so split after it. */
function procStat(pid: string): { state: string; parent: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const parent = Number(fields[1]);
  return state === undefined || !Number.isInteger(parent) ? undefined : { state, parent };
}

function parentPid(pid: string): number | undefined {
  return procStat(pid)?.parent;
}

/** A zombie counts as dead: nothing of it runs, and without an init in a container nobody may ever reap it. */
function isAlive(pid: number): boolean {
  const stat = procStat(String(pid));
  return stat !== undefined && stat.state !== 'Z' && stat.state !== 'X';
}

interface RunResult {
  error?: Error;
  stderr: string;
}

function run(file: string, args: string[], timeoutMs: number): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(file, args, { timeout: timeoutMs }, (error, _stdout, stderr) => {
      resolve(error === null ? { stderr } : { error, stderr });
    });
  });
}

async function logTail(directory: string): Promise<string> {
  try {
    return (await readFile(path.join(directory, 'dovecot.log'), 'utf8')).slice(-4_000);
  } catch {
    return '(no dovecot.log)';
  }
}

/**
 * Resolves once a fresh connection to `port` is greeted with `* OK`. Dovecot daemonizes before its login processes
 * are ready, so an accepted connection alone is not enough: the greeting is what says IMAP is served.
 */
async function waitForGreeting(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let attempt = 0; Date.now() < deadline; attempt += 1) {
    try {
      const greeting = await readGreeting(port, deadline - Date.now());
      if (greeting.startsWith('* OK')) return;
      lastError = new Error(`expected "* OK", got ${JSON.stringify(greeting)}`);
    } catch (error) {
      lastError = error;
    }
    await delay(retryDelayMs(attempt));
  }
  throw new Error(`no IMAP greeting on 127.0.0.1:${port} within ${timeoutMs}ms`, { cause: lastError });
}

/** The first line the server sends on a new connection. */
function readGreeting(port: number, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let received = '';
    const finish = (result: () => void) => {
      socket.destroy();
      result();
    };
    socket.setTimeout(Math.max(timeoutMs, 1), () =>
      finish(() => reject(new Error(`no greeting within ${timeoutMs}ms`))),
    );
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      received += chunk;
      const end = received.indexOf('\r\n');
      if (end >= 0) finish(() => resolve(received.slice(0, end)));
    });
    socket.once('error', (error) => finish(() => reject(error)));
    socket.once('close', () => reject(new Error(`connection closed after ${JSON.stringify(received)}`)));
  });
}

/** Resolves once connections to `port` are refused: the listener is gone, not just the master process. */
async function waitForPortClosed(port: number, deadline: number): Promise<void> {
  for (let attempt = 0; ; attempt += 1) {
    const refused = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.once('connect', () => {
        socket.destroy();
        resolve(false);
      });
      socket.once('error', () => resolve(true));
    });
    if (refused) return;
    if (Date.now() >= deadline) throw new Error(`127.0.0.1:${port} still accepts connections after Dovecot stopped`);
    await delay(retryDelayMs(attempt));
  }
}

/** Re-checks `condition` with a short growing back-off: processes exiting send no event we could wait on. */
async function waitUntil(condition: () => boolean, deadline: number, what: string): Promise<void> {
  for (let attempt = 0; !condition(); attempt += 1) {
    if (Date.now() >= deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(retryDelayMs(attempt));
  }
}

/** 10, 20, 40 … up to 200 ms between checks. */
function retryDelayMs(attempt: number): number {
  return Math.min(10 * 2 ** attempt, 200);
}

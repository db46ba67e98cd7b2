/**
 * The bubblewrap sandbox scripts run in: what it mounts (an allow-list) and whether it works on this machine.
 *
 * A sandboxed script sees a root folder that holds only what this file lists, plus what runScript adds for the one
 * run (its own script file or folder, its work folder, Node and the helpers module). Everything else on the machine
 * (the home folder, config.yaml and secrets.yaml, the data folder, other scripts' folders, Assistant's checkout)
 * does not exist for it.
 */
import { spawn } from 'node:child_process';
import { lstat, readlink, stat } from 'node:fs/promises';

/** The sandbox's bwrap executable when none is given: `bwrap` looked up on PATH. */
export const defaultBubblewrapPath = 'bwrap';

/**
 * Programs and libraries. On merged-/usr systems (Debian 12, Fedora) the top-level ones are symbolic links into
 * /usr, which the sandbox recreates as links rather than binding the same files twice.
 */
const systemFolders = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The files of /etc every run gets, never the whole of /etc (it holds shadow, ssh host keys, TLS private keys):
 * user and group names (`id`, `whoami`), the time zone, the dynamic linker's cache, and Debian's alternatives
 * (`awk` is /usr/bin/awk → /etc/alternatives/awk → /usr/bin/mawk).
 */
const baseEtcFiles = [
  '/etc/passwd',
  '/etc/group',
  '/etc/nsswitch.conf',
  '/etc/localtime',
  '/etc/ld.so.cache',
  '/etc/alternatives',
];

/**
 * What name resolution and TLS read, only for `network: true`. The certificates, not /etc/ssl: its `private/`
 * folder holds keys that a root-owned script could read (dropping capabilities does not stop an owner).
 */
const networkEtcFiles = [
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/host.conf',
  '/etc/gai.conf',
  '/etc/services',
  '/etc/protocols',
  '/etc/ssl/certs',
  '/etc/ssl/openssl.cnf',
  '/etc/ca-certificates',
  '/etc/pki/tls/certs',
  '/etc/pki/ca-trust',
];

/**
 * Namespaces and process settings of every sandboxed run: every namespace unshared (network too unless the script
 * asks for it), no capabilities even for root, killed with its parent, and a new session so it cannot push input
 * into the terminal Assistant runs in (TIOCSTI).
 */
const isolationArguments = ['--unshare-all', '--die-with-parent', '--new-session', '--cap-drop', 'ALL'];

/** Options of {@link systemMountArguments}. */
export interface SystemMountOptions {
  /** Adds what DNS and TLS need. @default false */
  network?: boolean;
}

/**
 * bwrap arguments for the isolation and the system part of the allow-list: programs and libraries read-only, the
 * few /etc files listed above, a private /dev, /proc and an empty /tmp. Paths missing on this machine are left out.
 */
export async function systemMountArguments(options: SystemMountOptions = {}): Promise<string[]> {
  const mounts = [...isolationArguments, ...(options.network === true ? ['--share-net'] : [])];
  for (const folder of systemFolders) {
    const info = await lstat(folder).catch(() => undefined);
    if (info?.isSymbolicLink()) mounts.push('--symlink', await readlink(folder), folder);
    else if (info?.isDirectory()) mounts.push('--ro-bind', folder, folder);
  }
  for (const file of [...baseEtcFiles, ...(options.network === true ? networkEtcFiles : [])]) {
    // stat follows links: /etc/resolv.conf often points into /run, which the bind resolves (and the sandbox lacks).
    if (await stat(file).catch(() => undefined)) mounts.push('--ro-bind', file, file);
  }
  mounts.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp');
  return mounts;
}

/**
 * The last mount argument: bwrap builds the sandbox's root in a writable tmpfs (creating /etc and the folders above
 * each bind); this makes it read-only, leaving writable only the mounts that are (/tmp, /dev, the work folder).
 */
export const sealRootArguments: readonly string[] = ['--remount-ro', '/'];

/** Whether scripts can run under bubblewrap here, and if not, why. */
export type ScriptSandboxStatus = { usable: true } | { usable: false; problem: string };

/** Options of {@link checkBubblewrap}. */
export interface CheckBubblewrapOptions {
  /**
   * The bwrap executable. For tests that need a missing one; Assistant always uses the default.
   * @default 'bwrap' (on PATH)
   */
  bubblewrapPath?: string;
}

const probeTimeoutMs = 10_000;
/** Trials that worked, and trials still running (callers meanwhile share them), by executable. */
const probes = new Map<string, Promise<ScriptSandboxStatus>>();

/**
 * Tries the sandbox: Linux, the bwrap executable, and a trial run with the same namespaces and mounts as a real
 * script (bwrap is often installed in containers that forbid user namespaces, where it fails at once). A trial that
 * works is kept for the process; one that fails is not, so the next call tries again (bubblewrap installed since, a
 * trial that timed out under load). Calls while a trial runs share it.
 */
export function checkBubblewrap(options: CheckBubblewrapOptions = {}): Promise<ScriptSandboxStatus> {
  const executable = options.bubblewrapPath ?? defaultBubblewrapPath;
  let probe = probes.get(executable);
  if (probe === undefined) {
    const started = probeBubblewrap(executable);
    probe = started;
    probes.set(executable, started);
    const forget = () => {
      if (probes.get(executable) === started) probes.delete(executable);
    };
    // A trial that threw is forgotten too; its caller gets the error.
    void started.then((status) => (status.usable ? undefined : forget()), forget);
  }
  return probe;
}

async function probeBubblewrap(executable: string): Promise<ScriptSandboxStatus> {
  if (process.platform !== 'linux') {
    return { usable: false, problem: `bubblewrap runs only on Linux, and this is ${process.platform}` };
  }
  const argv = [
    ...(await systemMountArguments()),
    ...sealRootArguments,
    '--clearenv',
    '--setenv',
    'PATH',
    '/usr/bin:/bin',
    '--',
    'true',
  ];
  return new Promise((resolve) => {
    const child = spawn(executable, argv, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin' },
    });
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-1_000);
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), probeTimeoutMs);
    // A missing executable emits 'error' (and no 'close' worth waiting for); a bwrap that cannot create its
    // namespaces exits non-zero with the reason on stderr.
    child.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      const why = error.code === 'ENOENT' ? 'was not found' : `could not be started (${error.code ?? error.message})`;
      resolve({ usable: false, problem: `the bubblewrap executable \`${executable}\` ${why}` });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve({ usable: true });
      const how = code === null ? `was killed by ${signal ?? 'a signal'}` : `exited with code ${code}`;
      const reason = stderr.trim().split('\n').at(-1);
      resolve({
        usable: false,
        problem: `a trial sandbox failed: \`${executable}\` ${how}${reason ? `: ${reason}` : ''}`,
      });
    });
  });
}

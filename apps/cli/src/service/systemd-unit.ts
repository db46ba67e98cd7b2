import os from 'node:os';
import path from 'node:path';

// The systemd user unit `assistant service install` writes. Pure text: no systemd is needed to make or test it.

/** The unit's file name; `systemctl --user … assistant` finds it by this name. */
export const unitName = 'assistant.service';

/**
 * Seconds systemd waits after SIGTERM before it kills what is left, beyond the worker's grace and `assistant
 * start`'s own margin (start-supervisor.js's stopMarginMs, 5 s): the supervisor kills a child that overstays at
 * grace + 5 s, and needs a moment after that to write supervisor.json and exit.
 */
const stopSlackSeconds = 15;

export interface SystemdUnitOptions {
  /** The Node binary to run: the pinned Node 24 from node_modules. */
  nodeBinary: string;
  /** apps/cli/src/main.ts. */
  cliMain: string;
  /** The config file, absolute. */
  configFile: string;
  /** --data, when the command line or ASSISTANT_DATA gave one; the config's data_dir otherwise. */
  dataDir?: string;
  /** The directory the service runs in: the config file's. */
  workingDirectory: string;
  /** `worker.shutdown_grace` in ms: how long running tasks get to finish on stop. */
  shutdownGraceMs: number;
}

/**
 * The unit text. `assistant start` runs as the service's main process with no npm or launcher around it (npm would
 * sit between systemd and the supervisor, and its signal handling is not ours): the pinned Node runs main.ts, which
 * replaces itself with the plain-JS supervisor in the same pid (main.ts), so MainPID is the supervisor.
 * KillMode=mixed sends SIGTERM to that process alone, which stops the server and the worker in order and waits for
 * them (running tasks get `worker.shutdown_grace`); only what outlives TimeoutStopSec gets SIGKILL, the whole group.
 */
export function systemdUnit(options: SystemdUnitOptions): string {
  const timeoutStopSeconds = Math.ceil(options.shutdownGraceMs / 1_000) + 5 + stopSlackSeconds;
  const execStart = [
    options.nodeBinary,
    options.cliMain,
    'start',
    '--config',
    options.configFile,
    ...(options.dataDir === undefined ? [] : ['--data', options.dataDir]),
  ]
    .map(execArgument)
    .join(' ');
  return [
    '# Written by `assistant service install`; `assistant service install` again rewrites it (edits are lost).',
    '# Runs `assistant start` for one config; docs/operations.md explains each setting.',
    '[Unit]',
    `Description=Assistant (${unitValue(options.configFile)})`,
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    'Type=simple',
    `WorkingDirectory=${pathValue(options.workingDirectory)}`,
    `ExecStart=${execStart}`,
    'Restart=on-failure',
    'RestartSec=5s',
    '# SIGTERM to `assistant start` only: it stops the server and the worker itself and waits for running tasks.',
    'KillMode=mixed',
    'KillSignal=SIGTERM',
    `# worker.shutdown_grace (${Math.ceil(options.shutdownGraceMs / 1_000)} s) + start's 5 s margin + ${stopSlackSeconds} s to exit.`,
    `TimeoutStopSec=${timeoutStopSeconds}`,
    'UMask=0077',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ].join('\n');
}

/** Where the unit goes: $XDG_CONFIG_HOME/systemd/user/assistant.service, else ~/.config/…. */
export function unitFilePath(env: NodeJS.ProcessEnv): string {
  const configHome =
    env.XDG_CONFIG_HOME !== undefined && path.isAbsolute(env.XDG_CONFIG_HOME)
      ? env.XDG_CONFIG_HOME
      : path.join(env.HOME ?? os.homedir(), '.config');
  return path.join(configHome, 'systemd', 'user', unitName);
}

/**
 * One ExecStart argument, quoted as systemd.service(5) reads them: double quotes keep spaces in one argument, `\` and
 * `"` are escaped inside them, `%` is doubled (specifiers: systemd.unit(5)) and `$` too (environment variables).
 */
export function execArgument(argument: string): string {
  assertPrintable(argument);
  const escaped = argument
    .replaceAll('\\', '\\\\')
    .replaceAll('"', '\\"')
    .replaceAll('%', '%%')
    .replaceAll('$', '$$$$');
  return `"${escaped}"`;
}

/** A path setting's value (WorkingDirectory=): one absolute path, spaces as they are, `%` doubled. */
function pathValue(value: string): string {
  assertPrintable(value);
  if (!path.isAbsolute(value)) throw new RangeError(`Expected an absolute path, got \`${value}\``);
  return value.replaceAll('%', '%%');
}

/** Free text (Description=): `%` doubled. */
function unitValue(value: string): string {
  assertPrintable(value);
  return value.replaceAll('%', '%%');
}

function assertPrintable(value: string): void {
  // A newline would end the setting and start another: a path that holds one could add settings of its own.
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) {
    throw new RangeError(`A path in a systemd unit cannot hold control characters, got ${JSON.stringify(value)}`);
  }
}

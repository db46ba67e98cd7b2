import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssistantError } from '@assistant/errors';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { systemdUnit, unitFilePath, unitName } from '../service/systemd-unit.ts';

export interface ServiceCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
}

export interface ServiceInstallOptions extends ServiceCommandOptions {
  /** Print the unit instead of writing and enabling it. */
  print?: boolean;
}

const cliMain = fileURLToPath(new URL('../main.ts', import.meta.url));

/**
 * `assistant service install`: writes the systemd user unit for `assistant start` with this config and enables it
 * (`systemctl --user daemon-reload`, then `enable --now`). Where systemctl is missing or has no user manager to talk
 * to (a container, a session without lingering), the unit stays written and the error says how to enable it by hand.
 */
export async function serviceInstallCommand(options: ServiceInstallOptions): Promise<void> {
  const { context } = options;
  const { config } = await loadCliConfig(options);
  const unit = systemdUnit({
    nodeBinary: pinnedNode(),
    cliMain,
    configFile: config.paths.configFile,
    ...(options.globals.dataDir === undefined ? {} : { dataDir: config.paths.dataDir }),
    workingDirectory: path.dirname(config.paths.configFile),
    shutdownGraceMs: config.worker.shutdownGraceMs,
  });
  if (options.print) {
    context.stdout.write(unit);
    return;
  }
  const file = unitFilePath(context.env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, unit, { mode: 0o644 });
  await rename(temporary, file);
  context.stdout.write(`wrote ${file}\n`);
  await systemctl(context, ['daemon-reload'], file);
  await systemctl(context, ['enable', '--now', unitName], file);
  context.stdout.write(
    `enabled and started ${unitName}: \`systemctl --user status assistant\`, logs: \`journalctl --user -u assistant -f\`\n` +
      'to keep it running after you log out: `loginctl enable-linger`\n',
  );
}

/** `assistant service uninstall`: stops and disables the unit, then removes its file. */
export async function serviceUninstallCommand(options: ServiceCommandOptions): Promise<void> {
  const { context } = options;
  const file = unitFilePath(context.env);
  if (!existsSync(file)) {
    context.stdout.write(`no ${file}: nothing to uninstall\n`);
    return;
  }
  await systemctl(context, ['disable', '--now', unitName], file, 'uninstall');
  await rm(file, { force: true });
  await systemctl(context, ['daemon-reload'], file, 'uninstall');
  context.stdout.write(`stopped and disabled ${unitName}, removed ${file}\n`);
}

/** `assistant service status`: `systemctl --user status assistant`, its output as it is. */
export async function serviceStatusCommand(options: ServiceCommandOptions): Promise<number> {
  const { context } = options;
  const file = unitFilePath(context.env);
  if (!existsSync(file)) {
    context.stdout.write(`not installed: no ${file} (\`assistant service install\` writes it)\n`);
    return 3;
  }
  const result = await run(context, ['status', '--no-pager', unitName]);
  if (result.error !== undefined) throw notEnabled(file, result.error, 'status');
  context.stdout.write(result.stdout);
  if (result.stderr !== '') context.stderr.write(result.stderr);
  // systemctl's own code: 0 running, 3 stopped.
  return result.code;
}

/** The Node 24 the project pins (the `node` devDependency), the same one bin/assistant.js re-runs on. */
function pinnedNode(): string {
  try {
    const manifest = createRequire(import.meta.url).resolve('node/package.json');
    const binary = path.join(path.dirname(manifest), 'bin', 'node');
    if (existsSync(binary)) return binary;
  } catch {
    // Not installed: said below.
  }
  throw new AssistantError('SERVICE_NOT_ENABLED', 'the Node 24 the project pins is not in node_modules', {
    hint: 'run `npm ci` in the Assistant directory first (it installs Node 24 into node_modules/node)',
  });
}

interface SystemctlRun {
  code: number;
  stdout: string;
  stderr: string;
  /** Why systemctl could not be used at all: missing, or no user manager. */
  error?: string;
}

async function systemctl(
  context: CliContext,
  args: readonly string[],
  file: string,
  action: 'install' | 'uninstall' = 'install',
): Promise<void> {
  const result = await run(context, args);
  if (result.error !== undefined) throw notEnabled(file, result.error, action);
  if (result.code !== 0) {
    throw new AssistantError(
      'SERVICE_NOT_ENABLED',
      `\`systemctl --user ${args.join(' ')}\` failed (exit ${result.code}): ${result.stderr.trim() || result.stdout.trim()}`,
      {
        hint: `the unit is ${action === 'install' ? 'written' : 'still'} at ${file}; \`journalctl --user -u assistant\` may say more`,
      },
    );
  }
}

function run(context: CliContext, args: readonly string[]): Promise<SystemctlRun> {
  return new Promise((resolve) => {
    // The PATH of the command line that asked, so a person's (or a test's) systemctl is the one used.
    const child = spawn('systemctl', ['--user', ...args], {
      env: context.env,
      cwd: context.cwd,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    child.once('error', (error: NodeJS.ErrnoException) => {
      resolve({
        code: 127,
        stdout,
        stderr,
        error: error.code === 'ENOENT' ? 'systemctl is not on PATH (no systemd here?)' : error.message,
      });
    });
    child.once('close', (code) => {
      // What systemctl says when there is no user manager or session bus (containers, `su`, SSH without lingering).
      const noBus =
        /Failed to connect to (user scope )?bus|\$DBUS_SESSION_BUS_ADDRESS|XDG_RUNTIME_DIR|No medium found/i;
      if (code !== 0 && noBus.test(stderr)) {
        resolve({
          code: code ?? 1,
          stdout,
          stderr,
          error: `systemctl has no user manager to talk to: ${stderr.trim()}`,
        });
      } else resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

function notEnabled(file: string, reason: string, action: 'install' | 'uninstall' | 'status'): AssistantError {
  const steps =
    action === 'install'
      ? [
          `the unit is written at ${file}; enable it where systemd runs your user session:`,
          '  systemctl --user daemon-reload',
          `  systemctl --user enable --now ${unitName}`,
          '  loginctl enable-linger "$USER"   # keep it running when you are logged out',
          'or run `assistant start` under your own supervisor',
        ]
      : action === 'uninstall'
        ? [
            'stop it by hand where systemd runs your user session:',
            `  systemctl --user disable --now ${unitName}`,
            `  rm ${JSON.stringify(file)} && systemctl --user daemon-reload`,
          ]
        : [`the unit is at ${file}; ask systemd where your user session runs: systemctl --user status ${unitName}`];
  return new AssistantError(
    'SERVICE_NOT_ENABLED',
    `${action === 'install' ? `wrote ${file}, but could not enable it` : `could not ${action === 'status' ? 'ask about' : 'stop'} ${unitName}`}: ${reason}`,
    { hint: steps.join('\n') },
  );
}

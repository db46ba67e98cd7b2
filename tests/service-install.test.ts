// `assistant service install|uninstall|status` through the real CLI, with a fake `systemctl` on PATH that records
// its arguments (our boundary with systemd), and systemd's own `systemd-analyze verify` on the unit where installed.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliMain, repoRoot, runCli as runCliProcess } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const pinnedNode = path.join(repoRoot, 'node_modules', 'node', 'bin', 'node');

/** A config in a directory whose name needs quoting in a unit: a space, a `%` and a `$`. */
async function setup(dir: TempDir) {
  const home = path.join(dir.path, 'my 100% $assistant');
  await mkdir(home, { recursive: true });
  const config = path.join(home, 'config.yaml');
  await writeFile(config, 'data_dir: ./data\nworker:\n  shutdown_grace: 40s\n');
  const xdg = path.join(dir.path, 'xdg');
  return { home, config, xdg, unitFile: path.join(xdg, 'systemd', 'user', 'assistant.service') };
}

/** A `systemctl` that appends its arguments to a log, one call a line, and exits with `code` after printing `stderr`. */
async function fakeSystemctl(dir: TempDir, options: { code?: number; stderr?: string } = {}) {
  const bin = path.join(dir.path, 'bin');
  await mkdir(bin, { recursive: true });
  const log = path.join(dir.path, 'systemctl.log');
  await writeFile(
    path.join(bin, 'systemctl'),
    `#!/bin/sh\necho "$*" >> '${log}'\n${options.stderr ? `echo '${options.stderr}' >&2\n` : ''}exit ${options.code ?? 0}\n`,
    { mode: 0o755 },
  );
  return { bin, calls: async () => (await readFile(log, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean) };
}

/** The CLI as a process, with room for a loaded machine (each start of it loads the config and every manifest). */
const runCli = (args: readonly string[], options: Parameters<typeof runCliProcess>[1] = {}) =>
  runCliProcess(args, { timeoutMs: 50_000, ...options });

describe('assistant service', () => {
  it('--print prints a unit that runs the pinned Node on main.ts start, quoted for systemd', async () => {
    await using dir = await tempDir();
    const { home, config, xdg, unitFile } = await setup(dir);
    const run = await runCli(['service', 'install', '--print', '--config', config], {
      cwd: dir.path,
      env: { XDG_CONFIG_HOME: xdg },
    });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const quoted = (value: string) => `"${value.replaceAll('%', '%%').replaceAll('$', () => '$$')}"`;
    const lines = run.stdout.split('\n');
    expect(lines).toContain(`ExecStart=${quoted(pinnedNode)} ${quoted(cliMain)} "start" "--config" ${quoted(config)}`);
    expect(lines).toContain(`WorkingDirectory=${home.replaceAll('%', '%%')}`);
    expect(lines).toContain('Restart=on-failure');
    expect(lines).toContain('KillMode=mixed');
    // 40 s of grace + start's 5 s margin + 15 s to exit.
    expect(lines).toContain('TimeoutStopSec=60');
    expect(run.stdout).not.toMatch(/\bnpm\b/);
    // Printed, not written.
    expect(existsSync(unitFile)).toBe(false);

    // systemd's own parser, where this machine has it: no unbalanced quote, no unknown specifier.
    const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
    if (analyze.status === 0) {
      const unit = path.join(dir.path, 'assistant.service');
      await writeFile(unit, run.stdout);
      const verify = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
      expect(verify.stderr).toBe('');
      expect(verify.status).toBe(0);
    }
  }, 60_000);

  it('install writes the unit under XDG_CONFIG_HOME and enables it; uninstall and status ask systemctl', async () => {
    await using dir = await tempDir();
    const { config, xdg, unitFile } = await setup(dir);
    const systemctl = await fakeSystemctl(dir);
    const env = { XDG_CONFIG_HOME: xdg, PATH: `${systemctl.bin}:${process.env.PATH ?? ''}` };
    const printed = await runCli(['service', 'install', '--print', '--config', config], { cwd: dir.path, env });
    const install = await runCli(['service', 'install', '--config', config], { cwd: dir.path, env });
    expect(install.stderr).toBe('');
    expect(install.code).toBe(0);
    expect(install.stdout).toContain(`wrote ${unitFile}`);
    expect(await readFile(unitFile, 'utf8')).toBe(printed.stdout);
    expect(await systemctl.calls()).toEqual(['--user daemon-reload', '--user enable --now assistant.service']);

    const status = await runCli(['service', 'status'], { cwd: dir.path, env });
    expect(status.code).toBe(0);
    const uninstall = await runCli(['service', 'uninstall'], { cwd: dir.path, env });
    expect(uninstall.code).toBe(0);
    expect(existsSync(unitFile)).toBe(false);
    expect((await systemctl.calls()).slice(2)).toEqual([
      '--user status --no-pager assistant.service',
      '--user disable --now assistant.service',
      '--user daemon-reload',
    ]);
    // Four CLI processes: seconds each on a loaded machine.
  }, 150_000);

  it('says clearly when there is no systemctl or no user manager, and prints the manual steps', async () => {
    await using dir = await tempDir();
    const { config, xdg, unitFile } = await setup(dir);
    const empty = path.join(dir.path, 'empty-bin');
    await mkdir(empty);
    const missing = await runCli(['service', 'install', '--config', config], {
      cwd: dir.path,
      env: { XDG_CONFIG_HOME: xdg, PATH: empty },
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain(
      `assistant: wrote ${unitFile}, but could not enable it: systemctl is not on PATH (no systemd here?)`,
    );
    expect(missing.stderr).toContain(
      '  systemctl --user daemon-reload\n  systemctl --user enable --now assistant.service',
    );
    expect(existsSync(unitFile)).toBe(true);

    const systemctl = await fakeSystemctl(dir, {
      code: 1,
      stderr: 'Failed to connect to bus: No medium found',
    });
    const noBus = await runCli(['service', 'install', '--config', config], {
      cwd: dir.path,
      env: { XDG_CONFIG_HOME: xdg, PATH: `${systemctl.bin}:${process.env.PATH ?? ''}` },
    });
    expect(noBus.code).toBe(1);
    expect(noBus.stderr).toContain(
      'could not enable it: systemctl has no user manager to talk to: Failed to connect to bus',
    );
    expect(noBus.stderr).toContain('hint: the unit is written at');
  }, 150_000);
});

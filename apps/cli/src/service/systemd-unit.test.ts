import { describe, expect, it } from 'vitest';
import { execArgument, systemdUnit, unitFilePath } from './systemd-unit.ts';

describe('systemdUnit', () => {
  it('quotes every ExecStart argument as systemd reads it: spaces kept, \\ " escaped, % and $ doubled', () => {
    expect(execArgument('/home/me/my assistant/config.yaml')).toBe('"/home/me/my assistant/config.yaml"');
    expect(execArgument('/a "b"\\c')).toBe('"/a \\"b\\"\\\\c"');
    expect(execArgument('/100%/$HOME')).toBe('"/100%%/$$HOME"');
    expect(() => execArgument('/a\nExecStartPre=/bin/sh')).toThrow(/control characters/);
  });

  it('runs the pinned Node on main.ts start with the config, stops as start does, and restarts on failure', () => {
    const unit = systemdUnit({
      nodeBinary: '/srv/assistant/node_modules/node/bin/node',
      cliMain: '/srv/assistant/apps/cli/src/main.ts',
      configFile: '/home/me/my 100% assistant/config.yaml',
      dataDir: '/var/lib/assistant data',
      workingDirectory: '/home/me/my 100% assistant',
      shutdownGraceMs: 45_000,
    });
    const lines = unit.split('\n');
    expect(lines).toContain(
      'ExecStart="/srv/assistant/node_modules/node/bin/node" "/srv/assistant/apps/cli/src/main.ts" "start" "--config" "/home/me/my 100%% assistant/config.yaml" "--data" "/var/lib/assistant data"',
    );
    expect(lines).toContain('WorkingDirectory=/home/me/my 100%% assistant');
    expect(lines).toContain('Restart=on-failure');
    expect(lines).toContain('KillMode=mixed');
    // 45 s of grace + start's 5 s margin + 15 s to exit.
    expect(lines).toContain('TimeoutStopSec=65');
    expect(lines).toContain('WantedBy=default.target');
    expect(unit).not.toMatch(/npm/);
  });

  it('goes under $XDG_CONFIG_HOME, else ~/.config', () => {
    expect(unitFilePath({ XDG_CONFIG_HOME: '/x/conf', HOME: '/home/me' })).toBe(
      '/x/conf/systemd/user/assistant.service',
    );
    expect(unitFilePath({ HOME: '/home/me' })).toBe('/home/me/.config/systemd/user/assistant.service');
    // The XDG spec: a relative value is invalid and ignored.
    expect(unitFilePath({ XDG_CONFIG_HOME: 'conf', HOME: '/home/me' })).toBe(
      '/home/me/.config/systemd/user/assistant.service',
    );
  });
});

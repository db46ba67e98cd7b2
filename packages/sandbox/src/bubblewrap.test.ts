import { chmod, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkBubblewrap, systemMountArguments } from './bubblewrap.ts';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'bubblewrap-'));
});

afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

/** The destinations of every bind (`--ro-bind SRC DEST`) in a list of bwrap arguments. */
function boundPaths(argv: readonly string[]): string[] {
  return argv.flatMap((argument, index) => (argument === '--ro-bind' ? [argv[index + 2] ?? ''] : []));
}

describe('systemMountArguments', () => {
  it("binds no folder that holds people's files, and the DNS and TLS files only with network", async () => {
    const offline = await systemMountArguments();
    const online = await systemMountArguments({ network: true });
    for (const argv of [offline, online]) {
      for (const bound of boundPaths(argv)) {
        expect(['/', '/etc', '/home', '/root', '/var', '/tmp', '/etc/ssl', '/etc/ssl/private']).not.toContain(bound);
        expect(bound).toMatch(/^\/(usr|bin|sbin|lib|lib32|lib64|libx32|etc\/.+)$/);
      }
      expect(argv.slice(-6)).toEqual(['--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp']);
      expect(argv).toEqual(expect.arrayContaining(['--unshare-all', '--die-with-parent', '--new-session']));
      expect(argv.join(' ')).toContain('--cap-drop ALL');
    }
    expect(offline).not.toContain('--share-net');
    expect(online).toContain('--share-net');
    expect(boundPaths(offline)).not.toContain('/etc/resolv.conf');
    if (process.platform === 'linux') expect(boundPaths(online)).toContain('/etc/resolv.conf');
  });
});

describe('checkBubblewrap', () => {
  it('says the executable was not found when it is missing', async () => {
    const missing = path.join(directory, 'no-such-bwrap');
    expect(await checkBubblewrap({ bubblewrapPath: missing })).toEqual({
      usable: false,
      problem:
        process.platform === 'linux'
          ? `the bubblewrap executable \`${missing}\` was not found`
          : `bubblewrap runs only on Linux, and this is ${process.platform}`,
    });
  });

  it('quotes the last line bwrap wrote when its trial sandbox fails', async () => {
    // What bwrap says in a container that denies user namespaces.
    const denied = path.join(directory, 'bwrap');
    await writeFile(
      denied,
      '#!/bin/sh\necho "bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n',
    );
    await chmod(denied, 0o755);
    const status = await checkBubblewrap({ bubblewrapPath: denied });
    expect(status).toEqual({
      usable: false,
      problem:
        process.platform === 'linux'
          ? `a trial sandbox failed: \`${denied}\` exited with code 1: bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.`
          : `bubblewrap runs only on Linux, and this is ${process.platform}`,
    });
  });

  it('tries again after a failed trial, and keeps one that worked', async () => {
    if (process.platform !== 'linux') return;
    // A stand-in for bwrap that passes the trial (it exits 0), reached through a link made between two checks.
    const working = path.join(directory, 'fake-bwrap');
    await writeFile(working, '#!/bin/sh\nexit 0\n');
    await chmod(working, 0o755);
    const later = path.join(directory, 'bwrap-installed-later');
    expect(await checkBubblewrap({ bubblewrapPath: later })).toEqual({
      usable: false,
      problem: `the bubblewrap executable \`${later}\` was not found`,
    });
    await symlink(working, later);
    expect(await checkBubblewrap({ bubblewrapPath: later })).toEqual({ usable: true });
    // A success is kept: the trial does not run again even once the link is gone.
    await rm(later);
    expect(await checkBubblewrap({ bubblewrapPath: later })).toEqual({ usable: true });
  });
});

// checkBubblewrap runs its trial sandbox as a child process (a stand-in bwrap here), so it is tested here, not in
// packages/sandbox.
import { chmod, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { checkBubblewrap } from '@assistant/sandbox';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'bubblewrap-'));
});

afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
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

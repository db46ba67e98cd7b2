import { describe, expect, it } from 'vitest';
import { systemMountArguments } from './bubblewrap.ts';

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

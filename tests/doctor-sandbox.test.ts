// `assistant doctor` against the real bubblewrap on this machine. The refusal and warning paths, which need no
// bubblewrap, are unit tests beside checkScriptSandbox in apps/cli.
import { describe, expect, it } from 'vitest';
import { requireBubblewrap } from './helpers/bubblewrap.ts';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('assistant doctor: script sandbox', () => {
  it('says ok when bubblewrap works and scripts are configured', async () => {
    await requireBubblewrap();
    await using dir = await tempDir();
    await dir.write('config.yaml', 'data_dir: ./data\nscripts:\n  hello:\n    shell: echo hello\n');
    const run = await runCli(['doctor'], { cwd: dir.path });
    expect(run.stdout).toContain(
      'ok   sandbox: scripts run sandboxed by bubblewrap (they see only system files, their own file and work folder)\n',
    );
    expect(run.code).toBe(0);
  });
});

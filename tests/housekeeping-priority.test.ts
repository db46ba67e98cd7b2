// Priority 1 is reserved for chat (docs/queue.md): housekeeping is maintenance and runs after the owner's work.
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('system housekeeping', () => {
  it('is enqueued at priority 8, after classification and actions and never at the chat priority', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', 'data_dir: ./data\n');
    const triggered = await runCli(['trigger', 'system', 'housekeeping'], { cwd: dir.path });
    expect(triggered.stderr).toBe('');
    const listed = await runCli(['queue', 'ls', '--json'], { cwd: dir.path });
    const tasks = JSON.parse(listed.stdout) as { type: string; priority: number }[];
    expect(tasks.map((task) => [task.type, task.priority])).toEqual([['system.housekeeping.run', 8]]);
  });
});

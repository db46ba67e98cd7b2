// The worker and the server import handler modules on first use, so a module with a syntax error would only show
// when its first task fails. `assistant start` imports every handler first (in its short-lived preflight), and
// refuses to start anything, with the manifest's file and line, as `assistant config check` does.
import { describe, expect, it } from 'vitest';
import { runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

describe('assistant start', () => {
  it('refuses a handler module that does not load before it starts the server or the worker', async () => {
    await using dir = await tempDir();
    await dir.write('custom/broken/manifest.yaml', 'domain: broken\ntasks:\n  run: {handler: ./src/run.ts#run}\n');
    await dir.write('custom/broken/src/run.ts', 'export async function run( {\n');
    await dir.write(
      'config.yaml',
      'data_dir: ./data\nserver: {port: 0}\nintegration_dirs: [./custom]\nintegrations:\n  - {type: broken, name: b}\n',
    );
    const run = await runCli(['start'], { cwd: dir.path });
    expect(run.stderr).toMatch(
      /custom\/broken\/manifest\.yaml:3:\d+: tasks\.run\.handler: \.\/src\/run\.ts cannot be loaded/,
    );
    expect(run.stdout).not.toContain('started');
    expect(run.code).toBe(2);
  });
});

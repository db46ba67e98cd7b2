import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkScriptSandbox } from './check-script-sandbox.ts';
import { formatDoctorCheck } from './doctor-check.ts';

const hint =
  '     hint: install bubblewrap (apt-get install bubblewrap) and restart, or accept unsandboxed scripts with `worker.sandbox: none`';

let directory: string;

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), 'check-script-sandbox-'));
});

afterEach(async () => {
  await rm(directory, { recursive: true, force: true });
});

// The ok path needs a working bubblewrap, so it is an integration test: tests/doctor-sandbox.test.ts.
describe('checkScriptSandbox', () => {
  it('fails with a hint when bubblewrap is missing and scripts are configured, and warns when none are', async () => {
    const missing = path.join(directory, 'no-such-bwrap');
    const failed = await checkScriptSandbox({ mode: 'bubblewrap', scriptCount: 2, bubblewrapPath: missing });
    expect(failed.ok).toBe(false);
    expect(formatDoctorCheck(failed)).toBe(
      `FAIL sandbox: scripts will not run: they need the bubblewrap sandbox, and the bubblewrap executable \`${missing}\` was not found\n${hint}`,
    );
    const warned = await checkScriptSandbox({ mode: 'bubblewrap', scriptCount: 0, bubblewrapPath: missing });
    expect(warned.ok).toBe(true);
    expect(formatDoctorCheck(warned)).toBe(
      `warn sandbox: scripts will not run: they need the bubblewrap sandbox, and the bubblewrap executable \`${missing}\` was not found (none are configured yet)\n${hint}`,
    );
  });

  it('warns when the config turns the sandbox off, without trying bubblewrap', async () => {
    const check = await checkScriptSandbox({
      mode: 'none',
      scriptCount: 1,
      bubblewrapPath: path.join(directory, 'no-such-bwrap'),
    });
    expect(check.ok).toBe(true);
    expect(formatDoctorCheck(check)).toBe(
      'warn sandbox: scripts run unsandboxed (worker.sandbox: none): they can read and write whatever Assistant can, secrets.yaml and the data folder included\n' +
        '     hint: install bubblewrap (apt-get install bubblewrap) and remove `sandbox: none`',
    );
  });
});

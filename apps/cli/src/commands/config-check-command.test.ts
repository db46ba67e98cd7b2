import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { configCheckCommand } from './config-check-command.ts';

const fixtures = fileURLToPath(new URL('../../../../tests/fixtures/integrations/custom', import.meta.url));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-config-check-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function check(config: string): Promise<string> {
  await writeFile(path.join(dir, 'config.yaml'), config);
  let out = '';
  const context: CliContext = {
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: () => true },
    env: { TZ: 'UTC' },
    cwd: dir,
  };
  await configCheckCommand({
    globals: { configPath: path.join(dir, 'config.yaml'), dataDir: undefined },
    context,
    now: new Date('2030-01-01T00:10:00Z'),
  });
  return out;
}

describe('assistant config check', () => {
  it('lists next runs only for instances the server will schedule', async () => {
    const out = await check(`data_dir: ./data
integration_dirs: [${JSON.stringify(fixtures)}]
integrations:
  - {type: greeter, name: friendly, schedule: {every: 45m}}
  - {type: greeter, name: paused, enabled: false, schedule: {every: 45m}}
  - type: mailbox
    name: quiet
    schedule: {every: 30m}
    platforms: {inbox: {enabled: false}}
`);
    const lines = out.split('\n');
    const after = (name: string) => lines[lines.findIndex((line) => line.startsWith(`    ${name} (`)) + 1];
    expect(after('friendly')).toMatch(/^ {6}next runs: \S+ \S+ \S+, /);
    expect(out).toContain(
      '    paused (greeter), disabled, platforms: people, cards, every 45m\n      next runs: none while disabled\n',
    );
    expect(after('quiet')).toBe('      next runs: none: no platform is enabled');
  });
});

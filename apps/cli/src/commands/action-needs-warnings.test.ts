import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { CliContext } from '../cli-context.ts';
import { configCheckCommand } from './config-check-command.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-action-needs-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function check(config: string): Promise<{ stdout: string; stderr: string }> {
  await writeFile(path.join(dir, 'config.yaml'), config);
  await mkdir(path.join(dir, 'Maildir', 'cur'), { recursive: true });
  let stdout = '';
  let stderr = '';
  const context: CliContext = {
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
    env: { TZ: 'UTC' },
    cwd: dir,
  };
  await configCheckCommand({ globals: { configPath: path.join(dir, 'config.yaml'), dataDir: undefined }, context });
  return { stdout, stderr };
}

describe('assistant config check: actions an instance cannot run', () => {
  it('warns about a rule whose action needs a setting its instance lacks (unsubscribe, send_reply without smtp:)', async () => {
    const { stdout, stderr } = await check(`data_dir: ./data
llms:
  default: {base_url: "http://127.0.0.1:9/v1", model: m}
integrations:
  - type: email
    name: local
    maildir: ./Maildir
    username: alice@example.test
    platforms:
      inbox:
        automations:
          - {name: tidy, when: {newsletter: true}, then: archive}
          - {name: leave lists, when: {has_list_unsubscribe: true}, then: unsubscribe, approval: required}
          - {name: answer, when: {requires_response: true}, then: send_reply, approval: required}
  - type: email
    name: sending
    maildir: ./Maildir
    username: alice@example.test
    smtp: {host: 127.0.0.1, port: 2525}
    platforms:
      inbox:
        automations:
          - {name: leave lists, when: {has_list_unsubscribe: true}, then: unsubscribe, approval: required}
`);
    expect(stdout).toMatch(/config\.yaml: OK/);
    const warnings = stderr.split('\n').filter((line) => line.startsWith('warning: '));
    expect(warnings).toEqual([
      expect.stringMatching(
        /^warning: .*config\.yaml: integrations\[0\]\.platforms\.inbox\.automations\[1\]\.then: rule "leave lists" takes `unsubscribe`, which needs `smtp:` on instance local \(for a sender that offers only a mailto: unsubscribe, no one-click link\); local has none, so the action will fail$/,
      ),
      expect.stringMatching(
        /^warning: .*config\.yaml: integrations\[0\]\.platforms\.inbox\.automations\[2\]\.then: rule "answer" takes `send_reply`, which needs `smtp:` on instance local; local has none/,
      ),
    ]);
    expect(stderr).toContain('hint: add `smtp:` to instance local');
    expect(stderr).not.toMatch(/instance sending/);
  });
});

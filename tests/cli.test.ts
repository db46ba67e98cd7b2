import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { freePort } from './helpers/free-port.ts';
import { repoRoot, runCli } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';

/** Test integrations (`mailbox`, `greeter`), found through `integration_dirs`. */
const fixtureIntegrations = path.join(repoRoot, 'tests/fixtures/integrations/custom');

const goodConfig = (baseUrl = 'http://127.0.0.1:11434/v1') => `
data_dir: ./data
integration_dirs: [${fixtureIntegrations}]
llms:
  default:
    base_url: ${baseUrl}
    model: test-model
integrations:
  - type: mailbox
    name: mail
    schedule:
      every: 30m
`;

describe('assistant version', () => {
  it('prints the version and the node version', async () => {
    const run = await runCli(['version']);
    expect(run.stdout).toMatch(/^assistant \d+\.\d+\.\d+\S* \(node v\d+\.\d+\.\d+\)\n$/);
    expect(run.code).toBe(0);
  });
});

describe('assistant token', () => {
  it('hole 2: prints the API token (creating data/api-token when the server never ran) and its path with --path', async () => {
    await using dir = await tempDir();
    const config = await dir.write('config.yaml', 'data_dir: ./data\n');
    const printed = await runCli(['token', '--config', config]);
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    expect(printed.stdout).toMatch(/^[A-Za-z0-9_-]{43}\n$/);
    expect(await readFile(path.join(dir.path, 'data/api-token'), 'utf8')).toBe(printed.stdout);
    expect((await runCli(['token', '--config', config])).stdout).toBe(printed.stdout);
    const where = await runCli(['token', '--path', '--config', config]);
    expect(where.stdout).toBe(`${path.join(dir.path, 'data/api-token')}\n`);
  });
});

describe('assistant config check', () => {
  it('reports OK with a summary and next runs for a valid config', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', goodConfig());
    const run = await runCli(['config', 'check'], { cwd: dir.path });
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^config\.yaml: OK\n/);
    expect(run.stdout).toContain('default: test-model at http://127.0.0.1:11434/v1');
    expect(run.stdout).toMatch(
      /mail \(mailbox\), platforms: inbox, every 30m\n\s+next runs: \d{4}-\d\d-\d\d [\d:]+ \S+, [^,]+, [^,]+\n/,
    );
    expect(run.code).toBe(0);
  });

  it('refuses a user name or password in an llms base_url: exits 2 naming file, line and key, never printing them', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', goodConfig('https://me:sk-live-1234@api.example.com/v1'));
    const run = await runCli(['config', 'check'], { cwd: dir.path });
    expect(run.stderr).toMatch(/^assistant: invalid configuration \(1 problem\)/);
    expect(run.stderr).toContain(
      'config.yaml:6:15: llms.default.base_url: the URL holds a user name or password (https://***:***@api.example.com/v1)',
    );
    expect(run.stderr).toContain(
      'hint: remove `user:password@` from the URL; an API key goes in `api_key: !secret llm_key`',
    );
    expect(`${run.stdout}${run.stderr}`).not.toContain('sk-live-1234');
    expect(run.code).toBe(2);
  });

  it('prints every problem with file:line:col and exits 2 for an invalid config', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', 'server:\n  port: nope\nworker:\n  concurrency: 0\n');
    const run = await runCli(['config', 'check'], { cwd: dir.path });
    expect(run.stderr).toMatch(/^assistant: invalid configuration \(2 problems\)/);
    expect(run.stderr).toMatch(/config\.yaml:2:9: server\.port: /);
    expect(run.stderr).toMatch(/config\.yaml:4:16: worker\.concurrency: /);
    expect(run.stderr).not.toMatch(/\bat .+:\d+:\d+\)/); // no stack trace
    expect(run.code).toBe(2);
  });

  it('reports the four acceptance problems together, each with file:line:col and key path', async () => {
    await using dir = await tempDir();
    const fixture = await readFile(path.join(repoRoot, 'packages/config/fixtures/bad/four-errors.yaml'), 'utf8');
    // The fixture's `email` stands for any integration with those settings; the line numbers stay the same.
    await dir.write(
      'config.yaml',
      `${fixture.replace('type: email', 'type: mailbox')}integration_dirs: [${fixtureIntegrations}]\n`,
    );
    await dir.write('secrets.yaml', 'some_other_secret: x\n', 0o600);
    const run = await runCli(['config', 'check'], { cwd: dir.path });
    expect(run.stderr).toMatch(/^assistant: invalid configuration \(4 problems\)/);
    expect(run.stderr).toContain(
      'config.yaml:10:23: integrations[0].password: secret `imap_password` is not defined in secrets.yaml',
    );
    expect(run.stderr).toContain('config.yaml:12:14: integrations[0].schedule.every: `30x` is not a duration');
    expect(run.stderr).toContain(
      'config.yaml:17:9: integrations[0].platforms.inbox.newsletter: unknown key `newsletter`\n' +
        '  hint: check its indentation: it belongs under `classifications`',
    );
    expect(run.stderr).toContain('config.yaml:20:1: sever: unknown key `sever`\n  hint: did you mean `server`?');
    expect(run.stdout).toBe('');
    expect(run.code).toBe(2);
  });

  it('accepts --config and --data before or after the subcommand', async () => {
    await using dir = await tempDir();
    const config = await dir.write('config.yaml', goodConfig());
    const before = await runCli(['--config', config, '--data', dir.path, 'config', 'check']);
    const after = await runCli(['config', 'check', '--config', config, '--data', dir.path]);
    const between = await runCli(['config', `--config=${config}`, 'check']);
    for (const run of [before, after, between]) {
      expect(run.stdout).toContain(': OK\n');
      expect(run.code).toBe(0);
    }
    expect(before.stdout).toContain(`data:         ${dir.path}\n`);
    expect(after.stdout).toContain(`data:         ${dir.path}\n`);
    expect(between.stdout).toContain(`data:         ${dir.path}/data\n`);
  });

  it('reads ASSISTANT_CONFIG when there is no --config', async () => {
    await using dir = await tempDir();
    const config = await dir.write('elsewhere.yaml', goodConfig());
    const run = await runCli(['config', 'check'], { env: { ASSISTANT_CONFIG: config } });
    expect(run.stdout).toContain(': OK\n');
    expect(run.code).toBe(0);
  });

  it('exits 2 with a hint when the config file does not exist', async () => {
    await using dir = await tempDir();
    const run = await runCli(['config', 'check'], { cwd: dir.path });
    expect(run.stderr).toBe(
      'assistant: config file config.yaml does not exist\n' +
        'hint: pass --config FILE, set ASSISTANT_CONFIG, or run from the directory that holds config.yaml\n',
    );
    expect(run.code).toBe(2);
  });
});

describe('assistant config schema', () => {
  it('prints a JSON Schema', async () => {
    const run = await runCli(['config', 'schema']);
    const schema: unknown = JSON.parse(run.stdout);
    expect(schema).toHaveProperty('$schema');
    expect(run.code).toBe(0);
  });
});

describe('usage errors', () => {
  it('exits 2 for an unknown command', async () => {
    const run = await runCli(['bogus']);
    expect(run.stderr).toBe(
      "assistant: unknown command 'bogus'\nhint: run `assistant --help` for commands and flags\n",
    );
    expect(run.code).toBe(2);
  });

  it('suggests the nearest subcommand and exits 2', async () => {
    const run = await runCli(['config', 'chek']);
    expect(run.stderr).toBe("assistant: unknown command 'chek'\nhint: did you mean check?\n");
    expect(run.code).toBe(2);
  });

  it('exits 2 for an unknown flag', async () => {
    const run = await runCli(['version', '--bogus']);
    expect(run.stderr).toMatch(/^assistant: unknown option '--bogus'\n/);
    expect(run.code).toBe(2);
  });
});

describe('assistant doctor', () => {
  it('passes against a reachable OpenAI-compatible endpoint', async () => {
    const requests: { url: string | undefined; authorization: string | undefined }[] = [];
    const server = http.createServer((request, response) => {
      requests.push({ url: request.url, authorization: request.headers.authorization });
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ object: 'list', data: [{ id: 'test-model', object: 'model' }] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      await using dir = await tempDir();
      await dir.write('config.yaml', goodConfig(`http://127.0.0.1:${port}/v1`));
      const run = await runCli(['doctor'], { cwd: dir.path });
      expect(run.stdout).toMatch(/^ok {3}config .+ is valid$/m);
      expect(run.stdout).toMatch(/^ok {3}data directories writable/m);
      // CI installs bubblewrap; elsewhere a missing one is a warning here, since this config has no scripts.
      expect(run.stdout).toMatch(
        /^(ok {3}sandbox: scripts run sandboxed by bubblewrap|warn sandbox: scripts will not run)/m,
      );
      expect(run.stdout).toMatch(
        /^ok {3}llm default \(config\.yaml:\d+\): .+ answered HTTP 200, model test-model available$/m,
      );
      expect(run.stdout).toMatch(/^ok {3}integration mail \(mailbox\): no credentials configured$/m);
      expect(run.stdout).not.toContain('FAIL');
      expect(run.code).toBe(0);
      expect(requests).toEqual([{ url: '/v1/models', authorization: undefined }]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('fails with exit 1 when the endpoint is unreachable', async () => {
    const port = await freePort();
    await using dir = await tempDir();
    await dir.write('config.yaml', goodConfig(`http://127.0.0.1:${port}/v1`));
    const run = await runCli(['doctor'], { cwd: dir.path });
    expect(run.stdout).toMatch(
      /^FAIL llm default \(config\.yaml:\d+\): GET http:\/\/127\.0\.0\.1:\d+\/v1\/models failed: ECONNREFUSED$/m,
    );
    expect(run.stdout).toMatch(/^ {5}hint: /m);
    expect(run.code).toBe(1);
  });
});

// `repoRoot` is where the default config lives; the CLI run from there must find it without flags.
describe('defaults', () => {
  it('uses ./config.yaml from the working directory', async () => {
    const run = await runCli(['config', 'check'], { cwd: repoRoot });
    expect(run.stdout).toMatch(/^config\.yaml: OK\n/);
    expect(run.code).toBe(0);
  });
});

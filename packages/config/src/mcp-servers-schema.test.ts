import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, parseConfig } from './load-config.ts';
import { formatProblem } from './problems.ts';
import { Secret } from './secret.ts';
import { serializeConfig } from './serialize-config.ts';

const parse = (text: string, secretsText = 'github_token: ghp_secret_value\n') => parseConfig({ text, secretsText });
const errors = (text: string) => parse(text).errors.map((problem) => formatProblem(problem).split('\n')[0]);

describe('mcp_servers', () => {
  it('normalises a stdio server and an HTTP server, with defaults written out', () => {
    const result = parse(`
mcp_servers:
  files:
    command: npx
    args: [-y, '@modelcontextprotocol/server-filesystem', /srv/files]
    env: {ROOT: /srv/files, TOKEN: !secret github_token}
    cwd: ./tools
    read_only: [list_*]
  remote:
    url: http://127.0.0.1:3001/mcp
    headers: {Authorization: !secret github_token}
    deny: [delete_*]
    timeout: 5s
    trust_annotations: false
    max_response_bytes: 512 KiB
`);
    expect(result.errors.map(formatProblem)).toEqual([]);
    const servers = result.config?.mcpServers ?? {};
    expect(servers.files).toMatchObject({
      transport: 'stdio',
      command: 'npx',
      args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv/files'],
      cwd: './tools',
      allow: ['*'],
      deny: [],
      readOnly: ['list_*'],
      timeoutMs: 60_000,
      trustAnnotations: true,
      maxResponseBytes: 8 * 1024 * 1024,
    });
    const files = servers.files;
    if (files?.transport !== 'stdio') throw new Error('expected a stdio server');
    expect(files.env.ROOT).toBe('/srv/files');
    expect(files.env.TOKEN).toBeInstanceOf(Secret);
    expect((files.env.TOKEN as Secret).reveal()).toBe('ghp_secret_value');
    expect(servers.remote).toMatchObject({
      transport: 'http',
      url: 'http://127.0.0.1:3001/mcp',
      deny: ['delete_*'],
      timeoutMs: 5_000,
      trustAnnotations: false,
      maxResponseBytes: 512 * 1024,
    });
    // Plain env and header values are not secrets: no inline-secret warning for them.
    expect(result.warnings).toEqual([]);
  });

  it('is empty when absent or written as an empty key', () => {
    expect(parse('data_dir: ./data\n').config?.mcpServers).toEqual({});
    expect(parse('mcp_servers:\n').config?.mcpServers).toEqual({});
  });

  it('refuses a server with both or neither of command and url, keys of the other transport, and bad names', () => {
    expect(errors('mcp_servers:\n  both: {command: x, url: "http://127.0.0.1/mcp"}\n')).toEqual([
      expect.stringContaining('exactly one of `command:` (stdio) or `url:` (streamable HTTP)'),
    ]);
    expect(errors('mcp_servers:\n  neither: {allow: ["*"]}\n')).toEqual([expect.stringContaining('exactly one of')]);
    expect(errors('mcp_servers:\n  web: {url: "http://127.0.0.1/mcp", env: {A: b}}\n')).toEqual([
      expect.stringContaining('`env:` is for servers started by `command:`'),
    ]);
    expect(errors('mcp_servers:\n  local: {command: x, headers: {A: b}}\n')).toEqual([
      expect.stringContaining('`headers:` is for servers reached by `url:`'),
    ]);
    expect(errors('mcp_servers:\n  Files: {command: x}\n')).toEqual([expect.stringContaining('not a valid name')]);
    expect(
      parse('mcp_servers:\n  web: {url: "https://me:s3cret-key@mcp.example.com/mcp"}\n').errors.map(formatProblem),
    ).toEqual([
      'config.yaml:2:14: mcp_servers.web.url: the URL holds a user name or password (https://***:***@mcp.example.com/mcp); config.yaml is shown by `assistant config check`, /config and /health, and its URLs are logged\n' +
        '  hint: remove `user:password@` from the URL; send the credential in `headers:`, e.g. `Authorization: !secret mcp_auth`',
    ]);
    expect(errors('mcp_servers:\n  web: {url: "ftp://example.com/"}\n')).toEqual([
      expect.stringContaining('expected an http(s) URL'),
    ]);
    expect(errors('mcp_servers:\n  local: {command: x, bogus: 1}\n')).toHaveLength(1);
    expect(errors('mcp_servers:\n  local: {command: x, max_response_bytes: 8 MB}\n')).toEqual([
      expect.stringContaining('such as `512 KiB`, `8 MiB` or `1 GiB`'),
    ]);
    expect(errors('mcp_servers:\n  local: {command: x, trust_annotations: no}\n')).toEqual([
      expect.stringContaining('expected true or false'),
    ]);
  });

  it('round-trips through serializeConfig, secrets as references', () => {
    const first = parse(
      'mcp_servers:\n  files: {command: node, args: [server.js], env: {T: !secret github_token}, read_only: [read_*]}\n  web: {url: "http://127.0.0.1:9/mcp", timeout: 2m, trust_annotations: false, max_response_bytes: 1 MiB}\n',
    );
    if (!first.config) throw new Error(first.errors.map(formatProblem).join('\n'));
    const text = serializeConfig(first.config);
    expect(text).toContain('T: !secret github_token');
    const second = parse(text);
    expect(second.errors.map(formatProblem)).toEqual([]);
    if (!second.config) throw new Error('expected a config');
    expect(serializeConfig(second.config)).toBe(text);
  });
});

describe('loadConfig and mcp_servers', () => {
  let directory: string | undefined;
  afterEach(async () => {
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it("resolves a stdio server's relative cwd against config.yaml's folder", async () => {
    directory = await mkdtemp(path.join(tmpdir(), 'assistant-mcp-config-'));
    await writeFile(
      path.join(directory, 'config.yaml'),
      'mcp_servers:\n  here: {command: node, cwd: ./tools}\n  there: {command: node, cwd: /opt/x}\n',
    );
    const { config } = await loadConfig({ configPath: 'config.yaml', cwd: directory });
    expect(config.mcpServers.here).toMatchObject({ cwd: path.join(directory, 'tools') });
    expect(config.mcpServers.there).toMatchObject({ cwd: '/opt/x' });
  });
});

// Writes bench/fixtures/codeact-mcp-tools.json, the MCP half of bench:codeact-registry's tools: the tools two real
// MCP servers from npm (server-everything and server-filesystem, dev dependencies) offer, as Assistant's MCP pool
// turns them into agent tools (`server__tool` names, fenced descriptions, tiers from annotations). A snapshot, so
// that the bench starts no servers and measures the same tools every run.
// `node bench/codeact-registry-fixtures.ts` after upgrading either server.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { McpServerConfig } from '@assistant/config';
import { McpServers } from '@assistant/mcp';

const repoRoot = path.resolve(import.meta.dirname, '..');
const rules = {
  allow: ['*'],
  deny: [],
  readOnly: [],
  timeoutMs: 20_000,
  trustAnnotations: true,
  maxResponseBytes: 8 * 1024 * 1024,
};
const server = (main: string, argument: string): McpServerConfig => ({
  transport: 'stdio',
  command: process.execPath,
  args: [path.join(repoRoot, 'node_modules/@modelcontextprotocol', main, 'dist/index.js'), argument],
  env: {},
  ...rules,
});

const root = await mkdtemp(path.join(tmpdir(), 'codeact-registry-'));
try {
  await using servers = new McpServers({
    servers: { everything: server('server-everything', 'stdio'), files: server('server-filesystem', root) },
  });
  const tools = await servers.toolsFor(['everything', 'files']);
  const snapshot = tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    tier: tool.tier,
    parameters: tool.spec.parameters,
  }));
  const file = path.join(repoRoot, 'bench/fixtures/codeact-mcp-tools.json');
  await writeFile(file, `${JSON.stringify(snapshot, null, 2)}\n`);
  console.log(`wrote ${snapshot.length} tools to ${path.relative(repoRoot, file)}`);
} finally {
  await rm(root, { recursive: true, force: true });
}

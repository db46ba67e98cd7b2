// What an idle server loads (issue 38, "a small server"): the chat platforms' SDKs (Discord's, Slack's, and the undici
// copies they bring) only for a channel that runs, the MCP SDK's server only at the first /mcp call. A module hook
// passed through NODE_OPTIONS records every URL the server process loads, and Node's own modules it has loaded when
// asked: neither Node's TypeScript stripper (its TypeScript comes from the stripped cache `npm install` fills) nor
// undici, which `import http from 'node:http'` would bring. And what a command that only reads
// the config loads: not the full config check's packages (agents, memory, code mode, the sandbox).
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, repoRoot, runCli, runNode, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const heavy = /\/node_modules\/(@discordjs|@slack|@modelcontextprotocol\/sdk\/dist\/esm\/server)\//;

/** A module hook, passed through NODE_OPTIONS, that appends every URL the process loads to `loaded`. */
function recordLoads(loaded: string): string {
  return `import fs from 'node:fs';
import module from 'node:module';
module.registerHooks({
  load(url, context, nextLoad) {
    fs.appendFileSync(${JSON.stringify(loaded)}, url + '\\n');
    return nextLoad(url, context);
  },
});
`;
}

/** `recordLoads`, and the list of Node's own modules the process has loaded written to `builtins` at SIGUSR2. */
function recordLoadsAndBuiltins(loaded: string, builtins: string): string {
  return `${recordLoads(loaded)}
process.on('SIGUSR2', () => fs.writeFileSync(${JSON.stringify(builtins)}, process.moduleLoadList.join('\\n')));
`;
}

describe('a command that reads the config', () => {
  it('loads none of the packages only the full config check needs', async () => {
    await using dir = await tempDir();
    const loaded = path.join(dir.path, 'loaded.txt');
    const hook = await dir.write('record-loads.mjs', recordLoads(loaded));
    await dir.write('config.yaml', 'data_dir: ./data\n');
    const stats = await runCli(['queue', 'stats', '--json'], {
      cwd: dir.path,
      env: { NODE_OPTIONS: `--import ${hook}` },
    });
    expect(stats.stderr).toBe('');
    expect(stats.code).toBe(0);
    const urls = (await readFile(loaded, 'utf8')).split('\n');
    const fullCheckOnly = /\/packages\/(agents|memory|codeact|sandbox)\/src\//;
    expect(urls.filter((url) => fullCheckOnly.test(url))).toEqual([]);
    // `assistant config check` does load them: the same hook sees them there.
    const check = await runCli(['config', 'check'], { cwd: dir.path, env: { NODE_OPTIONS: `--import ${hook}` } });
    expect(check.code).toBe(0);
    expect((await readFile(loaded, 'utf8')).split('\n').some((url) => fullCheckOnly.test(url))).toBe(true);
  });
});

describe('an idle server', () => {
  it('loads no chat platform SDK and no MCP server until something needs them, and /mcp still answers', async () => {
    await using dir = await tempDir();
    const loaded = path.join(dir.path, 'loaded.txt');
    const builtins = path.join(dir.path, 'builtins.txt');
    const hook = await dir.write('record-loads.mjs', recordLoadsAndBuiltins(loaded, builtins));
    // The stripped TypeScript cache, filled as `npm install` fills it, in a directory of the test's own.
    const cache = { ASSISTANT_TYPESCRIPT_CACHE: path.join(dir.path, 'stripped') };
    const fill = await runNode({ args: [path.join(repoRoot, 'scripts/fill-typescript-cache.js')], env: cache });
    expect(fill.code).toBe(0);
    expect(fill.stdout).toMatch(/^assistant: \d+ TypeScript files in the stripped cache/);
    const port = await freePort();
    // The built-in chat instance's listeners start and idle without credentials, as on a fresh installation.
    const config = await dir.write('config.yaml', `data_dir: ./data\nserver: {host: 127.0.0.1, port: ${port}}\n`);
    const server = startNode({
      args: [cliMain, 'serve', '--config', config],
      env: { NODE_OPTIONS: `--import ${hook}`, ...cache },
    });
    try {
      await server.waitForOutput(/listening on/m, { timeoutMs: 20_000 });
      const urls = async () => (await readFile(loaded, 'utf8')).split('\n');
      // The listeners have started and found no credentials: the Discord and Slack ones said so.
      const output = () => server.stdout() + server.stderr();
      await waitUntil(() => output().includes('the Discord bot is off'), { what: 'the Discord listener to idle' });
      await waitUntil(() => output().includes('the Slack app is off'), { what: 'the Slack listener to idle' });
      expect((await urls()).filter((url) => heavy.test(url))).toEqual([]);
      server.child.kill('SIGUSR2');
      await waitUntil(async () => (await readFile(builtins, 'utf8').catch(() => '')) !== '', {
        what: "the server's list of Node's modules",
      });
      const nodeModules = (await readFile(builtins, 'utf8')).split('\n');
      expect(nodeModules.filter((name) => /amaro|deps\/undici/.test(name))).toEqual([]);

      const token = await readApiToken(path.join(dir.path, 'data'));
      const response = await fetch(`http://127.0.0.1:${port}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'test', version: '1' } },
        }),
      });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('"serverInfo"');
      expect((await urls()).some((url) => url.includes('/@modelcontextprotocol/sdk/dist/esm/server/'))).toBe(true);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

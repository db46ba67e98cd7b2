// The MCP client against real servers from npm: server-everything and server-filesystem over stdio, server-everything
// over streamable HTTP. Lazy start, tiers from annotations and config, allow/deny, capped and described results, a
// crashed server restarted, and no process left behind by close (a server's own children included).
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Tool, ToolContext } from '@assistant/agent';
import type { McpServerConfig } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import { McpServers } from '@assistant/mcp';
import { describe, expect, it } from 'vitest';
import { freePort } from './helpers/free-port.ts';
import { repoRoot } from './helpers/node-process.ts';
import { isAlive } from './helpers/process-alive.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const everythingMain = path.join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const filesystemMain = path.join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const rules: Pick<
  McpServerConfig,
  'allow' | 'deny' | 'readOnly' | 'timeoutMs' | 'trustAnnotations' | 'maxResponseBytes'
> = {
  allow: ['*'],
  deny: [],
  readOnly: [],
  timeoutMs: 20_000,
  trustAnnotations: true,
  maxResponseBytes: 8 * 1024 * 1024,
};

const everything: McpServerConfig = {
  transport: 'stdio',
  command: process.execPath,
  args: [everythingMain, 'stdio'],
  env: {},
  ...rules,
};

function files(root: string, overrides: Partial<typeof rules> = {}): McpServerConfig {
  return {
    transport: 'stdio',
    command: process.execPath,
    args: [filesystemMain, root],
    env: {},
    ...rules,
    ...overrides,
  };
}

/**
 * What a tool's run needs here: only the signal is used by MCP tools. A fresh 20 s deadline per call: one signal made
 * when the file loads ran out before the last test's calls on a loaded machine.
 */
const toolContext = {
  get signal() {
    return AbortSignal.timeout(20_000);
  },
} as ToolContext;

function byName(tools: readonly Tool[], name: string): Tool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((candidate) => candidate.name).join(', ')}`);
  return tool;
}

describe('McpServers over stdio', () => {
  it('starts server-everything on first use and offers its tools with their annotated tiers', async () => {
    await using servers = new McpServers({ servers: { everything } });
    expect(servers.status('everything').state).toBe('idle');
    const tools = await servers.toolsFor(['everything']);
    expect(servers.status('everything').state).toBe('ready');
    const echo = byName(tools, 'everything__echo');
    expect(echo.tier).toBe('read_only');
    expect(echo.trusted).toBe(false);
    expect(echo.spec.parameters).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
    expect(echo.spec.parameters).not.toHaveProperty('$schema');
    expect(byName(tools, 'everything__toggle-simulated-logging').tier).toBe('irreversible');
    expect(await echo.run({ message: 'hello there' }, toolContext)).toBe('Echo: hello there');
    // An image is described, not inlined as base64.
    const image = String(await byName(tools, 'everything__get-tiny-image').run({}, toolContext));
    expect(image).toMatch(/\[image: image\/png, [\d.]+ (bytes|KiB), not shown\]/);
    expect(image).not.toMatch(/[A-Za-z0-9+/]{200}/);
  });

  it('gives server-filesystem tools tiers from annotations, honours deny, and returns a tool error as a throw', async () => {
    await using directory = await tempDir();
    await directory.write('notes/hello.txt', 'hello from a file\n');
    const root = path.join(directory.path, 'notes');
    await using servers = new McpServers({ servers: { files: files(root, { deny: ['move_*'] }) } });
    const tools = await servers.toolsFor(['files']);
    expect(byName(tools, 'files__read_text_file').tier).toBe('read_only');
    expect(byName(tools, 'files__list_directory').tier).toBe('read_only');
    expect(byName(tools, 'files__write_file').tier).toBe('irreversible');
    expect(tools.some((tool) => tool.name === 'files__move_file')).toBe(false);
    const listed = await servers.describeTools('files');
    expect(listed.find((tool) => tool.name === 'move_file')).toMatchObject({ allowed: false, agentName: '' });

    const text = await byName(tools, 'files__read_text_file').run({ path: path.join(root, 'hello.txt') }, toolContext);
    expect(text).toBe('hello from a file\n');
    const listing = await byName(tools, 'files__list_directory').run({ path: root }, toolContext);
    expect(listing).toContain('[FILE] hello.txt');
    // The tool runs when called directly (the gate, not this pool, holds irreversible calls for approval).
    await byName(tools, 'files__write_file').run({ path: path.join(root, 'new.txt'), content: 'written' }, toolContext);
    expect(await readFile(path.join(root, 'new.txt'), 'utf8')).toBe('written');
    // Outside its root the server refuses (isError): the tool throws the server's words.
    await expect(
      byName(tools, 'files__read_text_file').run({ path: path.join(directory.path, '..', 'elsewhere') }, toolContext),
    ).rejects.toThrow(/denied|outside|not allowed/i);
  });

  it('takes a tool config names in read_only for read-only, and caps a long result', async () => {
    await using directory = await tempDir();
    await directory.write('big.txt', 'x'.repeat(30_000));
    await using servers = new McpServers({
      servers: { files: files(directory.path, { readOnly: ['write_file'] }) },
      maxResultChars: 1_000,
    });
    const tools = await servers.toolsFor(['files']);
    expect(byName(tools, 'files__write_file').tier).toBe('read_only');
    const text = String(
      await byName(tools, 'files__read_text_file').run({ path: path.join(directory.path, 'big.txt') }, toolContext),
    );
    expect(text).toContain('[cut: the result has 30000 characters; only the first 1000 are shown]');
    expect(text.length).toBeLessThan(1_200);
  });

  it('restarts a server killed mid-run: a call while it is down fails clearly, the next after the restart works', async () => {
    await using servers = new McpServers({ servers: { everything } });
    const echo = byName(await servers.toolsFor(['everything']), 'everything__echo');
    const firstPid = servers.status('everything').pid;
    if (firstPid === undefined) throw new Error('expected a pid');
    process.kill(firstPid, 'SIGKILL');
    await waitUntil(() => servers.status('everything').state === 'down', { what: 'the crash to be noticed' });
    const refused = await echo.run({ message: 'during' }, toolContext).catch((error: unknown) => error);
    expect(isAssistantError(refused, 'MCP_SERVER_UNAVAILABLE')).toBe(true);
    expect((refused as Error).message).toMatch(/everything stopped unexpectedly.*tried again in \d+ s/s);

    await waitUntil(() => servers.status('everything').state === 'ready', { what: 'the restart' });
    expect(servers.status('everything')).toMatchObject({ restarts: 1 });
    expect(servers.status('everything').pid).not.toBe(firstPid);
    expect(await echo.run({ message: 'after' }, toolContext)).toBe('Echo: after');
  });

  it('says what went wrong when a server cannot start, and does not retry before its backoff', async () => {
    await using servers = new McpServers({
      servers: { broken: { ...everything, command: path.join(repoRoot, 'no-such-mcp-server') } },
    });
    const first = await servers.toolsFor(['broken']).catch((error: unknown) => error);
    expect(isAssistantError(first, 'MCP_SERVER_UNAVAILABLE')).toBe(true);
    expect((first as Error).message).toMatch(/broken could not be started: .*ENOENT/);
    const second = await servers.toolsFor(['broken']).catch((error: unknown) => error);
    expect((second as Error).message).toMatch(/tried again in 1 s/);
    expect(servers.status('broken')).toMatchObject({ state: 'down', restarts: 0 });
  });

  it('leaves no process behind after close, a server started through a wrapper process included', async () => {
    await using directory = await tempDir();
    const pidFile = path.join(directory.path, 'grandchild.pid');
    // A wrapper like npx or a shell script: the server is its child, our transport's grandchild.
    const wrapper = await directory.write(
      'wrapper.mjs',
      `import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
const child = spawn(process.execPath, ${JSON.stringify([everythingMain, 'stdio'])}, { stdio: 'inherit' });
writeFileSync(${JSON.stringify(pidFile)}, String(child.pid));
child.on('exit', (code) => process.exit(code ?? 0));
`,
    );
    const servers = new McpServers({
      servers: {
        everything,
        wrapped: { ...everything, args: [wrapper] },
        files: files(directory.path),
      },
    });
    await servers.toolsFor(['everything', 'wrapped', 'files']);
    const pids = servers.names.map((name) => servers.status(name).pid);
    const grandchild = Number(await readFile(pidFile, 'utf8'));
    const all = [...pids, grandchild].filter((pid): pid is number => pid !== undefined);
    expect(all).toHaveLength(4);
    for (const pid of all) expect(isAlive(pid)).toBe(true);
    await servers.close();
    for (const pid of all) expect(isAlive(pid), `process ${pid} is still running`).toBe(false);
    await servers.close();
    await expect(servers.toolsFor(['everything'])).rejects.toThrow(/was closed/);
  });
});

describe('McpServers over streamable HTTP', () => {
  /** server-everything's streamable HTTP server on `port`, ready to take requests. */
  async function startHttpServer(port: number) {
    const server = spawn(process.execPath, [everythingMain, 'streamableHttp'], {
      env: { ...process.env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const collect = (text: string) => {
      output += text;
    };
    server.stdout.setEncoding('utf8').on('data', collect);
    server.stderr.setEncoding('utf8').on('data', collect);
    const exited = new Promise<void>((resolve) => server.once('close', () => resolve()));
    await waitUntil(() => output.includes(`listening on port ${port}`), { what: 'the HTTP MCP server to listen' });
    return {
      async [Symbol.asyncDispose]() {
        server.kill('SIGKILL');
        await exited;
      },
    };
  }

  it('lists and calls the tools of server-everything over HTTP, and starts a new session after the server restarted', async () => {
    const port = await freePort();
    let server: AsyncDisposable | undefined = await startHttpServer(port);
    try {
      await using servers = new McpServers({
        servers: {
          remote: {
            transport: 'http',
            url: `http://127.0.0.1:${port}/mcp`,
            headers: { 'X-Client': 'assistant-test' },
            ...rules,
          },
        },
      });
      const tools = await servers.toolsFor(['remote']);
      expect(servers.status('remote')).toMatchObject({ transport: 'http', state: 'ready' });
      expect(byName(tools, 'remote__get-sum').tier).toBe('read_only');
      expect(await byName(tools, 'remote__get-sum').run({ a: 2, b: 3 }, toolContext)).toMatch(/5/);
      expect(await byName(tools, 'remote__echo').run({ message: 'over http' }, toolContext)).toBe('Echo: over http');

      await server[Symbol.asyncDispose]();
      server = undefined;
      const refused = await byName(tools, 'remote__echo')
        .run({ message: 'nobody there' }, toolContext)
        .catch((error: unknown) => error);
      expect(isAssistantError(refused, 'MCP_CALL_FAILED') || isAssistantError(refused, 'MCP_SERVER_UNAVAILABLE')).toBe(
        true,
      );
      server = await startHttpServer(port);
      // The new server knows nothing of the old session; the pool starts a new one.
      expect(await byName(tools, 'remote__echo').run({ message: 'again' }, toolContext)).toBe('Echo: again');
    } finally {
      await server?.[Symbol.asyncDispose]();
    }
  });
});

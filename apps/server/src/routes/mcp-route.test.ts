// `/mcp` as a way in: what a web page, a rebinding attacker or a prompt-injected MCP client sends to it. The guards
// are the server's shared hooks (request-guard.ts, bearer-auth.ts, json-body-parser.ts); these tests check that /mcp
// sits behind them, and that read_note and the note resources never read outside the notes folder.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@assistant/config';
import { FileNoteStore } from '@assistant/notes';
import type { InjectOptions } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServer } from '../create-server.ts';
import type { AssistantServer } from '../server-type.ts';

const token = 'test-token-for-the-mcp-route-0123456789abcd';
const authorization = `Bearer ${token}`;
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'assistant-mcp-route-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function server(): Promise<AssistantServer> {
  await writeFile(path.join(dir, 'config.yaml'), 'data_dir: ./data\nserver:\n  port: 0\n');
  const { config } = await loadConfig({ configPath: path.join(dir, 'config.yaml') });
  const app = createServer({ config, token });
  await app.ready();
  return app;
}

function post(app: AssistantServer, body: unknown, headers: InjectOptions['headers'] = {}) {
  return app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { ...mcpHeaders, authorization, ...headers },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/** A JSON-RPC request's answer, whether the transport sent it as JSON or as one event of a stream. */
function answerOf(response: { body: string }): { result?: Record<string, unknown>; error?: { message: string } } {
  const data = response.body.startsWith('{') ? response.body : /^data: (.*)$/m.exec(response.body)?.[1];
  if (data === undefined) throw new Error(`no JSON-RPC answer in ${response.body}`);
  return JSON.parse(data);
}

const toolsList = { jsonrpc: '2.0', id: 1, method: 'tools/list' };

describe('/mcp as a way in', () => {
  it('answers tools/list to a client with the token', async () => {
    await using app = await server();
    const response = await post(app, toolsList);
    expect(response.statusCode).toBe(200);
    expect(JSON.stringify(answerOf(response).result)).toContain('read_note');
  });

  it('refuses a foreign Host, a foreign Origin, a cross-site write, no token and a body that is not JSON', async () => {
    await using app = await server();
    const refusals: [InjectOptions['headers'], number][] = [
      [{ host: 'rebind.attacker.example' }, 421],
      [{ origin: 'https://attacker.example' }, 403],
      [{ 'sec-fetch-site': 'cross-site' }, 403],
      [{ authorization: '' }, 401],
      [{ authorization: 'Bearer not-the-token' }, 401],
      [{ 'content-type': 'text/plain' }, 415],
    ];
    for (const [headers, status] of refusals) {
      const response = await post(app, toolsList, headers);
      expect({ headers, status: response.statusCode }).toEqual({ headers, status });
    }
  });

  it('refuses a body nested too deep or too large before an MCP server sees it, and answers GET 405', async () => {
    await using app = await server();
    const deep = `${'['.repeat(5_000)}${']'.repeat(5_000)}`;
    expect((await post(app, deep)).statusCode).toBe(400);
    const huge = { ...toolsList, params: { padding: 'x'.repeat(2 * 1024 * 1024) } };
    expect((await post(app, huge)).statusCode).toBe(413);
    const get = await app.inject({ method: 'GET', url: '/mcp', headers: { authorization } });
    expect(get.statusCode).toBe(405);
  });

  it('reads no file outside the notes folder through read_note or a note resource, and shows no absolute path', async () => {
    await using app = await server();
    const dataDir = path.join(dir, 'data');
    await new FileNoteStore({ root: path.join(dataDir, 'notes') }).create('inside.md', { data: {}, body: 'hello\n' });
    await writeFile(path.join(dir, 'outside.md'), 'SECRET-OUTSIDE\n');
    await mkdir(path.join(dataDir, 'notes/links'), { recursive: true });
    await symlink(path.join(dir, 'outside.md'), path.join(dataDir, 'notes/links/out.md'));
    await symlink(dir, path.join(dataDir, 'notes/links/up'));

    const call = async (name: string, args: Record<string, unknown>) =>
      answerOf(await post(app, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: args } }));
    const readNote = (notePath: string) => call('read_note', { path: notePath });

    expect(JSON.stringify(await readNote('inside.md'))).toContain('hello');
    for (const notePath of [
      '../../outside.md',
      '../config.yaml',
      path.join(dir, 'outside.md'),
      'links/out.md',
      'links/up/outside.md',
      'inside.md\0.txt',
      'inside.md/x',
      `${'a'.repeat(300)}.md`,
    ]) {
      const answer = await readNote(notePath);
      const text = JSON.stringify(answer);
      expect({ notePath, isError: answer.result?.isError }).toEqual({ notePath, isError: true });
      expect(text).not.toContain('SECRET-OUTSIDE');
      // The client's own absolute path may be echoed; the data directory's may not.
      expect(text).not.toContain(dataDir);
    }
    // A path longer than read_note takes is refused by its schema, before the backend.
    expect(JSON.stringify(await readNote('a/'.repeat(600)))).toMatch(/1024|too_big|Too big/i);

    for (const uri of [
      'assistant://notes/..%2F..%2Foutside.md',
      'assistant://notes/links/out.md',
      'assistant://notes/%2E%2E/config.yaml',
      'file:///etc/passwd',
    ]) {
      const answer = await post(app, { jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri } });
      const text = answer.body;
      expect({ uri, error: answerOf(answer).error !== undefined }).toEqual({ uri, error: true });
      expect(text).not.toContain('SECRET-OUTSIDE');
      expect(text).not.toContain('data_dir');
    }
  });
});

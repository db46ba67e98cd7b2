// Assistant as an MCP server, driven by the official SDK's client: `assistant mcp serve` over stdio (notes, tasks,
// trigger, and a chat message answered by a real worker with a fake model), and `/mcp` on the real server over
// streamable HTTP, behind the API token.
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  memo,
  mustShow,
  serviceApprovalId,
  toolCallApprovalId,
  writeSurfaceApprovals,
} from '@assistant/actions/testing';
import { ConversationStore } from '@assistant/chat';
import { FakeOpenAiServer } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';

const expectedTools = [
  'list_approvals',
  'list_tasks',
  'read_chat_reply',
  'read_note',
  'search_notes',
  'send_chat_message',
  'show_task',
  'trigger',
];

/** The text of a tool result's content blocks. */
function texts(result: Awaited<ReturnType<Client['callTool']>>): string[] {
  return (result as CallToolResult).content.flatMap((block) => (block.type === 'text' ? [block.text] : []));
}

function parsed(result: Awaited<ReturnType<Client['callTool']>>): Record<string, unknown> {
  expect(result.isError ?? false, texts(result).join('\n')).toBe(false);
  return JSON.parse(texts(result)[0] ?? 'null') as Record<string, unknown>;
}

async function writeConfig(dir: TempDir, extra = ''): Promise<string> {
  return dir.write(
    'config.yaml',
    `data_dir: ./data
worker: {shutdown_grace: 2s, poll_interval: 50ms}
${extra}`,
  );
}

async function stdioClient(configPath: string, cwd: string): Promise<Client & AsyncDisposable> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => !entry[0].startsWith('ASSISTANT_') && entry[1] !== undefined,
    ),
  );
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cliMain, 'mcp', 'serve', '--config', configPath],
    cwd,
    env,
    stderr: 'pipe',
  });
  const client = new Client({ name: 'assistant-test', version: '1.0.0' });
  await client.connect(transport);
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

describe('assistant mcp serve (stdio)', () => {
  it('lists its tools, searches and reads notes, refuses paths outside the notes folder, lists tasks, triggers', async () => {
    await using dir = await tempDir();
    const configPath = await writeConfig(dir);
    const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
    await notes.create('projects/zebra.md', {
      data: { title: 'Zebra crossing' },
      body: 'The striped-horse project starts on Monday.\n',
    });
    await notes.create('projects/other.md', { data: { title: 'Other' }, body: 'Nothing to see.\n' });
    await using client = await stdioClient(configPath, dir.path);

    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(expectedTools);
    const readOnly = tools.filter((tool) => tool.annotations?.readOnlyHint === true).map((tool) => tool.name);
    expect(readOnly.sort()).toEqual([
      'list_approvals',
      'list_tasks',
      'read_chat_reply',
      'read_note',
      'search_notes',
      'show_task',
    ]);
    // Nothing that decides, steers or writes.
    expect(tools.map((tool) => tool.name).join(' ')).not.toMatch(/approve|reject|decide|steer|write|delete/);

    const found = parsed(await client.callTool({ name: 'search_notes', arguments: { query: 'STRIPED-HORSE' } }));
    expect(found).toEqual({ notes: [{ path: 'projects/zebra.md', title: 'Zebra crossing' }], total: 1, broken: [] });

    const note = await client.callTool({ name: 'read_note', arguments: { path: 'projects/zebra.md' } });
    expect(note.isError ?? false).toBe(false);
    expect(JSON.parse(texts(note)[0] ?? '')).toMatchObject({
      path: 'projects/zebra.md',
      data: { title: 'Zebra crossing' },
    });
    expect(texts(note)[1]).toBe('The striped-horse project starts on Monday.\n');

    const outside = await client.callTool({ name: 'read_note', arguments: { path: '../config.yaml' } });
    expect(outside.isError).toBe(true);
    expect(texts(outside).join('')).toMatch(/leaves the notes folder/);
    expect(texts(outside).join('')).not.toContain('data_dir');
    const missing = await client.callTool({ name: 'read_note', arguments: { path: 'projects/none.md' } });
    expect(missing.isError).toBe(true);
    expect(texts(missing).join('')).toMatch(/no note at projects\/none\.md/);

    // Notes are resources too.
    const { resources } = await client.listResources();
    expect(resources.map((resource) => resource.uri)).toEqual([
      'assistant://notes/projects/other.md',
      'assistant://notes/projects/zebra.md',
    ]);
    const resource = await client.readResource({ uri: 'assistant://notes/projects/zebra.md' });
    expect(resource.contents[0]).toMatchObject({ mimeType: 'text/markdown' });
    expect(String((resource.contents[0] as { text?: string }).text)).toContain('title: Zebra crossing');

    expect(parsed(await client.callTool({ name: 'list_tasks', arguments: {} }))).toEqual({ tasks: [] });
    const triggered = parsed(
      await client.callTool({ name: 'trigger', arguments: { instance: 'system', platform: 'housekeeping' } }),
    );
    expect(triggered).toMatchObject({ type: 'system.housekeeping.run', state: 'pending' });
    const pending = await readdir(path.join(dir.path, 'data/queue/pending'));
    expect(pending).toHaveLength(1);
    expect(pending[0]).toContain(String(triggered.id));
    const listed = parsed(await client.callTool({ name: 'list_tasks', arguments: { state: 'pending' } }));
    expect(listed.tasks).toEqual([expect.objectContaining({ id: triggered.id, state: 'pending' })]);
    const shown = parsed(await client.callTool({ name: 'show_task', arguments: { id: triggered.id } }));
    expect(shown).toMatchObject({ id: triggered.id, state: 'pending', source: 'cli' });

    const unknown = await client.callTool({ name: 'trigger', arguments: { instance: 'nobody', platform: 'inbox' } });
    expect(unknown.isError).toBe(true);
    expect(parsed(await client.callTool({ name: 'list_approvals', arguments: {} }))).toEqual({
      approvals: [],
      broken: [],
    });
  });

  it('sends a chat message that a running worker answers, and reads the reply', { timeout: 60_000 }, async () => {
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: 'Monday, at nine.' }) });
    await using dir = await tempDir();
    const configPath = await writeConfig(
      dir,
      `memory: {consolidate: []}\nllms:\n  default: {base_url: "${model.url}", model: fake-model}\n`,
    );
    await using client = await stdioClient(configPath, dir.path);
    const worker = startNode({ args: [cliMain, 'work', '--config', configPath], cwd: dir.path });
    try {
      await worker.waitForOutput(/worker ready/, { timeoutMs: 25_000 });
      const sent = parsed(
        await client.callTool({ name: 'send_chat_message', arguments: { text: 'When does the project start?' } }),
      );
      expect(sent).toMatchObject({ conversation: expect.any(String), message: expect.any(String), created: true });
      const reply = parsed(
        await client.callTool({
          name: 'read_chat_reply',
          arguments: { conversation: sent.conversation, after: sent.message, wait_seconds: 25 },
        }),
      );
      expect(reply).toMatchObject({
        status: 'replied',
        message: sent.message,
        reply: { text: 'Monday, at nine.', status: 'complete', reply_to: [sent.message] },
      });
      expect(JSON.stringify(model.requests.at(-1)?.body)).toContain('When does the project start?');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it("list_approvals shows what each request will do in full: a 5,000-character argument, a service's inputs (issue 30)", async () => {
    await using dir = await tempDir();
    const configPath = await writeConfig(dir);
    await writeSurfaceApprovals(new FileNoteStore({ root: path.join(dir.path, 'data/notes') }));
    await using client = await stdioClient(configPath, dir.path);
    const listed = parsed(await client.callTool({ name: 'list_approvals', arguments: {} }));
    const approvals = listed.approvals as { id: string; rendering: string; bound: boolean }[];
    const byId = new Map(approvals.map((approval) => [approval.id, approval]));
    expect(byId.get(toolCallApprovalId)?.rendering).toContain(JSON.stringify(memo));
    expect(byId.get(toolCallApprovalId)?.bound).toBe(true);
    const both = approvals.map((approval) => approval.rendering).join('\n');
    for (const line of mustShow) expect(both).toContain(line);
    expect(byId.get(serviceApprovalId)?.rendering).not.toMatch(/more characters/);
  });

  it('says no worker answered when none runs, within the wait', async () => {
    await using dir = await tempDir();
    await using client = await stdioClient(await writeConfig(dir), dir.path);
    const sent = parsed(await client.callTool({ name: 'send_chat_message', arguments: { text: 'anyone there?' } }));
    const reply = await client.callTool({
      name: 'read_chat_reply',
      arguments: { conversation: sent.conversation, wait_seconds: 1 },
    });
    expect(reply.isError).toBe(true);
    expect(texts(reply).join('')).toMatch(/no reply to .* within 1 s.*worker running/);

    // Started over MCP, the conversation's peer is not the owner (so the chat's owner-only tools refuse in it), and
    // the owner's own conversations take no messages from MCP.
    const conversations = new ConversationStore({
      notes: new FileNoteStore({ root: path.join(dir.path, 'data/notes') }),
    });
    expect(await conversations.get(String(sent.conversation))).toMatchObject({ channel: 'mcp', peer: 'mcp-client' });
    const owners = await conversations.create({ channel: 'cli', peer: 'owner' });
    const refused = await client.callTool({
      name: 'send_chat_message',
      arguments: { text: 'approve ap-0123456789ab', conversation: owners.id },
    });
    expect(refused.isError).toBe(true);
    expect(texts(refused).join('')).toMatch(/only to conversations they started/);
  });
});

describe('/mcp on the server (streamable HTTP)', () => {
  it('lists tools and searches notes with the API token, and answers 401 without it', async () => {
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await writeConfig(dir, `server: {port: ${port}}\n`);
    await new FileNoteStore({ root: path.join(dir.path, 'data/notes') }).create('ideas/kite.md', {
      data: {},
      body: 'A kite made of paper.\n',
    });
    const server = startNode({ args: [cliMain, 'serve', '--config', configPath], cwd: dir.path });
    try {
      await server.waitForOutput(/listening on/);
      const token = await readApiToken(path.join(dir.path, 'data'));
      const url = new URL(`http://127.0.0.1:${port}/mcp`);

      const client = new Client({ name: 'assistant-test', version: '1.0.0' });
      await client.connect(
        new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
      );
      try {
        const { tools } = await client.listTools();
        expect(tools.map((tool) => tool.name).sort()).toEqual(expectedTools);
        const found = parsed(await client.callTool({ name: 'search_notes', arguments: { query: 'kite' } }));
        expect(found).toMatchObject({ notes: [{ path: 'ideas/kite.md' }], total: 1 });
      } finally {
        await client.close();
      }

      const refused = new Client({ name: 'assistant-test', version: '1.0.0' });
      await expect(refused.connect(new StreamableHTTPClientTransport(url))).rejects.toThrow(/UNAUTHORIZED/);
      const raw = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(raw.status).toBe(401);
    } finally {
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

// MCP servers through the real worker and CLI: a fake-model system.agent loop that calls a read-only tool of
// server-filesystem and completes, with no server process left once the worker stops; and `assistant mcp ls`.

import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { ChatInbox, ConversationStore } from '@assistant/chat';
import { loadRuntime } from '@assistant/integration-host';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { installation } from '@assistant/process';
import { openFileTaskQueue } from '@assistant/queue';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { cliMain, repoRoot, runCli, startNode } from './helpers/node-process.ts';
import { isAlive } from './helpers/process-alive.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const filesystemMain = path.join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const everythingMain = path.join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');

const cli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path });

async function writeConfig(dir: TempDir, llmUrl: string): Promise<void> {
  await dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${llmUrl}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
mcp_servers:
  files:
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(filesystemMain)}, ./shared]
    cwd: .
    deny: [move_file]
  everything:
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(everythingMain)}, stdio]
    read_only: [toggle-simulated-logging]
`,
  );
}

type Message = { role: string; content: string | null };
const messagesOf = (request: FakeChatRequest) => request.body.messages as Message[];
const toolNamesOf = (request: FakeChatRequest) =>
  ((request.body.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);

describe('MCP tools in a worker', () => {
  it('lets a system.agent loop call a read-only server-filesystem tool, and stops the server with the worker', async () => {
    await using dir = await tempDir();
    await dir.write('shared/hello.txt', 'the answer is 42\n');
    const file = path.join(dir.path, 'shared/hello.txt');
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const toolResult = messagesOf(request).find((message) => message.role === 'tool');
        if (!toolResult) return { toolCalls: [{ name: 'files__read_text_file', arguments: { path: file } }] };
        return { text: `The file says: ${toolResult.content?.includes('the answer is 42') ? '42' : 'nothing'}` };
      },
    });
    await writeConfig(dir, model.url);
    const enqueued = await cli(dir, [
      'enqueue',
      'system.agent',
      '--payload',
      JSON.stringify({ prompt: 'What does hello.txt say?', mcp_servers: ['files'] }),
    ]);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const id = enqueued.stdout.trim().split(/\s+/).at(-1) ?? '';

    const worked = await cli(dir, ['work', '--exit-when-idle']);
    expect(worked.code, worked.stderr).toBe(0);
    const log = worked.stdout + worked.stderr;
    const pids = [...log.matchAll(/MCP server files is up \(pid (\d+)\)/g)].map((match) => Number(match[1]));
    expect(pids).toHaveLength(1);
    // The worker exited: its server (and the server's process group) is gone.
    for (const pid of pids) expect(isAlive(pid), `MCP server process ${pid} outlived the worker`).toBe(false);

    const shown = await cli(dir, ['task', 'show', id, '--json']);
    const record = z
      .looseObject({
        state: z.string(),
        task: z.looseObject({ result: z.looseObject({ status: z.string(), answer: z.string() }) }),
      })
      .parse(JSON.parse(shown.stdout));
    expect(record).toMatchObject({
      state: 'done',
      task: { result: { status: 'completed', answer: 'The file says: 42' } },
    });

    const [first] = model.requests;
    if (!first) throw new Error('the model got no request');
    // Only the named server's allowed tools are offered, beside the loop's own.
    expect(toolNamesOf(first)).toEqual(expect.arrayContaining(['files__read_text_file', 'files__write_file']));
    expect(toolNamesOf(first)).not.toContain('files__move_file');
    expect(toolNamesOf(first).some((name) => name.startsWith('everything__'))).toBe(false);
    // What the server returned reached the model fenced as untrusted data.
    const toolMessage = model.requests.flatMap(messagesOf).find((message) => message.role === 'tool');
    expect(toolMessage?.content).toContain('the answer is 42');
    expect(toolMessage?.content).toMatch(/untrusted/i);
  });

  it('holds a call of an irreversible MCP tool for the owner: it runs once after approval', async () => {
    await using dir = await tempDir();
    await dir.write('shared/.keep', '');
    const target = path.join(dir.path, 'shared/note.txt');
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const toolResult = messagesOf(request).find((message) => message.role === 'tool');
        if (!toolResult) {
          return { toolCalls: [{ name: 'files__write_file', arguments: { path: target, content: 'written once\n' } }] };
        }
        return { text: `Done: ${toolResult.content?.includes('error') ? 'refused' : 'written'}` };
      },
    });
    await writeConfig(dir, model.url);
    const enqueued = await cli(dir, [
      'enqueue',
      'system.agent',
      '--payload',
      JSON.stringify({ prompt: 'Write the note.', mcp_servers: ['files'] }),
    ]);
    const id = enqueued.stdout.trim().split(/\s+/).at(-1) ?? '';
    const approvals = z.array(z.looseObject({ id: z.string(), status: z.string(), title: z.string() }));
    const worker = startNode({ args: [cliMain, 'work'], cwd: dir.path });
    try {
      // write_file is irreversible (the server does not annotate it read-only): the loop waits for the owner.
      const [request] = await waitUntil(
        async () => {
          const listed = approvals.parse(JSON.parse((await cli(dir, ['approvals', '--json'])).stdout));
          return listed.length > 0 ? listed : undefined;
        },
        { what: 'an approval request for files__write_file' },
      );
      expect(JSON.stringify(request)).toContain('files__write_file');
      expect(await readFile(target, 'utf8').catch(() => 'absent')).toBe('absent');
      expect((await cli(dir, ['approve', request?.id ?? ''])).code).toBe(0);
      await waitUntil(
        async () => {
          const shown = JSON.parse((await cli(dir, ['task', 'show', id, '--json'])).stdout) as { state: string };
          return shown.state === 'done';
        },
        { what: 'the agent task to finish after the approval' },
      );
      expect(await readFile(target, 'utf8')).toBe('written once\n');
      const shown = JSON.parse((await cli(dir, ['task', 'show', id, '--json'])).stdout) as {
        task: { result: { answer: string } };
      };
      expect(shown.task.result.answer).toBe('Done: written');
      // Nothing else waits for the owner: the one request was the one call.
      expect(approvals.parse(JSON.parse((await cli(dir, ['approvals', '--json'])).stdout))).toEqual([]);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it("gives a chat turn the tools of the chat instance's mcp_servers", async () => {
    await using dir = await tempDir();
    await dir.write('shared/menu.txt', 'soup of the day: lentils\n');
    const file = path.join(dir.path, 'shared/menu.txt');
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const toolResult = messagesOf(request).find((message) => message.role === 'tool');
        if (!toolResult) return { toolCalls: [{ name: 'files__read_text_file', arguments: { path: file } }] };
        return { text: toolResult.content?.includes('lentils') ? 'Lentil soup today.' : 'I could not read it.' };
      },
    });
    await writeConfig(dir, model.url);
    await dir.write(
      'config.yaml',
      `${await readFile(path.join(dir.path, 'config.yaml'), 'utf8')}integrations:\n  - {type: chat, name: chat, mcp_servers: [files]}\n`,
    );
    const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
    const inbox = new ChatInbox({ directory: path.join(runtime.config.paths.dataDir, 'chat/inbox') });
    const conversations = new ConversationStore({
      notes: new FileNoteStore({ root: runtime.config.paths.notes }),
      inbox,
    });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    // As the server does it: the message is stored, then its turn task is enqueued.
    const { id: conversation } = await conversations.create({ mode: 'followup', title: 'lunch' });
    const { id: message } = await inbox.accept(conversation, { text: "What is on today's menu?" });
    const outcome = await queue.enqueue({
      type: 'chat.turn',
      payload: { conversation, message },
      priority: 1,
      source: 'api',
      integration: 'chat',
    });
    if (outcome.status !== 'enqueued') throw new Error(`the turn was not enqueued: ${outcome.status}`);
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    const [first] = model.requests;
    if (!first) throw new Error('the model got no request');
    expect(toolNamesOf(first)).toEqual(expect.arrayContaining(['files__read_text_file', 'search_notes']));
    const answered = model.requests.at(-1);
    expect(
      answered && messagesOf(answered).some((entry) => entry.role === 'tool' && entry.content?.includes('lentils')),
    ).toBe(true);
    const shown = await conversations.get(conversation);
    expect(JSON.stringify(shown)).toContain('Lentil soup today.');
  });

  it('holds a system.agent task back while its MCP server is down, instead of failing it', async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: 'unused' }) });
    await writeConfig(dir, model.url);
    await dir.write(
      'config.yaml',
      `${await readFile(path.join(dir.path, 'config.yaml'), 'utf8')}  broken:\n    command: ${JSON.stringify(path.join(dir.path, 'no-such-server'))}\n`,
    );
    const enqueued = await cli(dir, [
      'enqueue',
      'system.agent',
      '--payload',
      JSON.stringify({ prompt: 'hi', mcp_servers: ['broken'] }),
    ]);
    const id = enqueued.stdout.trim().split(/\s+/).at(-1) ?? '';
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    const shown = JSON.parse((await cli(dir, ['task', 'show', id, '--json'])).stdout) as {
      state: string;
      task: { createdAt: string; readyAt: string; attempts: number };
    };
    // Back in pending/ for a minute later, not failed: the attempt was not spent on the outage.
    expect(shown.state).toBe('pending');
    expect(shown.task.attempts).toBe(0);
    expect(Date.parse(shown.task.readyAt) - Date.parse(shown.task.createdAt)).toBeGreaterThan(50_000);
    expect(model.requests).toHaveLength(0);
  });

  it('fails a system.agent task naming an MCP server config does not define, without retries', async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({ respond: () => ({ text: 'unused' }) });
    await writeConfig(dir, model.url);
    const enqueued = await cli(dir, [
      'enqueue',
      'system.agent',
      '--payload',
      JSON.stringify({ prompt: 'hi', mcp_servers: ['nope'] }),
    ]);
    const id = enqueued.stdout.trim().split(/\s+/).at(-1) ?? '';
    expect((await cli(dir, ['work', '--exit-when-idle'])).code).toBe(0);
    const shown = JSON.parse((await cli(dir, ['task', 'show', id, '--json'])).stdout) as Record<string, unknown>;
    expect(shown.state).toBe('failed');
    expect(JSON.stringify(shown)).toContain('no MCP server named \\"nope\\"');
    expect(model.requests).toHaveLength(0);
  });
});

describe('assistant mcp ls', () => {
  it('lists each server with its transport, state and tools with tier and whether offered', async () => {
    await using dir = await tempDir();
    await writeConfig(dir, 'http://127.0.0.1:9/v1');
    await dir.write('shared/.keep', '');
    const listed = await cli(dir, ['mcp', 'ls']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('started to list its tools');
    expect(listed.stdout).toMatch(/^files {2}stdio {2}/m);
    expect(listed.stdout).toMatch(/^ {2}read_text_file +read_only +as files__read_text_file$/m);
    expect(listed.stdout).toMatch(/^ {2}write_file +irreversible +as files__write_file$/m);
    expect(listed.stdout).toMatch(/^ {2}move_file +irreversible +not offered/m);
    // config's read_only makes a tool read-only that the server does not annotate so.
    expect(listed.stdout).toMatch(/^ {2}toggle-simulated-logging +read_only/m);

    const json = z
      .array(
        z.looseObject({
          name: z.string(),
          transport: z.string(),
          state: z.string(),
          tools: z.array(z.looseObject({ name: z.string(), tier: z.string(), allowed: z.boolean() })),
        }),
      )
      .parse(JSON.parse((await cli(dir, ['mcp', 'ls', 'files', '--json'])).stdout));
    expect(json).toHaveLength(1);
    expect(json[0]).toMatchObject({ name: 'files', transport: 'stdio', state: 'up' });
    expect(json[0]?.tools).toContainEqual(expect.objectContaining({ name: 'move_file', allowed: false }));
  });

  it('says when a server does not start, and exits 1', async () => {
    await using dir = await tempDir();
    await dir.write('config.yaml', 'mcp_servers:\n  broken: {command: ./no-such-server}\n');
    const listed = await cli(dir, ['mcp', 'ls']);
    expect(listed.code).toBe(1);
    expect(listed.stdout).toMatch(/broken {2}stdio {2}\.\/no-such-server\n {2}failed to start: .*ENOENT/);
  });
});

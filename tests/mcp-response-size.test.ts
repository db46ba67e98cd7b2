// Answers larger than a server's max_response_bytes (issue 30, item 7). Over stdio the SDK's read buffer threw past
// 10 MiB inside a stream listener, uncaught: the process died. Over streamable HTTP a JSON answer was read whole. Here:
// real server-filesystem reading an 11 MiB file, and a loopback HTTP server answering with 400 MB (JSON and SSE);
// the call fails with MCP_RESPONSE_TOO_LARGE, the server stays usable, and three in a row open its breaker.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Tool, ToolContext } from '@assistant/agent';
import type { McpServerConfig } from '@assistant/config';
import { isAssistantError } from '@assistant/errors';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { McpServers } from '@assistant/mcp';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { type AnswerFormat, startHugeAnswerServer } from './helpers/huge-answer-mcp-server.ts';
import { cliMain, repoRoot, startNode } from './helpers/node-process.ts';
import { isAlive } from './helpers/process-alive.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const filesystemMain = path.join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
const mebibyte = 1024 * 1024;
const common = {
  allow: ['*'],
  deny: [],
  readOnly: [],
  timeoutMs: 60_000,
  trustAnnotations: true,
  maxResponseBytes: 8 * mebibyte,
};

const toolContext = () => ({ signal: AbortSignal.timeout(60_000) }) as ToolContext;
/** Writing 11 MiB and reading it through a server is slow on a loaded machine; the tests wait on outcomes, not time. */
const slow = { timeout: 120_000 };

function byName(tools: readonly Tool[], name: string): Tool {
  const tool = tools.find((candidate) => candidate.name === name);
  if (!tool) throw new Error(`no tool ${name} among ${tools.map((candidate) => candidate.name).join(', ')}`);
  return tool;
}

async function failure(run: Promise<unknown>): Promise<Error> {
  const outcome = await run.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a failure, got ${String(outcome.value).slice(0, 200)}`);
  return outcome.error as Error;
}

describe('an MCP answer larger than max_response_bytes', () => {
  it(
    'over stdio (server-filesystem, an 11 MiB file): fails the call typed, and the server answers the next call',
    slow,
    async () => {
      await using directory = await tempDir();
      await directory.write('shared/big.txt', 'y'.repeat(11 * mebibyte));
      await directory.write('shared/small.txt', 'still here\n');
      const root = path.join(directory.path, 'shared');
      const files: McpServerConfig = {
        transport: 'stdio',
        command: process.execPath,
        args: [filesystemMain, root],
        env: {},
        ...common,
      };
      await using servers = new McpServers({ servers: { files } });
      const tools = await servers.toolsFor(['files']);
      const read = byName(tools, 'files__read_text_file');
      const pid = servers.status('files').pid;

      const error = await failure(read.run({ path: path.join(root, 'big.txt') }, toolContext()));
      expect(isAssistantError(error, 'MCP_RESPONSE_TOO_LARGE'), String(error)).toBe(true);
      // The server sends the text twice (as content and as structuredContent): 22 MiB.
      expect(error.message).toMatch(
        /^MCP server files answered calling read_text_file with 22 MiB, more than the 8 MiB allowed/,
      );
      expect(error.message).toContain('(MCP_RESPONSE_TOO_LARGE)');

      // The same process, still in step: the next answer is read as usual.
      expect(await read.run({ path: path.join(root, 'small.txt') }, toolContext())).toBe('still here\n');
      expect(servers.status('files')).toMatchObject({ state: 'ready', pid, restarts: 0 });
    },
  );

  it.each<AnswerFormat>(['json', 'sse'])(
    'over streamable HTTP (400 MB as %s): stops reading at the limit and fails the call typed',
    slow,
    async (format) => {
      await using remote = await startHugeAnswerServer({ answerBytes: 400 * mebibyte, format });
      const huge: McpServerConfig = { transport: 'http', url: remote.url, headers: {}, ...common };
      await using servers = new McpServers({ servers: { huge } });
      const tools = await servers.toolsFor(['huge']);

      const error = await failure(byName(tools, 'huge__huge').run({}, toolContext()));
      expect(isAssistantError(error, 'MCP_RESPONSE_TOO_LARGE'), String(error)).toBe(true);
      expect(error.message).toContain('with more than 8 MiB (reading stopped there)');
      // Far from all 400 MB was sent: the client hung up at the limit (what the socket buffers held aside).
      expect(remote.answerBytesWritten()).toBeLessThan(100 * mebibyte);
      expect(await byName(tools, 'huge__small').run({}, toolContext())).toBe('ok');
    },
  );

  it('reads only the first part of a 400 MB refusal (HTTP 500), and passes a short message on', slow, async () => {
    await using remote = await startHugeAnswerServer({ answerBytes: 400 * mebibyte, format: 'refusal' });
    const huge: McpServerConfig = { transport: 'http', url: remote.url, headers: {}, ...common };
    await using servers = new McpServers({ servers: { huge } });
    const tools = await servers.toolsFor(['huge']);
    const error = await failure(byName(tools, 'huge__huge').run({}, toolContext()));
    expect(isAssistantError(error, 'MCP_CALL_FAILED'), String(error)).toBe(true);
    expect(error.message).toContain('Internal error: xxx');
    expect(error.message.length).toBeLessThan(3_000);
    expect(remote.answerBytesWritten()).toBeLessThan(100 * mebibyte);
  });

  it("keeps only the start of a stdio server's endless stderr line to explain why it stopped", slow, async () => {
    const noisy: McpServerConfig = {
      transport: 'stdio',
      command: process.execPath,
      args: ['-e', `process.stderr.write('e'.repeat(${20 * mebibyte}), () => process.exit(1))`],
      env: {},
      ...common,
    };
    await using servers = new McpServers({ servers: { noisy } });
    const error = await failure(servers.toolsFor(['noisy']));
    expect(isAssistantError(error, 'MCP_SERVER_UNAVAILABLE'), String(error)).toBe(true);
    expect(error.message).toContain('its last output:\neeee');
    expect(error.message.length).toBeLessThan(5_000);
  });

  it("counts against the server's breaker: three in a row stop it, and calls fail at once until its backoff passes", async () => {
    await using remote = await startHugeAnswerServer({ answerBytes: 2 * mebibyte, format: 'json' });
    const huge: McpServerConfig = {
      transport: 'http',
      url: remote.url,
      headers: {},
      ...common,
      maxResponseBytes: mebibyte,
    };
    await using servers = new McpServers({ servers: { huge }, restartBackoff: { initialMs: 60_000, maxMs: 60_000 } });
    const tool = byName(await servers.toolsFor(['huge']), 'huge__huge');
    for (let call = 1; call <= 3; call++) {
      const error = await failure(tool.run({}, toolContext()));
      expect(isAssistantError(error, 'MCP_RESPONSE_TOO_LARGE'), String(error)).toBe(true);
    }
    expect(servers.status('huge')).toMatchObject({
      state: 'down',
      lastError: expect.stringContaining('3 times in a row'),
    });
    const error = await failure(tool.run({}, toolContext()));
    expect(isAssistantError(error, 'MCP_SERVER_UNAVAILABLE'), String(error)).toBe(true);
    expect(remote.calls()).toBe(3);
  });

  it('resets the count after an answer within the limit', async () => {
    await using remote = await startHugeAnswerServer({ answerBytes: 2 * mebibyte, format: 'sse' });
    const huge: McpServerConfig = {
      transport: 'http',
      url: remote.url,
      headers: {},
      ...common,
      maxResponseBytes: mebibyte,
    };
    await using servers = new McpServers({ servers: { huge } });
    const tools = await servers.toolsFor(['huge']);
    for (const name of ['huge__huge', 'huge__huge', 'huge__small', 'huge__huge', 'huge__huge']) {
      await byName(tools, name)
        .run({}, toolContext())
        .catch(() => {});
    }
    expect(servers.status('huge').state).toBe('ready');
  });
});

type Message = { role: string; content: string | null };
const messagesOf = (request: FakeChatRequest) => request.body.messages as Message[];

/** The most a process has held in memory so far (its high-water mark), in bytes. */
async function peakRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kibibytes = /^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kibibytes === undefined) throw new Error(`no VmHWM in /proc/${pid}/status`);
  return Number(kibibytes) * 1024;
}

describe('assistant start with MCP servers that answer too much', () => {
  it('keeps the worker up and under 300 MB through an 11 MiB stdio answer and a 400 MB HTTP answer; /health answers throughout', {
    timeout: 240_000,
  }, async () => {
    await using dir = await tempDir();
    await dir.write('shared/big.txt', 'y'.repeat(11 * mebibyte));
    const bigFile = path.join(dir.path, 'shared/big.txt');
    await using remote = await startHugeAnswerServer({ answerBytes: 400 * mebibyte, format: 'json' });
    // The model calls the tool its prompt names, then answers with what the tool said.
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const messages = messagesOf(request);
        const toolResult = messages.find((message) => message.role === 'tool');
        if (toolResult) return { text: `The tool said: ${toolResult.content ?? ''}` };
        const prompt = messages.find((message) => message.role === 'user')?.content ?? '';
        return prompt.includes('big.txt')
          ? { toolCalls: [{ name: 'files__read_text_file', arguments: { path: bigFile } }] }
          : { toolCalls: [{ name: 'huge__huge', arguments: {} }] };
      },
    });
    const port = await freePort();
    const config = await dir.write(
      'config.yaml',
      `data_dir: ./data
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 5s}
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
mcp_servers:
  files:
    command: ${JSON.stringify(process.execPath)}
    args: [${JSON.stringify(filesystemMain)}, ./shared]
    cwd: .
    timeout: 2m
  huge:
    url: ${remote.url}
    timeout: 2m
`,
    );
    const start = startNode({ args: [cliMain, 'start', '--config', config] });
    let workerPid = 0;
    const healthFailures: string[] = [];
    let healthChecks = 0;
    let polling = true;
    try {
      workerPid = Number((await start.waitForOutput(/^\[assistant\] worker started \(pid (\d+)\)$/m))[1]);
      await start.waitForOutput(/^\[worker\] .*worker ready/m);
      await waitUntil(
        () =>
          fetch(`http://127.0.0.1:${port}/health`).then(
            (response) => response.ok,
            () => false,
          ),
        {
          what: '/health to answer',
        },
      );
      // /health is asked all along, one request after another.
      const healthPolling = (async () => {
        while (polling) {
          healthChecks += 1;
          const answer = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(20_000) }).then(
            (response) => (response.ok ? 'ok' : `HTTP ${response.status}`),
            (error: unknown) => String(error),
          );
          if (answer !== 'ok') healthFailures.push(answer);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      })();

      // Through the REST API: a CLI process per poll costs a loaded machine more than the test does.
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      for (const prompt of ['What is in big.txt?', 'Call the huge tool.']) {
        const created = await api(`http://127.0.0.1:${port}/api/tasks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ type: 'system.agent', payload: { prompt, mcp_servers: ['files', 'huge'] } }),
        });
        expect(created.status, await created.clone().text()).toBe(201);
        const { id } = z.object({ id: z.string() }).parse(await created.json());
        const taskShape = z.looseObject({
          state: z.string(),
          result: z.looseObject({ answer: z.string() }).optional(),
          error: z.unknown().optional(),
        });
        const task = await waitUntil(
          async () => {
            const response = await api(`http://127.0.0.1:${port}/api/tasks/${id}`);
            const record = taskShape.parse(await response.json());
            return record.state === 'done' || record.state === 'failed' ? record : undefined;
          },
          { what: `the task "${prompt}" to finish`, timeoutMs: 150_000 },
        );
        // The tool call failed typed; the model read why and said so.
        expect(task.state, JSON.stringify(task.error)).toBe('done');
        expect(task.result?.answer).toContain('MCP_RESPONSE_TOO_LARGE');
        expect(isAlive(workerPid), 'the worker died').toBe(true);
      }
      polling = false;
      await healthPolling;
      expect(healthFailures).toEqual([]);
      expect(healthChecks).toBeGreaterThan(1);
      const peak = await peakRssBytes(workerPid);
      expect(peak, `the worker's peak RSS was ${Math.round(peak / mebibyte)} MiB`).toBeLessThan(300 * mebibyte);
      expect(remote.answerBytesWritten()).toBeLessThan(100 * mebibyte);
      // The worker never restarted: the same process ran both tasks.
      expect(start.stdout().match(/worker started \(pid/g)).toHaveLength(1);
    } finally {
      polling = false;
      start.child.kill('SIGTERM');
      await start.exited;
    }
  });
});

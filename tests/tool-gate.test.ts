// The tool gate with a real worker (`assistant work`): an agent loop (the test-only `scribe` integration, scripted by
// a fake OpenAI-compatible model) calls an irreversible tool; the call waits as an approval request the owner
// decides with `assistant approve` / `assistant reject`, and config.yaml's `tools: {deny}` refuses without asking.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { cliMain, repoRoot, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const fixtures = path.join(repoRoot, 'tests/fixtures/integrations/tool-gate');

const approvalList = z.array(
  z.looseObject({
    id: z.string(),
    kind: z.literal('tool_call').optional(),
    status: z.string(),
    tool_call: z.looseObject({ tool: z.string(), arguments: z.string(), task: z.string() }).optional(),
  }),
);
const taskView = z.looseObject({ state: z.string(), task: z.looseObject({ result: z.unknown().optional() }) });

type Message = { role: string; content: string | null };
const messagesOf = (request: FakeChatRequest) => request.body.messages as Message[];

/** Asks for `scribble` with the prompt as the line; once the tool answered, repeats its answer as the final text. */
function scribeModel(request: FakeChatRequest): FakeReply {
  const messages = messagesOf(request);
  const last = messages.at(-1);
  if (last?.role === 'tool') return { text: `tool said: ${last.content ?? ''}` };
  const prompt = messages.find((message) => message.role === 'user')?.content ?? '';
  return { toolCalls: [{ name: 'scribble', arguments: { line: prompt } }] };
}

async function setup(dir: TempDir, llmUrl: string, tools: string): Promise<string> {
  return dir.write(
    'config.yaml',
    `data_dir: ./data
integration_dirs: [${JSON.stringify(fixtures)}]
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${llmUrl}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
${tools}
`,
  );
}

describe('the tool gate in a real worker', () => {
  it('holds an irreversible call until approved (it then runs once), and refuses it when rejected', async () => {
    await using model = await FakeOpenAiServer.start({ respond: scribeModel });
    await using dir = await tempDir();
    const config = await setup(dir, model.url, 'tools: {approval_timeout: 10m}');
    const cli = async (args: string[]) => {
      const run = await runCli([...args, '--config', config]);
      expect(run.stderr, args.join(' ')).toBe('');
      expect(run.code, args.join(' ')).toBe(0);
      return run.stdout;
    };
    const pending = async () => approvalList.parse(JSON.parse(await cli(['approvals', '--json'])));
    const lines = () => readFile(path.join(dir.path, 'data/scribe/lines.txt'), 'utf8').catch(() => '');
    const task = async (id: string) => taskView.parse(JSON.parse(await cli(['task', 'show', id, '--json'])));
    const worker = startNode({ args: [cliMain, 'work', '--config', config] });
    try {
      // Approved: the call waits, then runs once, and the loop completes with the tool's answer.
      const first = (await cli(['enqueue', 'scribe.agent', '--payload', '{"prompt":"hello"}'])).trim();
      const [request] = await waitUntil(async () => ((await pending()).length > 0 ? pending() : undefined), {
        what: 'an approval request for the scribble call',
      });
      expect(request).toMatchObject({
        kind: 'tool_call',
        status: 'pending',
        tool_call: { tool: 'scribble', arguments: '{"line":"hello"}', task: first },
      });
      expect(await cli(['approvals'])).toContain(`call scribble {"line":"hello"} for task ${first}`);
      expect(await lines()).toBe('');
      expect((await task(first)).state).toBe('active');

      expect(await cli(['approve', request?.id ?? ''])).toContain('the waiting agent loop runs call scribble');
      const done = await waitUntil(
        async () => {
          const shown = await task(first);
          return shown.state === 'done' ? shown : undefined;
        },
        { what: 'the approved task to finish' },
      );
      expect(done.task.result).toMatchObject({ status: 'completed', answer: expect.stringContaining('hello') });
      expect(await lines()).toBe('hello\n');
      expect(await cli(['approvals', '--all', '--json'])).toContain('"tool_ran_at"');

      // Rejected: the model reads the refusal, the tool does not run, the loop still completes.
      const second = (await cli(['enqueue', 'scribe.agent', '--payload', '{"prompt":"again"}'])).trim();
      const [again] = await waitUntil(async () => ((await pending()).length > 0 ? pending() : undefined), {
        what: 'a second approval request',
      });
      await cli(['reject', again?.id ?? '']);
      const refused = await waitUntil(
        async () => {
          const shown = await task(second);
          return shown.state === 'done' ? shown : undefined;
        },
        { what: 'the rejected task to finish' },
      );
      expect(refused.task.result).toMatchObject({
        status: 'completed',
        answer: expect.stringContaining('error: refused: the owner rejected calling scribble'),
      });
      expect(await lines()).toBe('hello\n');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });

  it('refuses a call config.yaml denies, without asking', async () => {
    await using model = await FakeOpenAiServer.start({ respond: scribeModel });
    await using dir = await tempDir();
    const config = await setup(dir, model.url, 'tools: {deny: [scrib*]}');
    await runCli(['enqueue', 'scribe.agent', '--payload', '{"prompt":"nope"}', '--config', config]);
    const work = await runCli(['work', '--exit-when-idle', '--config', config]);
    expect(work.code).toBe(0);

    const answer = messagesOf(model.requests.at(-1) as FakeChatRequest).at(-1)?.content ?? '';
    expect(answer).toContain("error: refused: config.yaml's tools.deny lists scrib*");
    const approvals = await runCli(['approvals', '--all', '--json', '--config', config]);
    expect(JSON.parse(approvals.stdout)).toEqual([]);
    await expect(readFile(path.join(dir.path, 'data/scribe/lines.txt'), 'utf8')).rejects.toThrow();
  });
});

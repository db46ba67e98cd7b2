// Code as action through the real worker (issue 36): a system.agent loop of a `code_mode: discovery` persona writes a
// cell over an MCP server's tools; every call from the cell passes the tool gate (an irreversible send waits for the
// owner, rendered in full), and the worker is SIGKILLed while one task's cell waits for an approval and another's
// cell is inside an irreversible call. After the restart both complete, and each irreversible call ran at most once:
// the approved sends once each, the interrupted one never again (its cell is told its result was lost).
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
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { startOutboxServer } from './helpers/outbox-mcp-server.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

type Message = { role: string; content: string | null };
const messagesOf = (request: FakeChatRequest) => request.body.messages as Message[];
const toolNamesOf = (request: FakeChatRequest) =>
  ((request.body.tools ?? []) as { function: { name: string } }[]).map((tool) => tool.function.name);

/** Writes to every address, each send waiting for the owner. */
const sendToAll = `const to = JSON.parse(await tools.outbox.list({}));
const done = [];
for (const address of to) done.push(await tools.outbox.send({ to: address }));
return done;`;

/** One slow irreversible send, allowed without approval by config.yaml; the worker dies while it runs. */
const slowSend = `const to = JSON.parse(await tools.outbox.list({}));
try {
  return await tools.outbox.slow_send({ to: to[0] });
} catch (error) {
  return 'lost: ' + error.message;
}`;

const cli = (dir: TempDir, args: readonly string[]) => runCli(args, { cwd: dir.path });

const approvalsSchema = z.array(
  z.looseObject({
    id: z.string(),
    status: z.string(),
    expires_at: z.string(),
    tool_call: z.looseObject({ arguments: z.string() }).optional(),
  }),
);

async function pendingApprovals(dir: TempDir) {
  const listed = await cli(dir, ['approvals', '--json']);
  return approvalsSchema.parse(JSON.parse(listed.stdout)).filter((approval) => approval.status === 'pending');
}

async function taskState(dir: TempDir, id: string): Promise<{ state: string; answer?: string }> {
  const shown = JSON.parse((await cli(dir, ['task', 'show', id, '--json'])).stdout) as {
    state: string;
    task: { result?: { answer?: string } };
  };
  return { state: shown.state, ...(shown.task.result?.answer ? { answer: shown.task.result.answer } : {}) };
}

describe('code as action in a worker', () => {
  it('gates every call from code, and survives SIGKILL mid-approval and mid-call: each irreversible call at most once, every run completes', async () => {
    await using dir = await tempDir();
    await using outbox = await startOutboxServer({ addresses: ['ann@example.com', 'bob@example.com'] });
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const messages = messagesOf(request);
        const prompt = messages.find((message) => message.role === 'user')?.content ?? '';
        const result = messages.find((message) => message.role === 'tool');
        if (result) return { text: `${prompt} finished: ${result.content}` };
        return {
          toolCalls: [{ name: 'run_code', arguments: { code: prompt.startsWith('A') ? sendToAll : slowSend } }],
        };
      },
    });
    await dir.write(
      'personas/coder.md',
      '---\ncode_mode: discovery\ntools: {allow: [run_code, search_tools, "outbox__*"]}\nmcp_servers: [outbox]\n---\nYou write code.\n',
    );
    await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model, capabilities: {tools: true}}
worker: {shutdown_grace: 1s, poll_interval: 100ms}
tools: {allow: [outbox__slow_send]}
mcp_servers:
  outbox: {url: "${outbox.url}"}
`,
    );
    const enqueue = async (prompt: string) => {
      const enqueued = await cli(dir, [
        'enqueue',
        'system.agent',
        '--payload',
        JSON.stringify({ prompt, persona: 'coder' }),
      ]);
      expect(enqueued.code, enqueued.stderr).toBe(0);
      return enqueued.stdout.trim().split(/\s+/).at(-1) ?? '';
    };
    const a = await enqueue('A: write to everyone');
    const b = await enqueue('B: write to the first');

    let worker = startNode({ args: [cliMain, 'work'], cwd: dir.path });
    try {
      // A's cell waits for the owner on its first send; B's cell is inside slow_send. The worker dies now.
      const [first] = await waitUntil(
        async () => {
          const pending = await pendingApprovals(dir);
          return pending.length > 0 && outbox.held() === 1 ? pending : undefined;
        },
        { what: "A's first send to wait for approval while B's slow_send runs", timeoutMs: 40_000 },
      );
      expect(first?.tool_call?.arguments).toBe('{"to":"ann@example.com"}');
      worker.child.kill('SIGKILL');
      await worker.exited;
      expect(outbox.sent()).toEqual(['slow_send:ann@example.com']);

      worker = startNode({ args: [cliMain, 'work'], cwd: dir.path });
      // The restarted worker withdraws the dead loop's request, and the resumed cell, asking for the same call, opens
      // the same request again (a new expiry): approved now.
      await waitUntil(
        async () =>
          (await pendingApprovals(dir)).some(
            (approval) => approval.id === first?.id && approval.expires_at !== first?.expires_at,
          ),
        { what: 'the first send to wait for approval again after the restart', timeoutMs: 40_000 },
      );
      const approvedFirst = await cli(dir, ['approve', first?.id ?? '']);
      expect(approvedFirst.code, approvedFirst.stdout + approvedFirst.stderr).toBe(0);
      const [second] = await waitUntil(
        async () => {
          const pending = (await pendingApprovals(dir)).filter((approval) => approval.id !== first?.id);
          return pending.length > 0 ? pending : undefined;
        },
        { what: "A's second send to wait for approval", timeoutMs: 40_000 },
      );
      expect(second?.tool_call?.arguments).toBe('{"to":"bob@example.com"}');
      const approvedSecond = await cli(dir, ['approve', second?.id ?? '']);
      expect(approvedSecond.code, approvedSecond.stdout + approvedSecond.stderr).toBe(0);

      const finished = await waitUntil(
        async () => {
          const [stateA, stateB] = await Promise.all([taskState(dir, a), taskState(dir, b)]);
          return stateA.state === 'done' && stateB.state === 'done' ? { stateA, stateB } : undefined;
        },
        { what: 'both tasks to finish', timeoutMs: 40_000 },
      );
      expect(finished.stateA.answer).toContain('sent to ann@example.com');
      expect(finished.stateA.answer).toContain('sent to bob@example.com');
      // B's send ran before the crash; its result was lost with the worker, and it was not sent again.
      expect(finished.stateB.answer).toContain('result was lost');
      expect([...outbox.sent()].sort()).toEqual([
        'send:ann@example.com',
        'send:bob@example.com',
        'slow_send:ann@example.com',
      ]);

      // Discovery first: the model was offered the code tools, not the server's tools one by one.
      const offered = toolNamesOf(model.requests[0] as FakeChatRequest);
      expect(offered).toEqual(expect.arrayContaining(['run_code', 'search_tools']));
      expect(offered.some((name) => name.startsWith('outbox__'))).toBe(false);
      // The approval the owner read showed the call in full, and said which cell it came from.
      const note = await readFile(path.join(dir.path, 'data/notes/approvals', `${first?.id}.md`), 'utf8');
      expect(note).toContain('outbox__send');
      expect(note).toContain('ann@example.com');
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  }, 150_000);

  it("lets a cell find and call the owner's scripts, alongside the JSON tools", async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const results = messagesOf(request).filter((message) => message.role === 'tool');
        if (results.length === 0)
          return { toolCalls: [{ name: 'search_tools', arguments: { query: 'stamp a label' } }] };
        if (results.length === 1) {
          return {
            toolCalls: [
              {
                name: 'run_code',
                arguments: { code: 'const a = await tools.scripts.stamp({ label: "first" });\nreturn a.result;' },
              },
            ],
          };
        }
        return { text: `found: ${results[0]?.content}\nran: ${results[1]?.content}` };
      },
    });
    await dir.write(
      'personas/clerk.md',
      '---\ncode_mode: alongside\ntools: {allow: [run_code, search_tools, search_notes, read_note, "script_*"]}\n---\nYou are a clerk.\n',
    );
    await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model, capabilities: {tools: true}}
worker: {shutdown_grace: 1s, poll_interval: 100ms, sandbox: none} # the script sandbox has its own tests
scripts:
  stamp:
    description: stamps a label on the day's folder
    shell: |
      printf '{"stamped": "%s"}' "$ASSISTANT_INPUT_LABEL" > "$ASSISTANT_RESULT_FILE"
    inputs: [label]
    reversible: true
`,
    );
    const enqueued = await cli(dir, [
      'enqueue',
      'system.agent',
      '--payload',
      JSON.stringify({ prompt: 'Stamp it.', persona: 'clerk' }),
    ]);
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const id = enqueued.stdout.trim().split(/\s+/).at(-1) ?? '';
    const worked = await cli(dir, ['work', '--exit-when-idle']);
    expect(worked.code, worked.stderr).toBe(0);
    const { state, answer } = await taskState(dir, id);
    expect(state).toBe('done');
    // search_tools found the script as a function, with its input, and the cell ran it in its sandbox.
    expect(answer).toMatch(/tools\.scripts\.stamp/);
    expect(answer).toMatch(/label\?:/);
    expect(answer).toMatch(/ran: [\s\S]*stamped[\s\S]*first/);
    // Alongside: the JSON tools stay offered next to the code tools; scripts are reached from code only.
    const offered = toolNamesOf(model.requests[0] as FakeChatRequest);
    expect(offered).toEqual(expect.arrayContaining(['run_code', 'search_tools', 'search_notes', 'read_note']));
    expect(offered.some((name) => name.startsWith('script_'))).toBe(false);
  }, 60_000);

  it("gives a chat turn its persona's code mode", async () => {
    await using dir = await tempDir();
    await using model = await FakeOpenAiServer.start({
      respond: (request): FakeReply => {
        const result = messagesOf(request).find((message) => message.role === 'tool');
        if (result)
          return { text: result.content?.includes('notes/menu.md') ? 'The menu is in your notes.' : 'No menu.' };
        const code =
          'const found = await tools.notes.search({ query: "lentils" });\nreturn found.map((note) => note.path);';
        return { toolCalls: [{ name: 'run_code', arguments: { code } }] };
      },
    });
    await dir.write('data/notes/notes/menu.md', '---\ntitle: Menu\n---\nsoup of the day: lentils\n');
    await dir.write(
      'personas/clerk.md',
      '---\ncode_mode: discovery\ntools: {allow: [run_code, search_tools, search_notes, read_note, ask_owner]}\n---\nYou are a clerk.\n',
    );
    await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model, capabilities: {tools: true}}
worker: {shutdown_grace: 1s, poll_interval: 100ms}
integrations:
  - {type: chat, name: chat, persona: clerk}
`,
    );
    const runtime = await loadRuntime({ installation, configPath: path.join(dir.path, 'config.yaml'), cwd: dir.path });
    const inbox = new ChatInbox({ directory: path.join(runtime.config.paths.dataDir, 'chat/inbox') });
    const conversations = new ConversationStore({
      notes: new FileNoteStore({ root: runtime.config.paths.notes }),
      inbox,
    });
    const queue = await openFileTaskQueue({ directory: runtime.config.paths.queue, settings: runtime.config.queue });
    const { id: conversation } = await conversations.create({ mode: 'followup', title: 'lunch' });
    const { id: message } = await inbox.accept(conversation, { text: 'Where is the menu?' });
    const outcome = await queue.enqueue({
      type: 'chat.turn',
      payload: { conversation, message },
      priority: 1,
      source: 'api',
      integration: 'chat',
    });
    if (outcome.status !== 'enqueued') throw new Error(`the turn was not enqueued: ${outcome.status}`);
    const worked = await cli(dir, ['work', '--exit-when-idle']);
    expect(worked.code, worked.stderr).toBe(0);
    // Discovery: the code tools and the tools a cell cannot call (ask_owner waits for the owner), nothing else.
    expect(toolNamesOf(model.requests[0] as FakeChatRequest).sort()).toEqual(['ask_owner', 'run_code', 'search_tools']);
    expect(JSON.stringify(await conversations.get(conversation))).toContain('The menu is in your notes.');
  }, 60_000);
});

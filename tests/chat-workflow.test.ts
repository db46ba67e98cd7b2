// A workflow started from chat, end to end: `assistant start` (server and worker as child processes), the owner writes
// in a conversation over REST, the chat model (a scripted OpenAI-compatible fake on loopback) calls run_workflow — first
// with a misspelt name, whose WORKFLOW_UNKNOWN names the workflows, then with the right one — and the pipeline's
// personas answer; the run's output arrives as a message in the same conversation, once.
import path from 'node:path';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { FileNoteStore } from '@assistant/notes';
import { describe, expect, it } from 'vitest';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, startNode } from './helpers/node-process.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

interface WireMessage {
  role: string;
  content: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

const messagesOf = (request: FakeChatRequest) => request.body.messages as WireMessage[];
const systemOf = (request: FakeChatRequest) =>
  messagesOf(request).find((message) => message.role === 'system')?.content ?? '';

/** The workflow's personas (their instructions start with `You are the <name>.`), and the chat model. */
function respond(request: FakeChatRequest): FakeReply {
  const persona = /You are the (\w+)\./.exec(systemOf(request))?.[1];
  const task = messagesOf(request).find((message) => message.role === 'user')?.content ?? '';
  if (persona === 'researcher') return { text: 'FACT: cats sleep 16 hours a day' };
  if (persona === 'writer') {
    return { text: `ARTICLE (${task.includes('FACT: cats sleep') ? 'from the facts' : 'without facts'})` };
  }
  const last = messagesOf(request).at(-1);
  if (last?.role !== 'tool') {
    return { toolCalls: [{ name: 'run_workflow', arguments: { workflow: 'articel', input: 'cats' } }] };
  }
  const content = last.content ?? '';
  if (content.includes('WORKFLOW_UNKNOWN')) {
    // The error named the workflows there are: the model corrects the name.
    const named = /the workflows are ([a-z, -]+)/.exec(content)?.[1] ?? '';
    return {
      toolCalls: [
        {
          name: 'run_workflow',
          arguments: { workflow: named.includes('article') ? 'article' : 'none', input: 'cats' },
        },
      ],
    };
  }
  const run = /run-\d{8}-[a-z0-9]+/.exec(content)?.[0];
  return { text: run ? `Started ${run}; its answer will be posted here.` : `unexpected: ${content.slice(0, 200)}` };
}

interface ChatMessage {
  id: string;
  role: string;
  text: string;
  status: string;
}

describe('a workflow started from chat', () => {
  it("runs the owner's workflow and posts its output into the same conversation, once", {
    timeout: 90_000,
  }, async () => {
    await using model = await FakeOpenAiServer.start({ respond });
    await using dir = await tempDir();
    const port = await freePort();
    const configPath = await dir.write(
      'config.yaml',
      `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${model.url}", model: fake-model}
server: {port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 50ms}
`,
    );
    for (const name of ['researcher', 'writer']) {
      await dir.write(
        `personas/${name}.md`,
        `---\ntools: {allow: [search_notes]}\n---\n\nYou are the ${name}. Be brief.\n`,
      );
    }
    await dir.write(
      'agents/article.yaml',
      `topology: pipeline
description: research, then write
steps:
  - {persona: researcher, task: "Find facts about {{input}}"}
  - {persona: writer, task: "Write an article from: {{previous}}"}
`,
    );
    const assistant = startNode({ args: [cliMain, 'start', '--config', configPath], cwd: dir.path });
    try {
      await assistant.waitForOutput(/listening on/, { timeoutMs: 25_000 });
      await assistant.waitForOutput(/worker ready/, { timeoutMs: 25_000 });
      const api = fetchWithToken(await readApiToken(path.join(dir.path, 'data')));
      const base = `http://127.0.0.1:${port}`;
      const post = async (url: string, body: unknown) => {
        const response = await api(`${base}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const messagesIn = async (chat: string) =>
        ((await (await api(`${base}/api/chats/${chat}`)).json()) as { messages: ChatMessage[] }).messages;

      const created = await post('/api/chats', { title: 'Cats' });
      expect(created.status).toBe(201);
      const chat = String(created.body.id);
      const asked = await post(`/api/chats/${chat}/messages`, {
        text: 'Run the article workflow on cats, please.',
        client_id: 'owner-1',
      });
      expect(asked.status).toBe(202);

      // The turn answers at once with the run id; the run's answer follows as a message of its own.
      const reply = await waitUntil(
        async () =>
          (await messagesIn(chat)).find((message) => message.role === 'assistant' && /^Started/.test(message.text)),
        { what: "the chat turn's reply", timeoutMs: 25_000 },
      );
      const run = /run-\d{8}-[a-z0-9]+/.exec(reply.text)?.[0] ?? '';
      expect(run).not.toBe('');
      const answer = await waitUntil(
        async () => (await messagesIn(chat)).find((message) => message.id === `wf-${run}`),
        { what: 'the run’s answer in the conversation', timeoutMs: 60_000 },
      );
      expect(answer).toMatchObject({ role: 'assistant', status: 'complete' });
      expect(answer.text).toBe(
        `Workflow \`article\` (pipeline), run ${run}: done.\n\nARTICLE (from the facts)\n\n(The run note is agents/runs/${run}.md.)`,
      );

      // The model saw the typed error with the names, and corrected itself; one run was started.
      const toolResults = model.requests.flatMap((request) =>
        messagesOf(request)
          .filter((message) => message.role === 'tool')
          .map((message) => message.content ?? ''),
      );
      expect(
        toolResults.some((text) =>
          /error: WORKFLOW_UNKNOWN: no workflow "articel" \(the workflows are article/.test(text),
        ),
      ).toBe(true);
      const notes = new FileNoteStore({ root: path.join(dir.path, 'data/notes') });
      const note = await notes.read(`agents/runs/${run}.md`);
      expect(note?.data).toMatchObject({ workflow: 'article', status: 'done', input: 'cats' });
      // The input was the chat model's words: the first step got it fenced as untrusted.
      const researcherTask = model.requests
        .filter((request) => /You are the researcher\./.test(systemOf(request)))
        .map((request) => messagesOf(request).find((message) => message.role === 'user')?.content ?? '')[0];
      expect(researcherTask).toMatch(/Find facts about <<<UNTRUSTED-[0-9a-f]+ input>>>\ncats\n/);

      const messages = await messagesIn(chat);
      expect(messages.filter((message) => message.id === `wf-${run}`)).toHaveLength(1);
      expect(messages.map((message) => message.role)).toEqual(['user', 'assistant', 'assistant']);
    } finally {
      assistant.child.kill('SIGTERM');
      await assistant.exited;
    }
  });
});

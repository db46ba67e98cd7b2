// Cross-process steering: a real server and worker (`assistant start`), an agent task talking to a fake
// OpenAI-compatible server, steered over REST; and a worker killed mid-loop whose task resumes from its transcript.
import { setTimeout as delay } from 'node:timers/promises';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, runCli, startNode } from './helpers/node-process.ts';
import { type TempDir, tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const taskView = z.looseObject({ id: z.string(), state: z.string(), result: z.unknown().optional() });

/** Agent model calls carry tools; the read-only `ask` call does not. */
const isAgentCall = (request: FakeChatRequest) => Array.isArray(request.body.tools);
const lastUserText = (request: FakeChatRequest) => {
  const messages = request.body.messages as { role: string; content: string | null }[];
  return messages.filter((message) => message.role === 'user').map((message) => message.content ?? '');
};

/** The fake model: keeps waiting in small steps until told to finish; answers `ask` calls from the snapshot. */
function patientModel(request: FakeChatRequest): FakeReply {
  if (!isAgentCall(request)) {
    const question = lastUserText(request).at(-1) ?? '';
    return { text: `ASK-ANSWER to: ${question.includes('what are you doing') ? 'what are you doing' : 'something'}` };
  }
  if (lastUserText(request).some((text) => text.includes('finish now'))) return { text: 'done as asked' };
  return { toolCalls: [{ name: 'wait', arguments: { ms: 50 } }] };
}

async function writeConfig(dir: TempDir, llmUrl: string, port: number): Promise<string> {
  return dir.write(
    'config.yaml',
    `data_dir: ./data
memory: {consolidate: []} # memory has its own tests (tests/memory-worker.test.ts)
llms:
  default: {base_url: "${llmUrl}", model: fake-model}
server: {host: 127.0.0.1, port: ${port}}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
queue:
  claim_grace: 200ms
  policies:
    overrides:
      system.agent: {max_attempts: 5, timeout: 5m}
`,
  );
}

describe('steering a running agent task from another process', () => {
  it('pauses, answers a question, resumes, takes an interjection and stops, over REST', async () => {
    await using model = await FakeOpenAiServer.start({ respond: patientModel });
    await using dir = await tempDir();
    const port = await freePort();
    const config = await writeConfig(dir, model.url, port);
    const start = startNode({ args: [cliMain, 'start', '--config', config] });
    try {
      await start.waitForOutput(/^\[server\] .*listening on/m);
      await start.waitForOutput(/^\[worker\] .*worker ready/m);
      const fetch = fetchWithToken(await readApiToken(`${dir.path}/data`));
      const api = `http://127.0.0.1:${port}`;
      const post = async (url: string, body: unknown) => {
        const response = await fetch(`${api}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const task = async (id: string) => taskView.parse(await (await fetch(`${api}/api/tasks/${id}`)).json());
      const agentCalls = () => model.requests.filter(isAgentCall).length;

      const created = await post('/api/tasks', {
        type: 'system.agent',
        payload: { prompt: 'keep waiting until told' },
      });
      const id = String(created.body.id);
      await waitUntil(() => (agentCalls() >= 2 ? true : undefined), { what: 'two agent calls to the model' });

      const paused = await post(`/api/tasks/${id}/steer`, { action: 'pause' });
      expect(paused).toMatchObject({ status: 200, body: { status: 'applied' } });
      const atPause = agentCalls();
      // A call already in flight may finish; no new one starts while paused. Nothing signals "no call started", so
      // this waits a while (several of the fake model's round trips) for a call that must not come.
      await delay(500);
      expect(agentCalls()).toBeLessThanOrEqual(atPause + 1);
      const whilePaused = agentCalls();
      // Again a wait for something that must not happen: no call at all once the one in flight is done.
      await delay(300);
      expect(agentCalls()).toBe(whilePaused);

      const asked = await post(`/api/tasks/${id}/steer`, { action: 'ask', message: 'what are you doing?' });
      expect(asked).toMatchObject({
        status: 200,
        body: { status: 'applied', answer: 'ASK-ANSWER to: what are you doing' },
      });
      expect(agentCalls()).toBe(whilePaused);

      expect((await post(`/api/tasks/${id}/steer`, { action: 'resume' })).status).toBe(200);
      await waitUntil(() => (agentCalls() > whilePaused ? true : undefined), { what: 'an agent call after resume' });
      expect((await post(`/api/tasks/${id}/steer`, { action: 'interject', message: 'finish now' })).status).toBe(200);
      const finished = await waitUntil(
        async () => {
          const view = await task(id);
          return view.state === 'done' ? view : undefined;
        },
        { what: `task ${id} to be done` },
      );
      expect(finished.result).toMatchObject({ status: 'completed', answer: 'done as asked' });
      // The model saw the steering in its transcript.
      const seen = model.requests.filter(isAgentCall).flatMap(lastUserText);
      expect(seen).toEqual(
        expect.arrayContaining([expect.stringContaining('paused'), expect.stringContaining('finish now')]),
      );

      const late = await post(`/api/tasks/${id}/steer`, { action: 'pause' });
      expect(late).toMatchObject({ status: 409, body: { error: { code: 'CONFLICT' } } });

      // The events, as server-sent events.
      const events = await (await fetch(`${api}/api/tasks/${id}/events`)).text();
      expect(events).toMatch(/^event: steering$/m);
      expect(events).toMatch(/^event: done$/m);
      expect(events).toMatch(/^event: end$/m);

      // Stop, with a reason, on a second task, once its loop is calling the model.
      const before = agentCalls();
      const second = String(
        (await post('/api/tasks', { type: 'system.agent', payload: { prompt: 'wait forever' } })).body.id,
      );
      await waitUntil(() => (agentCalls() > before ? true : undefined), { what: 'the second task to call the model' });
      expect((await post(`/api/tasks/${second}/steer`, { action: 'stop', reason: 'enough' })).status).toBe(200);
      const stopped = await waitUntil(
        async () => {
          const view = await task(second);
          return view.state === 'done' ? view : undefined;
        },
        { what: `task ${second} to be done` },
      );
      expect(stopped.result).toMatchObject({ status: 'stopped', reason: 'enough' });
    } finally {
      start.child.kill('SIGTERM');
      await start.exited;
    }
  });
});

describe('a worker killed mid-loop', () => {
  it('resumes the task from its transcript on the next start', async () => {
    let killedAfter = 0;
    await using model = await FakeOpenAiServer.start({
      respond: (request) => {
        const messages = request.body.messages as { role: string }[];
        const toolResults = messages.filter((message) => message.role === 'tool').length;
        // The resumed run starts from the transcript, with the earlier tool results in it; then it finishes.
        if (killedAfter > 0 && toolResults >= killedAfter) return { text: `resumed after ${toolResults} results` };
        return { toolCalls: [{ name: 'wait', arguments: { ms: 20 } }] };
      },
    });
    await using dir = await tempDir();
    const config = await writeConfig(dir, model.url, await freePort());
    const enqueued = await runCli([
      'enqueue',
      'system.agent',
      '--payload',
      '{"prompt": "wait a while"}',
      '--config',
      config,
    ]);
    const id = enqueued.stdout.trim();
    const worker = startNode({ args: [cliMain, 'work', '--config', config] });
    await waitUntil(() => (model.requests.length >= 4 ? true : undefined), { what: '4 requests to the model' });
    worker.child.kill('SIGKILL');
    await worker.exited;
    const transcript = await runCli(['notes', 'show', `transcripts/${id}.md`, '--json', '--config', config]);
    const saved = z.object({ data: z.object({ steps: z.number() }) }).parse(JSON.parse(transcript.stdout));
    expect(saved.data.steps).toBeGreaterThanOrEqual(2);
    killedAfter = saved.data.steps;
    const requestsBefore = model.requests.length;

    const again = await runCli(['work', '--exit-when-idle', '--config', config]);
    expect(again.code).toBe(0);
    const shown = JSON.parse((await runCli(['task', 'show', id, '--json', '--config', config])).stdout);
    expect(shown).toMatchObject({ state: 'done', task: { result: { status: 'completed' } } });
    expect(shown.task.result.answer).toMatch(/^resumed after \d+ results$/);
    // The first request after the restart already carried the saved conversation.
    const first = model.requests[requestsBefore]?.body.messages as { role: string }[];
    expect(first.filter((message) => message.role === 'tool').length).toBeGreaterThanOrEqual(killedAfter);
  });
});

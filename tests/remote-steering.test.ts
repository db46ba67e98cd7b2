// Steering a task that runs on a remote worker: a real server process (`assistant serve`) and a real
// `assistant work --server URL` process with a data directory of its own (standing in for another machine), the two
// sharing only Redis and the server's API. A person steering through the REST API sees what they see for a local
// task: outcomes, answers, and the events over SSE; the loop's transcript is a note on the server's disk.

import { randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { type FakeChatRequest, FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { fetchWithToken, readApiToken } from './helpers/api-token.ts';
import { freePort } from './helpers/free-port.ts';
import { cliMain, type NodeProcess, startNode } from './helpers/node-process.ts';
import { type RedisServer, startRedis } from './helpers/redis.ts';
import { readServerSentEvents, type ServerSentEvent } from './helpers/sse.ts';
import { tempDir } from './helpers/temp-dir.ts';
import { waitUntil } from './helpers/wait-until.ts';

const taskView = z.looseObject({ id: z.string(), state: z.string(), result: z.unknown().optional() });

/** Agent model calls carry tools; the read-only `ask` call does not. */
const isAgentCall = (request: FakeChatRequest) => Array.isArray(request.body.tools);
const userTexts = (request: FakeChatRequest) =>
  (request.body.messages as { role: string; content: string | null }[])
    .filter((message) => message.role === 'user')
    .map((message) => message.content ?? '');

/** Keeps waiting in small steps until told to finish; answers `ask` calls from the snapshot. */
function patientModel(request: FakeChatRequest): FakeReply {
  if (!isAgentCall(request)) return { text: 'ASK-ANSWER: waiting, as told' };
  if (userTexts(request).some((text) => text.includes('finish now'))) return { text: 'done as asked' };
  return { toolCalls: [{ name: 'wait', arguments: { ms: 50 } }] };
}

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.[Symbol.asyncDispose]();
});

const shared = (llmUrl: string) => `llms:
  default: {base_url: "${llmUrl}", model: fake-model}
worker: {shutdown_grace: 2s, poll_interval: 100ms}
queue:
  backend: redis
  redis: {url: "${redis.url}", prefix: steer-${randomBytes(4).toString('hex')}}
  policies:
    overrides:
      system.agent: {max_attempts: 5, timeout: 5m}
`;

describe('steering a task that runs on a remote worker', () => {
  it('reaches the loop through the server: REST outcomes, the answer to ask, and the events over SSE', async () => {
    await using model = await FakeOpenAiServer.start({ respond: patientModel });
    await using dir = await tempDir();
    const port = await freePort();
    const serverConfig = await dir.write(
      'config.yaml',
      `data_dir: ./server-data\nserver: {host: 127.0.0.1, port: ${port}}\n${shared(model.url)}`,
    );
    const server = startNode({ args: [cliMain, 'serve', '--config', serverConfig] });
    let worker: NodeProcess | undefined;
    try {
      await server.waitForOutput(/listening on/);
      const token = await readApiToken(path.join(dir.path, 'server-data'));
      const api = `http://127.0.0.1:${port}`;
      // The same config.yaml, as an owner copies it to the other machine, with a data directory of its own there.
      worker = startNode({
        args: [cliMain, 'work', '--server', api, '--config', serverConfig],
        env: { ASSISTANT_DATA: path.join(dir.path, 'worker-data'), ASSISTANT_TOKEN: token },
      });
      await worker.waitForOutput(/worker ready/);

      const fetch = fetchWithToken(token);
      const post = async (url: string, body: unknown) => {
        const response = await fetch(`${api}${url}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: response.status, body: (await response.json()) as Record<string, unknown> };
      };
      const agentCalls = () => model.requests.filter(isAgentCall).length;

      const created = await post('/api/tasks', {
        type: 'system.agent',
        payload: { prompt: 'keep waiting until told' },
      });
      const id = String(created.body.id);
      await waitUntil(() => agentCalls() >= 2, { what: 'two agent calls to the model' });

      // Followed from the start, as the dashboard and `assistant task watch` follow a task.
      const events: ServerSentEvent[] = [];
      const stream = fetch(`${api}/api/tasks/${id}/events`).then((response) =>
        readServerSentEvents(response, (event) => events.push(event)),
      );

      expect(await post(`/api/tasks/${id}/steer`, { action: 'pause' })).toMatchObject({
        status: 200,
        body: { status: 'applied' },
      });
      // A call already in flight may finish; after that none starts while paused. Nothing signals "no call started",
      // so this waits a while (several of the fake model's round trips) for a call that must not come.
      const atPause = agentCalls();
      await delay(500);
      expect(agentCalls()).toBeLessThanOrEqual(atPause + 1);

      expect(await post(`/api/tasks/${id}/steer`, { action: 'ask', message: 'what are you doing?' })).toMatchObject({
        status: 200,
        body: { status: 'applied', answer: 'ASK-ANSWER: waiting, as told' },
      });
      const whilePaused = agentCalls();
      expect(await post(`/api/tasks/${id}/steer`, { action: 'resume' })).toMatchObject({ status: 200 });
      await waitUntil(() => agentCalls() > whilePaused, { what: 'an agent call after resume' });
      expect(await post(`/api/tasks/${id}/steer`, { action: 'interject', message: 'finish now' })).toMatchObject({
        status: 200,
        body: { status: 'applied' },
      });

      const finished = await waitUntil(
        async () => {
          const view = taskView.parse(await (await fetch(`${api}/api/tasks/${id}`)).json());
          return view.state === 'done' ? view : undefined;
        },
        { what: `task ${id} to be done` },
      );
      expect(finished.result).toMatchObject({ status: 'completed', answer: 'done as asked' });
      // The model saw the steering in its transcript, as for a local task.
      expect(model.requests.filter(isAgentCall).flatMap(userTexts)).toEqual(
        expect.arrayContaining([expect.stringContaining('paused'), expect.stringContaining('finish now')]),
      );

      // The stream ends once the task is done and every event was sent.
      await stream;
      const steering = events.filter((event) => event.type === 'steering').map((event) => event.data.action);
      expect(steering).toEqual(['pause', 'ask', 'resume', 'interject']);
      expect(events.map((event) => event.type)).toEqual(expect.arrayContaining(['step-finished', 'done', 'end']));
      expect(events.at(-1)).toMatchObject({ type: 'end', data: { state: 'done' } });
      // Event ids are the resume points of the server's events.jsonl: they only grow.
      const ids = events.filter((event) => event.id !== '').map((event) => Number(event.id));
      expect(ids).toEqual([...ids].sort((a, b) => a - b));

      // Everything went through the server: the worker's own data directory has no control files and no notes; the
      // loop's transcript is on the server's disk.
      expect(await stat(path.join(dir.path, 'worker-data/control', id)).catch(() => undefined)).toBeUndefined();
      expect((await stat(path.join(dir.path, 'server-data/control', id, 'events.jsonl'))).isFile()).toBe(true);
      expect(await stat(path.join(dir.path, 'worker-data/notes/transcripts')).catch(() => undefined)).toBeUndefined();
      expect((await stat(path.join(dir.path, 'server-data/notes/transcripts', `${id}.md`))).isFile()).toBe(true);

      const late = await post(`/api/tasks/${id}/steer`, { action: 'pause' });
      expect(late).toMatchObject({ status: 409, body: { error: { code: 'CONFLICT' } } });
    } finally {
      worker?.child.kill('SIGTERM');
      await worker?.exited;
      server.child.kill('SIGTERM');
      await server.exited;
    }
  });
});

import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../chat-types.ts';
import { createOpenAiChatModel } from '../openai-chat-model.ts';
import { FakeOpenAiServer } from '../testing/fake-openai-server.ts';
import { fixtureKey } from './fixture-files.ts';
import { createRecordReplayFetch } from './record-replay-fetch.ts';
import { recognizeModelRequest } from './wire-formats.ts';

/** What a sub-agent's parent sees after a spawn: ids and a clock reading minted by this run. */
function spawnResult(agent: string, task: string, at: string): string {
  return JSON.stringify({ id: agent, task, persona: 'researcher', status: 'started', at });
}

function requestOf(toolResult: string, system = 'You supervise researchers.') {
  const body = {
    model: 'm',
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: 'Find two facts.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'spawn_agent', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: toolResult },
    ],
  };
  const request = recognizeModelRequest({ method: 'POST', url: 'https://x/v1/chat/completions', body });
  if (request === undefined) throw new Error('not recognised');
  return { request, key: fixtureKey({ provider: 'test', canonical: request.canonical }) };
}

describe('the key of a request that carries values Assistant minted', () => {
  it('is the same whatever agent id, task id, run id or clock reading this run minted', () => {
    const first = requestOf(
      `${spawnResult('ag-0123456789abcdef', '01kb4r7k2g8x9m3n5p6q7r8s9t', '2026-11-28T13:46:07.123Z')} run-20261128-00aa11bb22`,
    );
    const second = requestOf(
      `${spawnResult('ag-fedcba9876543210', '01kb4r9zzz8x9m3n5p6q7r8s9t', '2026-11-29T08:00:00.000Z')} run-20261129-ffee99dd88`,
    );
    expect(second.key).toBe(first.key);
    expect(first.request.minted).toEqual({
      'minted-agent-1': 'ag-0123456789abcdef',
      'minted-task-1': '01kb4r7k2g8x9m3n5p6q7r8s9t',
      'minted-instant-1': '2026-11-28T13:46:07.123Z',
      'minted-run-1': 'run-20261128-00aa11bb22',
    });
    // The words around them still decide the key.
    expect(requestOf(spawnResult('ag-0123456789abcdef', '01kb4r7k2g8x9m3n5p6q7r8s9t', 'x')).key).not.toBe(first.key);
  });

  it('keeps which child is which: two ids swapped is another request', () => {
    const a = 'ag-aaaaaaaaaaaaaaaa';
    const b = 'ag-bbbbbbbbbbbbbbbb';
    const twice = (first: string, second: string, third: string) => requestOf(`${first} ${second} then ${third}`).key;
    expect(twice(a, b, a)).toBe(twice(b, a, b));
    expect(twice(a, b, a)).not.toBe(twice(a, b, b));
  });

  it('takes the run id a runner makes from its task id too', () => {
    const { request } = requestOf('blackboard agents/blackboards/run-20261128-0k3m5p7r9t1v3x5z.md');
    expect(request.minted).toEqual({ 'minted-run-1': 'run-20261128-0k3m5p7r9t1v3x5z' });
  });

  it('leaves other text alone: dates people write, short hex, words', () => {
    const { request } = requestOf('Meeting 2026-03-05T15:00:00+00:00, commit 4f23712, ag-123 and deadbeef.');
    expect(request.minted).toEqual({});
    expect(JSON.stringify(request.canonical)).toContain('2026-03-05T15:00:00+00:00, commit 4f23712, ag-123');
  });
});

describe('replaying an answer that names a minted value', () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(path.join(os.tmpdir(), 'assistant-minted-'));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  const history = (agent: string): ChatMessage[] => [
    { role: 'user', content: 'Wait for your researcher.' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'spawn_agent', arguments: '{}' }] },
    { role: 'tool', toolCallId: 'call_1', content: spawnResult(agent, '01kb4r7k2g8x9m3n5p6q7r8s9t', 'now') },
  ];

  for (const streamed of [false, true]) {
    it(`gives the model's answer this run's id in place of the recorded one (${streamed ? 'streamed' : 'whole'})`, async () => {
      const recordedId = 'ag-0123456789abcdef';
      await using server = await FakeOpenAiServer.start({
        respond: (request) => {
          const spawned = /ag-[0-9a-f]{16}/.exec(JSON.stringify(request.body.messages))?.[0] ?? 'none';
          return {
            toolCalls: [{ name: 'wait_agents', arguments: { ids: [spawned] } }],
            text: `waiting for ${spawned}`,
          };
        },
      });
      const model = (mode: 'record' | 'replay') =>
        createOpenAiChatModel({
          name: 'test',
          baseUrl: server.url,
          model: 'fake-model',
          maxRetries: 0,
          fetch: createRecordReplayFetch({ mode, directory }),
        });
      const chat = (mode: 'record' | 'replay', agent: string) =>
        model(mode).chat({ messages: history(agent) }, streamed ? { onDelta: () => {} } : {});

      const recorded = await chat('record', recordedId);
      expect(recorded.message.toolCalls[0]?.arguments).toContain(recordedId);
      const [file] = await readdir(path.join(directory, 'openai-compatible'));
      const fixture = JSON.parse(await readFile(path.join(directory, 'openai-compatible', file ?? ''), 'utf8'));
      expect(fixture.request.minted).toMatchObject({ 'minted-agent-1': recordedId });
      expect(JSON.stringify(fixture.request.canonical)).not.toContain(recordedId);

      const replayed = await chat('replay', 'ag-fedcba9876543210');
      expect(server.requests).toHaveLength(1);
      expect(replayed.message.toolCalls[0]?.arguments).toBe('{"ids":["ag-fedcba9876543210"]}');
      expect(replayed.message.content).toBe('waiting for ag-fedcba9876543210');
    });
  }
});

import type { ChatMessage } from '@assistant/llm';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startAgent } from '../loop/start-agent.ts';
import { createEventRecorder } from '../testing/event-recorder.ts';
import { createMemoryTranscriptStore } from '../testing/memory-transcript-store.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { defineTool } from '../tools/define-tool.ts';
import { planCompression } from './compress-messages.ts';

const system: ChatMessage = { role: 'system', content: 'You echo.' };
const input: ChatMessage = { role: 'user', content: 'Echo twice.' };
const call = (id: string): ChatMessage => ({
  role: 'assistant',
  content: null,
  toolCalls: [{ id, name: 'echo', arguments: '{}' }],
});
const result = (id: string): ChatMessage => ({ role: 'tool', toolCallId: id, content: '"echo"' });

describe('planCompression', () => {
  it('keeps the system message and the recent messages, and moves the boundary back to keep tool calls whole', () => {
    const messages = [system, input, call('a'), result('a'), call('b'), result('b')];

    expect(planCompression(messages, 1)).toEqual({
      head: [system],
      older: [input, call('a'), result('a')],
      recent: [call('b'), result('b')],
    });
  });

  it('returns undefined when there is nothing older than the recent messages, or only an earlier summary', () => {
    expect(planCompression([system, input, call('a')], 2)).toBeUndefined();
    expect(
      planCompression([system, { role: 'user', content: '[summary of earlier turns] …' }, call('b'), result('b')], 2),
    ).toBeUndefined();
  });
});

describe('compression in the loop', () => {
  it('summarises older turns near the context window, archives the originals and emits an event', async () => {
    const echo = defineTool({
      name: 'echo',
      description: 'Echoes.',
      input: z.object({}),
      run: async () => 'echo',
      trusted: true,
    });
    let loopCalls = 0;
    const model = createScriptedModel({
      contextWindow: 100,
      replies: (request) => {
        if (request.messages.at(-1)?.content?.startsWith('Summarise the conversation so far')) {
          return { content: 'The owner asked for two echoes; one is done.', usage: usage(7) };
        }
        loopCalls += 1;
        return loopCalls <= 2 ? { toolCalls: [{ id: `call_${loopCalls}`, name: 'echo' }], usage: usage(1) } : 'Done.';
      },
    });
    const store = createMemoryTranscriptStore();
    const recorder = createEventRecorder();

    const outcome = await startAgent({
      model,
      system: 'You echo.',
      input: 'Echo twice.',
      tools: [echo],
      transcript: store,
      onEvent: recorder.onEvent,
      compression: { thresholdRatio: 0.5, keepRecent: 1 },
      // Ten tokens a message: six messages (60) pass the threshold of 50, four (40) do not.
      estimateTokens: (messages) => messages.length * 10,
    }).result();

    expect(outcome).toMatchObject({ status: 'completed', answer: 'Done.', steps: 3, usage: { totalTokens: 9 } });
    expect(store.archived).toEqual([[input, call('call_1'), { ...result('call_1'), content: '"echo"' }]]);
    expect(model.requests.at(-1)?.messages).toEqual([
      system,
      { role: 'user', content: '[summary of earlier turns] The owner asked for two echoes; one is done.' },
      call('call_2'),
      result('call_2'),
    ]);
    expect(recorder.events.filter((event) => event.type === 'compression')).toEqual([
      expect.objectContaining({ archivedMessages: 3, estimatedTokensBefore: 60, estimatedTokensAfter: 40 }),
    ]);
  });
});

function usage(totalTokens: number) {
  return { promptTokens: totalTokens, completionTokens: 0, totalTokens };
}

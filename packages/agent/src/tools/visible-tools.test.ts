import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { startAgent } from '../loop/start-agent.ts';
import { createScriptedModel } from '../testing/scripted-model.ts';
import { defineTool } from './define-tool.ts';

describe('visibleTools (hiddenUntil)', () => {
  it('offers a tool only after the tools it waits for have succeeded once in this loop', async () => {
    let writes = 0;
    const search = defineTool({
      name: 'search',
      description: 'Searches.',
      input: z.object({ query: z.string() }),
      run: async ({ query }) => [`result for ${query}`],
    });
    const write = defineTool({
      name: 'write',
      description: 'Writes.',
      input: z.object({ text: z.string() }),
      hiddenUntil: ['search'],
      run: async () => {
        writes += 1;
        return 'written';
      },
    });
    const model = createScriptedModel({
      replies: [
        { toolCalls: [{ name: 'write', arguments: { text: 'too early' } }] },
        { toolCalls: [{ name: 'search', arguments: {} }] },
        { toolCalls: [{ name: 'search', arguments: { query: 'bridges' } }] },
        { toolCalls: [{ name: 'write', arguments: { text: 'informed' } }] },
        'done',
      ],
    });

    const result = await startAgent({ model, system: 's', input: 'go', tools: [search, write] }).result();

    expect(result.status).toBe('completed');
    expect(model.requests.map((request) => request.tools?.map((tool) => tool.name))).toEqual([
      ['search'],
      ['search'],
      ['search'],
      ['search', 'write'],
      ['search', 'write'],
    ]);
    expect(model.requests[1]?.messages.at(-1)?.content).toBe(
      'error: tool write is not available yet; call search first',
    );
    expect(writes).toBe(1);
  });
});

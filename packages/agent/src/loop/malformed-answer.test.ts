import { createProviderChatModel, LlmResponseMalformedError } from '@assistant/llm';
import { FakeAnthropicServer } from '@assistant/llm/testing';
import { afterEach, describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTool } from '../tools/define-tool.ts';
import { startAgent } from './start-agent.ts';

const lookup = defineTool({
  name: 'lookup',
  description: 'Looks a thing up.',
  input: z.object({ q: z.string() }),
  run: async ({ q }) => `found ${q}`,
  trusted: true,
});

let server: FakeAnthropicServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const claudeOn = (fake: FakeAnthropicServer) =>
  createProviderChatModel({
    provider: 'anthropic',
    name: 'claude',
    model: 'claude-sonnet-4-5',
    baseUrl: fake.url,
    apiKey: 'test-key',
    maxRetries: 0,
  });

// A real Anthropic answer through the real adapter: a `tool_use` whose input is not JSON is LlmResponseMalformedError
// (issue 32). The loop treats it as the model's mistake, as it does arguments that fail their schema.
describe('an answer that breaks its provider format', () => {
  it('is shown to the model, which answers again, and the run completes', async () => {
    server = await FakeAnthropicServer.start({
      apiKey: 'test-key',
      replies: [
        { toolCalls: [{ name: 'lookup', arguments: { q: 'tides' } }], malformedToolJson: true },
        { toolCalls: [{ name: 'lookup', arguments: { q: 'tides' } }] },
        { text: 'High tide is at six.' },
      ],
    });
    const result = await startAgent({
      model: claudeOn(server),
      system: 'You answer.',
      input: 'When is high tide?',
      tools: [lookup],
    }).result();

    expect(result).toMatchObject({ status: 'completed', answer: 'High tide is at six.' });
    const second = server.generationRequests[1]?.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(second.messages.at(-1))).toContain('could not be read');
  });

  it('ends the run with the error when the model keeps breaking it', async () => {
    const broken = () => ({ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }], malformedToolJson: true });
    server = await FakeAnthropicServer.start({ apiKey: 'test-key', replies: [broken(), broken(), broken(), broken()] });
    const result = await startAgent({
      model: claudeOn(server),
      system: 'You answer.',
      input: 'When is high tide?',
      tools: [lookup],
    }).result();

    expect(result).toMatchObject({ status: 'failed', reason: expect.stringMatching(/not JSON/) });
    expect((result as { error?: unknown }).error).toBeInstanceOf(LlmResponseMalformedError);
    // The first answer and two more chances.
    expect(server.generationRequests).toHaveLength(3);
  });
});

import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import type { ChatModel, ChatRequest, ChatResponse } from './chat-types.ts';
import { Conversation } from './conversation.ts';
import { LlmResponseMalformedError } from './llm-errors.ts';

/** A model that answers from a script: a reply text, or an error to throw. */
function scripted(answers: (string | Error)[]): ChatModel & { requests: ChatRequest[] } {
  const requests: ChatRequest[] = [];
  return {
    name: 'scripted',
    contextWindow: 8_000,
    requests,
    async chat(request): Promise<ChatResponse> {
      requests.push(structuredClone(request));
      const next = answers.shift();
      if (next === undefined) throw new Error('no scripted answer left');
      if (next instanceof Error) throw next;
      return { message: { role: 'assistant', content: next, toolCalls: [] }, finishReason: 'stop', model: 'm' };
    },
  };
}

describe('Conversation.structured', () => {
  it('treats a malformed provider answer as an invalid answer and asks again, showing what was wrong', async () => {
    const model = scripted([
      new LlmResponseMalformedError('anthropic: the arguments of tool call answer are not JSON', '{"kind": "bi'),
      '{"kind":"bill"}',
    ]);
    const answer = await new Conversation(model).structured(z.object({ kind: z.string() }), 'Classify.');
    expect(answer).toEqual({ kind: 'bill' });
    const retry = model.requests[1]?.messages ?? [];
    expect(retry.at(-2)).toEqual({ role: 'assistant', content: '{"kind": "bi' });
    expect(retry.at(-1)?.content).toMatch(/not valid: anthropic: the arguments of tool call answer are not JSON/);
  });

  it('still throws any other error at once', async () => {
    const model = scripted([new Error('boom')]);
    await expect(new Conversation(model).structured(z.object({}), 'x')).rejects.toThrow('boom');
  });
});

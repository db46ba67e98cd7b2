import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { defineTool } from './define-tool.ts';

describe('defineTool', () => {
  it('describes the input to the model as JSON Schema', () => {
    const tool = defineTool({
      name: 'search_notes',
      description: 'Searches the notes.',
      input: z.object({ query: z.string().min(1), limit: z.number().int().optional() }),
      run: async ({ query }) => query,
    });

    expect(tool.spec).toEqual({
      name: 'search_notes',
      description: 'Searches the notes.',
      parameters: {
        type: 'object',
        properties: {
          query: { type: 'string', minLength: 1 },
          limit: { type: 'integer', minimum: Number.MIN_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER },
        },
        required: ['query'],
      },
    });
    expect(tool.hiddenUntil).toEqual([]);
  });

  it('rejects a name chat APIs would refuse and an input that is not an object', () => {
    const run = async () => null;
    expect(() => defineTool({ name: 'search notes', description: 'd', input: z.object({}), run })).toThrow(
      /got "search notes"/,
    );
    expect(() => defineTool({ name: 'count', description: 'd', input: z.number(), run })).toThrow(
      /to be an object schema, got JSON Schema type "number"/,
    );
  });
});

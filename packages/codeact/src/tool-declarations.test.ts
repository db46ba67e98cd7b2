import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { commentLines, jsDoc, schemaType } from './tool-declarations.ts';

/** What tools carry: zod's JSON Schema of the input, without the dialect line (as defineTool makes it). */
function fromZod(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...parameters } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
  return parameters;
}

/** The syntax errors TypeScript finds in `type T = <type>;`. */
function syntaxErrors(type: string): string[] {
  const output = ts.transpileModule(`type T = ${type};`, { reportDiagnostics: true });
  return (output.diagnostics ?? []).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
}

describe('schemaType', () => {
  it('writes the scalar types, with integer as number', () => {
    expect(schemaType({ type: 'string' })).toBe('string');
    expect(schemaType({ type: 'number' })).toBe('number');
    expect(schemaType({ type: 'integer' })).toBe('number');
    expect(schemaType({ type: 'boolean' })).toBe('boolean');
    expect(schemaType({ type: 'null' })).toBe('null');
  });

  it('writes a nullable type array as a union', () => {
    expect(schemaType({ type: ['string', 'null'] })).toBe('string | null');
    expect(schemaType({ type: ['array', 'null'], items: { type: 'number' } })).toBe('number[] | null');
  });

  it('writes enum and const as literal unions', () => {
    expect(schemaType({ enum: ['open', 'closed', 3, null, true] })).toBe('"open" | "closed" | 3 | null | true');
    expect(schemaType({ const: 'fixed' })).toBe('"fixed"');
    expect(schemaType({ type: 'string', enum: ['a', 'b'] })).toBe('"a" | "b"');
  });

  it('writes an object with required and optional properties on one line when short and undocumented', () => {
    expect(
      schemaType({
        type: 'object',
        properties: { query: { type: 'string' }, limit: { type: 'integer' } },
        required: ['query'],
        additionalProperties: false,
      }),
    ).toBe('{ query: string; limit?: number }');
  });

  it('quotes property names that are not identifiers', () => {
    expect(
      schemaType({ type: 'object', properties: { 'x-id': { type: 'string' }, 'two words': { type: 'number' } } }),
    ).toBe('{ "x-id"?: string; "two words"?: number }');
  });

  it('writes additionalProperties as a record or an index signature', () => {
    expect(schemaType({ type: 'object' })).toBe('Record<string, unknown>');
    expect(schemaType({ type: 'object', additionalProperties: { type: 'string' } })).toBe('Record<string, string>');
    expect(schemaType({ type: 'object', additionalProperties: false })).toBe('{}');
    expect(schemaType({ type: 'object', properties: {} })).toBe('{}');
    expect(
      schemaType({ type: 'object', properties: { id: { type: 'string' } }, additionalProperties: { type: 'number' } }),
    ).toBe('{ id?: string; [key: string]: number }');
    expect(schemaType({ type: 'object', properties: { id: { type: 'string' } }, additionalProperties: true })).toBe(
      '{ id?: string; [key: string]: unknown }',
    );
  });

  it('writes arrays, parenthesising unions of items', () => {
    expect(schemaType({ type: 'array', items: { type: 'string' } })).toBe('string[]');
    expect(schemaType({ type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } })).toBe(
      '(string | number)[]',
    );
    expect(schemaType({ type: 'array' })).toBe('unknown[]');
    expect(schemaType({ type: 'array', items: { type: 'array', items: { type: 'boolean' } } })).toBe('boolean[][]');
  });

  it('writes tuples from prefixItems and from draft-7 item arrays, open or closed', () => {
    expect(schemaType({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], items: false })).toBe(
      '[string, number]',
    );
    expect(schemaType({ type: 'array', prefixItems: [{ type: 'string' }], items: { type: 'boolean' } })).toBe(
      '[string, ...boolean[]]',
    );
    expect(schemaType({ type: 'array', prefixItems: [{ type: 'string' }] })).toBe('[string, ...unknown[]]');
    expect(schemaType({ type: 'array', items: [{ type: 'number' }], additionalItems: false })).toBe('[number]');
  });

  it('writes anyOf and oneOf as unions and allOf as an intersection', () => {
    expect(schemaType({ anyOf: [{ type: 'string' }, { type: 'null' }] })).toBe('string | null');
    expect(schemaType({ oneOf: [{ const: 'a' }, { type: 'object', properties: { b: { type: 'number' } } }] })).toBe(
      '"a" | { b?: number }',
    );
    expect(
      schemaType({
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { type: 'object', properties: { b: { type: 'number' } } },
        ],
      }),
    ).toBe('{ a: string } & { b?: number }');
    expect(schemaType({ allOf: [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, { const: 1 }] })).toBe(
      '(string | number) & 1',
    );
  });

  it('writes nested objects indented two spaces per level when they carry documentation', () => {
    const type = schemaType({
      type: 'object',
      properties: {
        filter: {
          type: 'object',
          description: 'What to match.',
          properties: { from: { type: 'string', description: 'A sender address.' }, unread: { type: 'boolean' } },
          required: ['from'],
        },
      },
      required: ['filter'],
    });
    expect(type).toBe(
      [
        '{',
        '  /** What to match. */',
        '  filter: {',
        '    /** A sender address. */',
        '    from: string;',
        '    unread?: boolean;',
        '  };',
        '}',
      ].join('\n'),
    );
  });

  it('writes descriptions and defaults as JSDoc on properties', () => {
    const type = schemaType({
      type: 'object',
      properties: {
        limit: { type: 'integer', description: 'How many at most.', default: 5 },
        state: { enum: ['open', 'closed'], default: 'open' },
      },
    });
    expect(type).toBe(
      [
        '{',
        '  /**',
        '   * How many at most.',
        '   * @default 5',
        '   */',
        '  limit?: number;',
        '  /** @default "open" */',
        '  state?: "open" | "closed";',
        '}',
      ].join('\n'),
    );
  });

  it('resolves local $refs through $defs and definitions, and takes the description from the target', () => {
    const schema = {
      type: 'object',
      properties: { owner: { $ref: '#/$defs/Person' }, reviewer: { $ref: '#/definitions/Person' } },
      required: ['owner'],
      $defs: { Person: { type: 'object', description: 'Someone.', properties: { name: { type: 'string' } } } },
      definitions: { Person: { type: 'object', properties: { email: { type: 'string' } } } },
    };
    expect(schemaType(schema)).toBe(
      ['{', '  /** Someone. */', '  owner: { name?: string };', '  reviewer?: { email?: string };', '}'].join('\n'),
    );
  });

  it('writes a cyclic $ref as unknown instead of looping', () => {
    const schema = {
      type: 'object',
      properties: { root: { $ref: '#/$defs/Node' } },
      $defs: {
        Node: {
          type: 'object',
          properties: { value: { type: 'number' }, children: { type: 'array', items: { $ref: '#/$defs/Node' } } },
        },
      },
    };
    expect(schemaType(schema)).toBe('{ root?: { value?: number; children?: unknown[] } }');
    expect(schemaType({ type: 'object', properties: { self: { $ref: '#' } } })).toBe('{ self?: { self?: unknown } }');
  });

  it('stops expanding $refs that multiply, and schemas nested too deep, with unknown', () => {
    // Each definition has two properties of the next: 2^40 leaves if expanded in full.
    const $defs: Record<string, unknown> = { D40: { type: 'string' } };
    for (let level = 0; level < 40; level++) {
      $defs[`D${level}`] = {
        type: 'object',
        properties: { a: { $ref: `#/$defs/D${level + 1}` }, b: { $ref: `#/$defs/D${level + 1}` } },
      };
    }
    const multiplied = schemaType({ $ref: '#/$defs/D0', $defs });
    expect(multiplied.length).toBeLessThan(200_000);
    expect(multiplied).toContain('unknown');
    expect(syntaxErrors(multiplied)).toEqual([]);

    let deep: Record<string, unknown> = { type: 'string' };
    for (let level = 0; level < 20_000; level++) deep = { type: 'array', items: deep };
    const nested = schemaType(deep);
    expect(nested).toBe(`unknown${'[]'.repeat(32)}`);
  });

  it('writes a $ref it cannot follow, and what it does not understand, as unknown', () => {
    expect(schemaType({ $ref: 'https://example.com/schema.json' })).toBe('unknown');
    expect(schemaType({ $ref: '#/$defs/Missing' })).toBe('unknown');
    expect(schemaType({ type: 'date' })).toBe('unknown');
    expect(schemaType({})).toBe('unknown');
    expect(schemaType(true)).toBe('unknown');
    expect(schemaType(false)).toBe('never');
    expect(schemaType('not a schema')).toBe('unknown');
    expect(schemaType({ anyOf: [{ type: 'string' }, {}] })).toBe('unknown');
  });

  it('writes the schemas zod makes for real tools', () => {
    // recall (integration-host's memory tools), a mail search, and a nullable union: what defineTool's specs hold.
    const recall = fromZod(z.object({ query: z.string().min(1).max(2_000), limit: z.int().min(1).max(20).default(5) }));
    expect(schemaType(recall)).toBe(
      ['{', '  query: string;', '  /** @default 5 */', '  limit?: number;', '}'].join('\n'),
    );
    const search = fromZod(
      z.object({
        from: z.email().optional().describe('Only mail from this address'),
        labels: z.array(z.enum(['inbox', 'spam'])).max(5),
        since: z.union([z.iso.datetime(), z.null()]),
        meta: z.record(z.string(), z.number()),
        pair: z.tuple([z.string(), z.int()]),
      }),
    );
    expect(schemaType(search)).toBe(
      [
        '{',
        '  /** Only mail from this address */',
        '  from?: string;',
        '  labels: ("inbox" | "spam")[];',
        '  since: string | null;',
        '  meta: Record<string, number>;',
        '  pair: [string, number];',
        '}',
      ].join('\n'),
    );
    type Tree = { label: string; children: Tree[] };
    const tree: z.ZodType<Tree> = z.lazy(() => z.object({ label: z.string(), children: z.array(tree) }));
    const recursive = schemaType(fromZod(z.object({ tree })));
    expect(recursive).toContain('label: string');
    expect(syntaxErrors(recursive)).toEqual([]);
  });

  it('writes types TypeScript parses, for every construct at once', () => {
    const type = schemaType({
      type: 'object',
      properties: {
        a: { type: ['string', 'null'], description: 'multi\nline' },
        b: { prefixItems: [{ const: 'x|y' }, { enum: ['{', '}'] }], type: 'array' },
        c: { allOf: [{ anyOf: [{ type: 'string' }, { type: 'number' }] }, { type: 'string' }] },
        'd-e': { type: 'object', additionalProperties: { type: 'array', items: { type: 'integer' } } },
      },
    });
    expect(syntaxErrors(type)).toEqual([]);
  });
});

describe('commentLines', () => {
  it('never lets text close the comment, and splits every kind of line break', () => {
    expect(commentLines('a */ b\r\nc\u2028d\re')).toEqual(['a *\\/ b', 'c', 'd', 'e']);
    expect(jsDoc(commentLines('end */ declare const x: 1; /*'), '  ')).toBe(
      '  /** end *\\/ declare const x: 1; /* */\n',
    );
  });

  it('replaces control characters with spaces and trims blank lines at the ends', () => {
    expect(commentLines('\n\nx\u0000y\u001b[2J\n\n')).toEqual(['x y [2J']);
  });
});

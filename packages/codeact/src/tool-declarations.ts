// JSON Schema → the TypeScript-like types a model reads in the code prompt. The JSON tool specs and these
// declarations come from the same schema object, so what JSON mode validates and what code mode shows cannot drift
// (decision 0065). The output is for a model to read, not for tsc: it is deterministic, indented two spaces, and
// falls back to `unknown` for whatever it does not understand rather than guessing.

/** A JSON Schema as tools carry it: an object, or `true`/`false`. */
type Schema = Record<string, unknown> | boolean;

const indentUnit = '  ';
/** An object with no documented property is written on one line when it fits in this many characters. */
const maxInlineChars = 80;
const identifierPattern = /^[A-Za-z_$][\w$]*$/;

/**
 * How deep schemas may nest inside one another (properties, items, anyOf members, `$ref` targets) before the rest is
 * written `unknown`. Real tools nest a handful of levels; a server's schema nested thousands deep would otherwise
 * exhaust the stack.
 */
const maxNesting = 32;
/**
 * How many schemas one tool's type may expand. `$ref`s are expanded in place, so a schema of a few lines can name
 * exponentially many (`A` has two properties of type `B`, `B` two of type `C`, …); past this the rest is `unknown`.
 */
const maxSchemas = 2_000;

interface RenderState {
  /** The schema `$ref`s resolve against: the tool's parameters. */
  root: Schema;
  /** The `$ref`s being expanded on the way here; meeting one again is a cycle, written `unknown`. */
  expanding: ReadonlySet<string>;
  /** Schemas entered on the way here. */
  nesting: number;
  /** Schemas this type may still expand, shared by the whole type. */
  budget: { schemas: number };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asSchema(value: unknown): Schema | undefined {
  return typeof value === 'boolean' || isRecord(value) ? value : undefined;
}

/**
 * A JSON value as a TypeScript literal. JSON.stringify escapes quotes and line feeds; U+2028 and U+2029 are escaped
 * too, so that no literal from an outside schema shows the model a line break.
 */
function typeLiteral(value: unknown): string {
  const text = JSON.stringify(value) ?? 'undefined';
  return text.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

/** A property name as written in a type: bare when it is an identifier, quoted otherwise. */
function propertyKey(name: string): string {
  return identifierPattern.test(name) ? name : typeLiteral(name);
}

/**
 * Text from a schema or a tool (much of it written outside Assistant: MCP servers describe their own tools) made
 * safe to put inside a `/** … *\/` comment: every kind of line break becomes a line feed, other control characters
 * become spaces, and `*\/` can never close the comment early. Each line is later prefixed with ` * `, so a
 * description cannot add a line that reads as a declaration.
 */
export function commentLines(text: string): string[] {
  const cleaned = text
    .replace(/\r\n?|[\u2028\u2029\u0085\v\f]/g, '\n')
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is being removed
    .replace(/[\u0000-\u0008\u000e-\u001f\u007f\t]/g, ' ')
    .replace(/\*\//g, '*\\/');
  const lines = cleaned.split('\n').map((line) => line.trimEnd());
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines.at(-1) === '') lines.pop();
  return lines;
}

/** A JSDoc comment at `indent`: on one line when the text is one line, else ` * `-prefixed lines. */
export function jsDoc(lines: readonly string[], indent: string): string {
  if (lines.length === 0) return '';
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  return `${indent}/**\n${lines.map((line) => (line === '' ? `${indent} *` : `${indent} * ${line}`)).join('\n')}\n${indent} */\n`;
}

/** Resolves a local `$ref` (`#`, `#/$defs/Name`, `#/definitions/Name`, any JSON pointer into the root). */
function resolveReference(reference: string, root: Schema): Schema | undefined {
  if (reference === '#') return root;
  if (!reference.startsWith('#/')) return undefined;
  let node: unknown = root;
  for (const raw of reference.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isRecord(node) || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return asSchema(node);
}

/** True when `type` has a `|` or `&` outside brackets and string literals. */
function isCompound(type: string): boolean {
  let nesting = 0;
  for (let index = 0; index < type.length; index++) {
    const character = type[index];
    if (character === '"') {
      // Skip the literal: JSON.stringify wrote it, so a quote inside is always escaped.
      for (index++; index < type.length && type[index] !== '"'; index++) if (type[index] === '\\') index++;
    } else if (character === '{' || character === '[' || character === '(' || character === '<') nesting++;
    else if (character === '}' || character === ']' || character === ')' || character === '>') nesting--;
    else if (nesting === 0 && (character === '|' || character === '&')) return true;
  }
  return false;
}

/** Wraps a union or intersection in parentheses where it is an operand of `[]`, `&` or `...`. */
function grouped(type: string): string {
  return isCompound(type) ? `(${type})` : type;
}

function union(types: readonly string[]): string {
  const unique = [...new Set(types)];
  if (unique.length === 0) return 'never';
  if (unique.includes('unknown')) return 'unknown';
  return unique.join(' | ');
}

/**
 * The TypeScript-like type of `schema`. `depth` is the indentation level of the line the type starts on: a
 * multi-line object's properties sit one level deeper and its closing brace at `depth`.
 */
export function schemaType(schema: unknown, depth = 0, root?: Schema): string {
  const checked = asSchema(schema);
  if (checked === undefined) return 'unknown';
  return render(checked, depth, {
    root: root ?? checked,
    expanding: new Set(),
    nesting: 0,
    budget: { schemas: maxSchemas },
  });
}

function render(schema: Schema, depth: number, outer: RenderState): string {
  if (schema === true) return 'unknown';
  if (schema === false) return 'never';
  outer.budget.schemas -= 1;
  if (outer.nesting >= maxNesting || outer.budget.schemas < 0) return 'unknown';
  const state: RenderState = { ...outer, nesting: outer.nesting + 1 };
  const parts: string[] = [];
  if (typeof schema.$ref === 'string') {
    const reference = schema.$ref;
    const target = state.expanding.has(reference) ? undefined : resolveReference(reference, state.root);
    // A cycle (or a reference we cannot follow) is written `unknown`: the model is shown less, never a loop.
    parts.push(
      target === undefined
        ? 'unknown'
        : render(target, depth, { ...state, expanding: new Set([...state.expanding, reference]) }),
    );
  }
  const own = ownType(schema, depth, state);
  if (own !== undefined) parts.push(own);
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const options = schema[keyword];
    if (Array.isArray(options) && options.length > 0) {
      parts.push(union(options.map((option) => renderUnknown(option, depth, state))));
    }
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
    for (const member of schema.allOf) parts.push(renderUnknown(member, depth, state));
  }
  const known = [...new Set(parts)].filter((part) => part !== 'unknown');
  if (known.length === 0) return parts.includes('never') ? 'never' : 'unknown';
  if (known.length === 1) return known[0] ?? 'unknown';
  return known.map(grouped).join(' & ');
}

function renderUnknown(value: unknown, depth: number, state: RenderState): string {
  const schema = asSchema(value);
  return schema === undefined ? 'unknown' : render(schema, depth, state);
}

/** The type the schema's own keywords say (const, enum, type), or undefined when it has none of them. */
function ownType(schema: Record<string, unknown>, depth: number, state: RenderState): string | undefined {
  if (Object.hasOwn(schema, 'const')) return typeLiteral(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(typeLiteral));
  const type = schema.type;
  if (Array.isArray(type)) {
    return union(
      type.map((member) => (typeof member === 'string' ? typeNamed(member, schema, depth, state) : 'unknown')),
    );
  }
  if (typeof type === 'string') return typeNamed(type, schema, depth, state);
  // No `type`, but the keywords of one: zod and hand-written schemas leave `type` out of some objects and arrays.
  if (isRecord(schema.properties)) return objectType(schema, depth, state);
  if (schema.items !== undefined || Array.isArray(schema.prefixItems)) return arrayType(schema, depth, state);
  return undefined;
}

function typeNamed(type: string, schema: Record<string, unknown>, depth: number, state: RenderState): string {
  switch (type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return arrayType(schema, depth, state);
    case 'object':
      return objectType(schema, depth, state);
    default:
      return 'unknown';
  }
}

function arrayType(schema: Record<string, unknown>, depth: number, state: RenderState): string {
  // A tuple: `prefixItems` (2020-12), or `items` as an array (draft 7 and before, with `additionalItems`).
  const prefix = Array.isArray(schema.prefixItems)
    ? schema.prefixItems
    : Array.isArray(schema.items)
      ? schema.items
      : undefined;
  if (prefix !== undefined) {
    const rest = Array.isArray(schema.prefixItems) ? schema.items : schema.additionalItems;
    const members = prefix.map((member) => renderUnknown(member, depth, state));
    const restSchema = asSchema(rest);
    if (restSchema !== false) {
      // Absent means "anything may follow", as JSON Schema reads it.
      members.push(`...${grouped(restSchema === undefined ? 'unknown' : render(restSchema, depth, state))}[]`);
    }
    return `[${members.join(', ')}]`;
  }
  const items = asSchema(schema.items);
  return `${grouped(items === undefined ? 'unknown' : render(items, depth, state))}[]`;
}

function objectType(schema: Record<string, unknown>, depth: number, state: RenderState): string {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const required = new Set(
    Array.isArray(schema.required) ? schema.required.filter((name) => typeof name === 'string') : [],
  );
  const extra = schema.additionalProperties;
  const names = Object.keys(properties);
  // Extra keys: a schema for them, or `true`. Absent next to a `properties` keyword (even an empty one: a tool without
  // arguments) is left unsaid: JSON Schema allows extra keys there, but showing them would only invite the model to
  // invent some. An object with neither keyword is a free-form record.
  const extraSchema = asSchema(extra);
  const extraType =
    extraSchema === undefined
      ? isRecord(schema.properties)
        ? undefined
        : 'unknown'
      : extraSchema === false
        ? undefined
        : render(extraSchema, depth + 1, state);
  if (names.length === 0) {
    if (extraType === undefined) return '{}';
    return `Record<string, ${extraType}>`;
  }
  const inner = indentUnit.repeat(depth + 1);
  const members = names.map((name) => {
    const property = asSchema(properties[name]) ?? true;
    const key = `${propertyKey(name)}${required.has(name) ? '' : '?'}`;
    return { doc: propertyDoc(property, state), text: `${key}: ${render(property, depth + 1, state)}` };
  });
  if (extraType !== undefined) members.push({ doc: [], text: `[key: string]: ${extraType}` });
  const inline = `{ ${members.map((member) => member.text).join('; ')} }`;
  if (members.every((member) => member.doc.length === 0) && !inline.includes('\n') && inline.length <= maxInlineChars) {
    return inline;
  }
  const body = members.map((member) => `${jsDoc(member.doc, inner)}${inner}${member.text};`).join('\n');
  return `{\n${body}\n${indentUnit.repeat(depth)}}`;
}

/** A property's JSDoc: its description (or its `$ref` target's), and its default. */
function propertyDoc(schema: Schema, state: RenderState): string[] {
  if (typeof schema === 'boolean') return [];
  let described = schema;
  if (typeof schema.description !== 'string' && typeof schema.$ref === 'string' && !state.expanding.has(schema.$ref)) {
    const target = resolveReference(schema.$ref, state.root);
    if (isRecord(target)) described = target;
  }
  const lines = typeof described.description === 'string' ? commentLines(described.description) : [];
  if (Object.hasOwn(schema, 'default')) lines.push(...commentLines(`@default ${typeLiteral(schema.default)}`));
  return lines;
}

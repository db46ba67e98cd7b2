/**
 * JSON Schema → TypeScript-like type text, for the declarations a code prompt shows. Covers what tool schemas use
 * (zod's `toJSONSchema` and MCP servers' hand-written ones): objects, arrays, tuples, primitives, enum/const, anyOf/
 * oneOf/allOf, nullable type lists, local `$ref`s; anything else is `unknown`. Deterministic, two-space indented.
 */

type Schema = Record<string, unknown>;

const identifierPattern = /^[A-Za-z_$][\w$]*$/;

/** Text from outside (an MCP server's description) as a comment line that cannot close the comment or fake code. */
export function commentText(text: string): string {
  return text
    .replace(/\*\//g, '*\\/')
    .replace(/[\r\n\u2028\u2029]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** A property name as TypeScript writes it: bare when an identifier, quoted otherwise. */
function propertyName(name: string): string {
  return identifierPattern.test(name) ? name : JSON.stringify(name);
}

interface Context {
  root: Schema;
  /** `$ref`s being expanded, to stop at a cycle. */
  expanding: Set<string>;
  depth: number;
}

/** The type of `schema` at `indent` (the indentation of the line the type starts on). */
export function typeOf(schema: unknown, indent = '', context?: Context): string {
  const ctx: Context = context ?? { root: isSchema(schema) ? schema : {}, expanding: new Set(), depth: 0 };
  if (schema === true || schema === undefined) return 'unknown';
  if (schema === false) return 'never';
  if (!isSchema(schema)) return 'unknown';
  if (ctx.depth > 12) return 'unknown';
  const next: Context = { ...ctx, depth: ctx.depth + 1 };

  const ref = schema.$ref;
  if (typeof ref === 'string') {
    const target = resolveRef(ctx.root, ref);
    if (target === undefined || ctx.expanding.has(ref)) return 'unknown';
    return typeOf(target, indent, { ...next, expanding: new Set([...ctx.expanding, ref]) });
  }
  if ('const' in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return union(schema.enum.map(literal));
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return union(options.map((option) => typeOf(option, indent, next)));
  }
  if (Array.isArray(schema.allOf)) {
    const parts = schema.allOf.map((part) => typeOf(part, indent, next)).filter((part) => part !== 'unknown');
    return parts.length === 0 ? 'unknown' : parts.map((part) => (part.includes('|') ? `(${part})` : part)).join(' & ');
  }
  const type = schema.type;
  if (Array.isArray(type)) return union(type.map((one) => typeOf({ ...schema, type: one }, indent, next)));
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
      return arrayType(schema, indent, next);
    case 'object':
      return objectType(schema, indent, next);
    default:
      if (isSchema(schema.properties)) return objectType(schema, indent, next);
      return 'unknown';
  }
}

function arrayType(schema: Schema, indent: string, context: Context): string {
  const prefix = schema.prefixItems;
  if (Array.isArray(prefix)) {
    const items = prefix.map((item) => typeOf(item, indent, context));
    const rest = schema.items;
    if (isSchema(rest) || rest === true) items.push(`...${wrapped(typeOf(rest, indent, context))}[]`);
    return `[${items.join(', ')}]`;
  }
  if (Array.isArray(schema.items)) return `[${schema.items.map((item) => typeOf(item, indent, context)).join(', ')}]`;
  return `${wrapped(typeOf(schema.items, indent, context))}[]`;
}

function objectType(schema: Schema, indent: string, context: Context): string {
  const properties = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.map(String) : []);
  const inner = `${indent}  `;
  const lines: string[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const doc = docOf(property);
    if (doc !== undefined) lines.push(`${inner}/** ${doc} */`);
    const optional = required.has(name) ? '' : '?';
    lines.push(`${inner}${propertyName(name)}${optional}: ${typeOf(property, inner, context)};`);
  }
  const extra = schema.additionalProperties;
  if (extra === true || isSchema(extra)) {
    lines.push(`${inner}[key: string]: ${extra === true ? 'unknown' : typeOf(extra, inner, context)};`);
  }
  if (lines.length === 0) return extra === false || Object.keys(properties).length === 0 ? '{}' : 'object';
  return `{\n${lines.join('\n')}\n${indent}}`;
}

/** A property's description and default, as one comment line. */
function docOf(property: unknown): string | undefined {
  if (!isSchema(property)) return undefined;
  const parts: string[] = [];
  if (typeof property.description === 'string' && property.description.trim() !== '') {
    parts.push(commentText(property.description));
  }
  if ('default' in property) parts.push(`@default ${commentText(JSON.stringify(property.default) ?? 'undefined')}`);
  return parts.length === 0 ? undefined : parts.join(' ');
}

function literal(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
    return JSON.stringify(value);
  }
  return 'unknown';
}

function union(types: string[]): string {
  const unique = [...new Set(types)];
  if (unique.includes('unknown')) return 'unknown';
  return unique.length === 0 ? 'never' : unique.join(' | ');
}

/** A type as an array's element: a union gets parentheses. */
function wrapped(type: string): string {
  return type.includes(' | ') || type.includes(' & ') ? `(${type})` : type;
}

function resolveRef(root: Schema, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref
    .slice(1)
    .split('/')
    .filter((part) => part !== '')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isSchema(node) || !(part in node)) return undefined;
    node = node[part];
  }
  return node;
}

function isSchema(value: unknown): value is Schema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

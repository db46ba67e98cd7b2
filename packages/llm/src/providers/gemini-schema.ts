import { LlmSchemaUnsupportedError } from '../llm-errors.ts';

/**
 * JSON Schema keywords Gemini cannot express. The AI SDK (@ai-sdk/google 4.x) sends schemas as
 * `responseJsonSchema` / `parametersJsonSchema`, Gemini's JSON Schema subset, which takes `type` (with `null`),
 * `properties`, `required`, `additionalProperties`, `items`, `prefixItems`, `minItems`, `maxItems`, `enum`,
 * `format`, `minimum`, `maximum`, `title`, `description`, `anyOf`, `oneOf` (the SDK passes it through as a union),
 * `$ref` and `$defs` (the SDK turns `const` into a one-value `enum`). Gemini ignores or refuses the rest with a 400
 * that does not say where; these are refused here, naming the construct and its place, before anything is sent.
 */
const unsupported = [
  'not',
  'if',
  'then',
  'else',
  'allOf',
  'patternProperties',
  'dependentSchemas',
  'dependentRequired',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contains',
  'propertyNames',
  '$dynamicRef',
] as const;

/** Subschema-holding keywords walked into, with how their children are named in the pointer. */
const objectOfSchemas = ['properties', '$defs', 'definitions'] as const;
const arrayOfSchemas = ['anyOf', 'oneOf', 'prefixItems'] as const;

/**
 * Throws LlmSchemaUnsupportedError for the first construct Gemini cannot express, with its JSON pointer
 * (`/properties/when/not`). `pointer` is where `schema` sits in the document being checked.
 */
export function assertGeminiSchema(schema: unknown, pointer = ''): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  const node = schema as Record<string, unknown>;
  for (const keyword of unsupported) {
    if (keyword in node) throw new LlmSchemaUnsupportedError('Gemini', keyword, `${pointer}/${pointerToken(keyword)}`);
  }
  for (const keyword of objectOfSchemas) {
    const children = node[keyword];
    if (children !== null && typeof children === 'object' && !Array.isArray(children)) {
      for (const [name, child] of Object.entries(children)) {
        assertGeminiSchema(child, `${pointer}/${keyword}/${pointerToken(name)}`);
      }
    }
  }
  for (const keyword of arrayOfSchemas) {
    const children = node[keyword];
    if (Array.isArray(children)) {
      children.forEach((child, index) => {
        assertGeminiSchema(child, `${pointer}/${keyword}/${index}`);
      });
    }
  }
  if (Array.isArray(node.items)) {
    node.items.forEach((child, index) => {
      assertGeminiSchema(child, `${pointer}/items/${index}`);
    });
  } else assertGeminiSchema(node.items, `${pointer}/items`);
  assertGeminiSchema(node.additionalProperties, `${pointer}/additionalProperties`);
}

/** RFC 6901: `~` and `/` in a name are escaped in a pointer. */
function pointerToken(name: string): string {
  return name.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** What a model can do natively; the rest is polyfilled (tool calls through a ReAct prompt, JSON through instructions). */
export interface ModelCapabilities {
  /** Native tool calls (`tools` / `tool_calls`). */
  tools: boolean;
  /** `response_format: {type: 'json_schema'}`. */
  jsonSchema: boolean;
  /** Context window in tokens. */
  contextWindow: number;
}

/**
 * Known models by name pattern, first match wins. Names are matched without an Ollama tag's size suffix
 * (`llama3.1:8b` is `llama3.1`). Unknown models are assumed to call tools natively with an 8k window: most current
 * ones do, and a profile's `capabilities:` corrects the rest.
 */
const table: { pattern: RegExp; capabilities: ModelCapabilities }[] = [
  {
    pattern: /^(gpt-4\.1|gpt-4o|gpt-5|o[134])/,
    capabilities: { tools: true, jsonSchema: true, contextWindow: 128_000 },
  },
  { pattern: /^gpt-3\.5/, capabilities: { tools: true, jsonSchema: false, contextWindow: 16_000 } },
  { pattern: /^(llama3\.[1-3]|llama4)/, capabilities: { tools: true, jsonSchema: true, contextWindow: 128_000 } },
  {
    pattern: /^(qwen2\.5|qwen3|mistral-nemo|mistral-small|mistral-large|command-r|granite3)/,
    capabilities: { tools: true, jsonSchema: true, contextWindow: 32_000 },
  },
  // Older or smaller local models without a tool-calling template: prompted ReAct instead.
  {
    pattern: /^(llama3|llama2|gemma|phi3|phi-3|mistral|tinyllama|orca)/,
    capabilities: { tools: false, jsonSchema: true, contextWindow: 8_192 },
  },
];

const unknown: ModelCapabilities = { tools: true, jsonSchema: true, contextWindow: 8_192 };

/** The capabilities of a model, from the table, with a profile's overrides on top. */
export function modelCapabilities(
  model: string,
  overrides: { tools?: boolean; jsonSchema?: boolean; contextWindow?: number } = {},
): ModelCapabilities {
  const name = model.toLowerCase().split('/').at(-1)?.split(':')[0] ?? model;
  const known = table.find((entry) => entry.pattern.test(name))?.capabilities ?? unknown;
  return {
    tools: overrides.tools ?? known.tools,
    jsonSchema: overrides.jsonSchema ?? known.jsonSchema,
    contextWindow: overrides.contextWindow ?? known.contextWindow,
  };
}

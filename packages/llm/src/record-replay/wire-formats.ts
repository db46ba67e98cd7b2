/**
 * Which requests are model requests, per wire format, and the canonical form of each that its fixture key is made
 * of. Everything that does not decide the answer is left out of the canonical form: host and base URL, headers (and
 * their tokens), `?key=`, `stream`/`stream_options` (OpenAI only, see below), sampling parameters, `max_tokens`,
 * Anthropic `cache_control` markers, the time-awareness line at the end of the system prompt (replaced by a
 * placeholder), the values of tool-call ids (replaced by their order of appearance), and the values Assistant mints at
 * run time (agent, task and run ids, clock readings: see {@link mintedKinds}), so a fixture recorded yesterday against
 * a proxy replays today against the provider.
 */
import type { ProviderKind } from '../chat-types.ts';

/** The three request and answer shapes providers speak. */
export type WireFormat = 'openai' | 'anthropic' | 'gemini';

/** A model request recognised on the wire, with what its key is made of. */
export interface ModelRequest {
  wire: WireFormat;
  model: string;
  /** Whether the request asks for a stream of server-sent events. */
  streaming: boolean;
  /** The fields that decide the answer, volatile parts replaced; see {@link canonicalRequest}. */
  canonical: Record<string, unknown>;
  /**
   * The values Assistant minted that the canonical form replaced, by placeholder (`minted-agent-1` → `ag-3f…`): a
   * recording keeps them, so a replay can give the model's answer the values of the run replaying it.
   */
  minted: Record<string, string>;
  /** The request's path without host, base URL prefix or query, for the fixture's reader. */
  endpoint: string;
}

/** The placeholder that stands for the `Current time: …` line of time awareness in a key. */
const currentTimePlaceholder = 'Current time: <volatile>';

// The time wrapper appends exactly one line starting with `Current time: ` as the last line of the system content.
const currentTimeLine = /(^|\n)Current time: [^\n]*\s*$/;

/** The provider a wire format's requests are filed under when the transport was not told its provider. */
export function defaultProviderOf(wire: WireFormat): ProviderKind {
  if (wire === 'anthropic') return 'anthropic';
  if (wire === 'gemini') return 'google';
  return 'openai-compatible';
}

const geminiPath = /\/models\/([^/:]+):(generateContent|streamGenerateContent)$/;

/**
 * The model request `url` and `body` make, or undefined for any other request (model listings, embeddings, token
 * counts). Only POSTs with a JSON object body count. A provider's own format is recognised first; the others too,
 * so a transport made without `provider` still files every request.
 */
export function recognizeModelRequest(options: {
  method: string;
  url: string;
  body: unknown;
}): ModelRequest | undefined {
  if (options.method.toUpperCase() !== 'POST' || !isPlainObject(options.body)) return undefined;
  let pathname: string;
  try {
    pathname = new URL(options.url).pathname.replace(/\/+$/, '');
  } catch {
    return undefined;
  }
  const body = options.body;
  const minted = new Map<string, string>();
  const mintedOf = () => Object.fromEntries([...minted].map(([value, placeholder]) => [placeholder, value]));
  if (pathname.endsWith('/chat/completions') && Array.isArray(body.messages)) {
    return {
      wire: 'openai',
      model: typeof body.model === 'string' ? body.model : '',
      streaming: body.stream === true,
      canonical: canonicalRequest('openai', body, minted),
      minted: mintedOf(),
      endpoint: '/chat/completions',
    };
  }
  if (pathname.endsWith('/messages') && Array.isArray(body.messages) && !pathname.endsWith('/count_tokens')) {
    const streaming = body.stream === true;
    return {
      wire: 'anthropic',
      model: typeof body.model === 'string' ? body.model : '',
      streaming,
      canonical: { ...canonicalRequest('anthropic', body, minted), stream: streaming },
      minted: mintedOf(),
      endpoint: '/messages',
    };
  }
  const gemini = geminiPath.exec(pathname);
  if (gemini !== null && Array.isArray(body.contents)) {
    const model = decodeURIComponent(gemini[1] ?? '');
    const streaming = gemini[2] === 'streamGenerateContent';
    return {
      wire: 'gemini',
      model,
      streaming,
      canonical: { model, ...canonicalRequest('gemini', body, minted), stream: streaming },
      minted: mintedOf(),
      endpoint: `/models/${model}:${gemini[2]}`,
    };
  }
  return undefined;
}

/**
 * The body fields of a request that decide the answer, volatile parts removed. Streaming is decided by the caller:
 * OpenAI leaves it out (a recording is converted between a stream and a completion), Anthropic and Gemini key the
 * two apart, since their streams carry events (thinking signatures, usage deltas) a conversion would have to invent.
 */
export function canonicalRequest(
  wire: WireFormat,
  body: Record<string, unknown>,
  /** Filled with each minted value replaced and its placeholder (see {@link withStableMintedValues}). */
  minted: Map<string, string> = new Map(),
): Record<string, unknown> {
  const canonical: Record<string, unknown> = {};
  const pick = (field: string, value: unknown = body[field]) => {
    if (value !== undefined) canonical[field] = withoutCacheControl(value);
  };
  if (wire === 'openai') {
    pick('model');
    pick(
      'messages',
      Array.isArray(body.messages) ? withStableToolCallIds(body.messages.map(withoutOpenAiTimeLine)) : body.messages,
    );
    pick('tools');
    pick('tool_choice');
    pick('response_format');
  } else if (wire === 'anthropic') {
    pick('model');
    pick('system', withoutTimeLine(body.system));
    pick('messages', withStableToolCallIds(body.messages));
    pick('tools');
    pick('tool_choice');
    pick('thinking');
    // Anthropic's structured outputs (beta) decide the answer's shape like OpenAI's response_format.
    pick('output_format');
  } else {
    pick('contents', withStableToolCallIds(body.contents));
    pick('systemInstruction', withoutTimeLine(body.systemInstruction));
    pick('tools');
    pick('toolConfig');
    const generation = isPlainObject(body.generationConfig) ? body.generationConfig : {};
    const decisive: Record<string, unknown> = {};
    for (const field of ['responseSchema', 'responseJsonSchema', 'responseMimeType', 'thinkingConfig']) {
      if (generation[field] !== undefined) decisive[field] = generation[field];
    }
    if (Object.keys(decisive).length > 0) canonical.generationConfig = decisive;
  }
  return withStableMintedValues(withStableFenceMarkers(canonical), minted) as Record<string, unknown>;
}

/**
 * The values Assistant mints while it runs that reach a prompt: a sub-agent's id (`ag-` and 16 hex digits, from its
 * parent's task id), a queue task id (a lower-case ULID), a workflow run id (`run-YYYYMMDD-` and 10 hex digits, or 16 letters and digits), and a
 * clock reading as `Date.toISOString` writes it (a blackboard entry's time). Each run of the same work mints others,
 * so a prompt that carries them (a spawn_agent result, a blackboard) would otherwise get another key on every run.
 * Each has a fixed length, so a replay can put the current values into a recorded answer without moving a byte.
 */
const mintedKinds = {
  agent: /\bag-[0-9a-f]{16}\b/,
  // `startWorkflowRun`'s (10 hex digits), or the one a runner makes from its task id when its enqueuer gave none (16).
  run: /\brun-\d{8}-(?:[0-9a-f]{10}|[0-9a-z]{16})\b/,
  task: /\b[0-7][0-9a-hjkmnp-tv-z]{25}\b/,
  instant: /\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/,
} as const;

const mintedValue = new RegExp(
  Object.entries(mintedKinds)
    .map(([kind, pattern]) => `(?<${kind}>${pattern.source})`)
    .join('|'),
  'g',
);

/**
 * Minted values (see {@link mintedKinds}) replaced by their kind and order of first appearance in every string
 * (`minted-agent-1`, `minted-task-2`, …); the same value gets the same placeholder, so which child is which is kept.
 * `minted` maps each value replaced to its placeholder.
 */
function withStableMintedValues(value: unknown, minted: Map<string, string>): unknown {
  if (typeof value === 'string') {
    return value.replace(mintedValue, (found, ...rest: unknown[]) => {
      const groups = rest.at(-1) as Record<string, string | undefined>;
      const kind = Object.keys(mintedKinds).find((name) => groups[name] !== undefined) ?? 'value';
      let placeholder = minted.get(found);
      if (placeholder === undefined) {
        const count = [...minted.values()].filter((known) => known.startsWith(`minted-${kind}-`)).length;
        placeholder = `minted-${kind}-${count + 1}`;
        minted.set(found, placeholder);
      }
      return placeholder;
    });
  }
  if (Array.isArray(value)) return value.map((item) => withStableMintedValues(item, minted));
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) setOwn(copy, name, withStableMintedValues(item, minted));
  return copy;
}

// fenceUntrusted (prompts/fence-untrusted.ts) draws a fresh random marker for every fence: `UNTRUSTED-<16 hex>`.
const fenceMarker = /UNTRUSTED-[0-9a-f]{16}\b/g;

/**
 * Fence markers replaced by their order of first appearance (`UNTRUSTED-fence-1`, …) in every string: the marker is
 * random on each call, so a prompt with fenced mail or a fenced tool result would otherwise get another key on every
 * run. The same marker gets the same stand-in, so which fence is which is kept.
 */
function withStableFenceMarkers(value: unknown, stable = new Map<string, string>()): unknown {
  if (typeof value === 'string') {
    return value.replace(fenceMarker, (marker) => {
      let replaced = stable.get(marker);
      if (replaced === undefined) {
        replaced = `UNTRUSTED-fence-${stable.size + 1}`;
        stable.set(marker, replaced);
      }
      return replaced;
    });
  }
  if (Array.isArray(value)) return value.map((item) => withStableFenceMarkers(item, stable));
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) setOwn(copy, name, withStableFenceMarkers(item, stable));
  return copy;
}

/**
 * Tool-call ids replaced by their order of first appearance (`tool-call-1`, …), wherever a call or its result names
 * one: an adapter that translates history from a provider without ids (Gemini) makes them up at random, so the same
 * conversation would otherwise get another key on every run. Which result answers which call is kept.
 */
function withStableToolCallIds(messages: unknown): unknown {
  const stable = new Map<string, string>();
  const stableId = (id: string): string => {
    let replaced = stable.get(id);
    if (replaced === undefined) {
      replaced = `tool-call-${stable.size + 1}`;
      stable.set(id, replaced);
    }
    return replaced;
  };
  const walk = (node: unknown, field?: string): unknown => {
    if (Array.isArray(node)) return node.map((item) => walk(item));
    if (!isPlainObject(node)) return node;
    const isCall =
      (node.type === 'function' && isPlainObject(node.function)) ||
      node.type === 'tool_use' ||
      node.type === 'server_tool_use' ||
      field === 'functionCall' ||
      field === 'functionResponse';
    const copy: Record<string, unknown> = {};
    for (const [name, item] of Object.entries(node)) {
      const isId = (name === 'id' && isCall) || name === 'tool_call_id' || name === 'tool_use_id';
      setOwn(copy, name, isId && typeof item === 'string' ? stableId(item) : walk(item, name));
    }
    return copy;
  };
  return walk(messages);
}

// OpenAI: the time line is in the (first) system message, as a string or the last text part.
function withoutOpenAiTimeLine(message: unknown): unknown {
  if (!isPlainObject(message) || (message.role !== 'system' && message.role !== 'developer')) return message;
  return { ...message, content: withoutTimeLine(message.content) };
}

/**
 * A system prompt with its trailing `Current time: …` line replaced by {@link currentTimePlaceholder}: a string, an
 * array of text blocks/parts (the last text one is looked at, since Anthropic adapters keep the line in a block of
 * its own after the cache breakpoint), or Gemini's `{parts: [...]}`.
 */
function withoutTimeLine(system: unknown): unknown {
  if (typeof system === 'string') return system.replace(currentTimeLine, `$1${currentTimePlaceholder}`);
  if (Array.isArray(system)) {
    const copy = [...system];
    for (let index = copy.length - 1; index >= 0; index--) {
      const part = copy[index];
      if (isPlainObject(part) && typeof part.text === 'string') {
        copy[index] = { ...part, text: withoutTimeLine(part.text) };
        break;
      }
    }
    return copy;
  }
  if (isPlainObject(system) && Array.isArray(system.parts)) return { ...system, parts: withoutTimeLine(system.parts) };
  return system;
}

// `cache_control` marks where Anthropic may cache a prefix: the same prompt with or without it gets the same answer.
function withoutCacheControl(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCacheControl);
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const [name, item] of Object.entries(value)) {
    if (name !== 'cache_control') setOwn(copy, name, withoutCacheControl(item));
  }
  return copy;
}

/**
 * `copy[name] = value` for any name: a body may hold a key named `__proto__` (JSON.parse makes it an own property),
 * which plain assignment would take as the prototype and drop, so two different requests would share a key.
 */
function setOwn(copy: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(copy, name, { value, enumerable: true, writable: true, configurable: true });
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * JSON with object keys sorted at every depth, so two bodies that differ only in key order get the same key.
 * Undefined object values are dropped as JSON.stringify drops them.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (isPlainObject(value)) {
    const entries = Object.keys(value)
      .filter((name) => value[name] !== undefined)
      .sort()
      .map((name) => `${JSON.stringify(name)}:${canonicalJson(value[name])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The same value with object keys sorted at every depth, for writing a readable canonical request. */
export function sortedKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedKeys);
  if (!isPlainObject(value)) return value;
  const copy: Record<string, unknown> = {};
  for (const name of Object.keys(value).sort()) {
    if (value[name] !== undefined) setOwn(copy, name, sortedKeys(value[name]));
  }
  return copy;
}

/**
 * The first place two JSON values differ, as a path like `$.messages[2].content`, with both values; undefined when
 * they are equal. Arrays are compared item by item, then by length.
 */
export function firstDifference(
  recorded: unknown,
  requested: unknown,
  at = '$',
): { path: string; recorded: unknown; requested: unknown } | undefined {
  if (Array.isArray(recorded) && Array.isArray(requested)) {
    const shared = Math.min(recorded.length, requested.length);
    for (let index = 0; index < shared; index++) {
      const found = firstDifference(recorded[index], requested[index], `${at}[${index}]`);
      if (found !== undefined) return found;
    }
    if (recorded.length === requested.length) return undefined;
    return {
      path: `${at}[${shared}]`,
      recorded: recorded[shared] ?? '(absent)',
      requested: requested[shared] ?? '(absent)',
    };
  }
  if (isPlainObject(recorded) && isPlainObject(requested)) {
    const names = [...new Set([...Object.keys(recorded), ...Object.keys(requested)])].sort();
    for (const name of names) {
      const path = /^[A-Za-z_$][\w$]*$/.test(name) ? `${at}.${name}` : `${at}[${JSON.stringify(name)}]`;
      if (recorded[name] === undefined || requested[name] === undefined) {
        if (recorded[name] === requested[name]) continue;
        return { path, recorded: recorded[name] ?? '(absent)', requested: requested[name] ?? '(absent)' };
      }
      const found = firstDifference(recorded[name], requested[name], path);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  return canonicalJson(recorded) === canonicalJson(requested) ? undefined : { path: at, recorded, requested };
}

/** How far apart two JSON values are, roughly: the number of leaf values that differ. For picking a closest fixture. */
export function differenceSize(recorded: unknown, requested: unknown): number {
  if (Array.isArray(recorded) && Array.isArray(requested)) {
    let size = 0;
    const length = Math.max(recorded.length, requested.length);
    for (let index = 0; index < length; index++) size += differenceSize(recorded[index], requested[index]);
    return size;
  }
  if (isPlainObject(recorded) && isPlainObject(requested)) {
    let size = 0;
    for (const name of new Set([...Object.keys(recorded), ...Object.keys(requested)])) {
      size += differenceSize(recorded[name], requested[name]);
    }
    return size;
  }
  return canonicalJson(recorded ?? null) === canonicalJson(requested ?? null) ? 0 : 1;
}

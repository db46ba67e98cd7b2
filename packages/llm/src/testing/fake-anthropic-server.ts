import type { Server } from 'node:http';
import {
  argumentsText,
  type FakeAnswer,
  type FakeErrorSpec,
  type FakeProviderReply,
  type FakeProviderRequest,
  FakeProviderServer,
  type FakeProviderServerOptions,
  type FakeReplyTiming,
  roughTokens,
  splitIntoPieces,
  splitIntoWords,
  truncatedJson,
} from './fake-provider-server.ts';

export interface FakeAnthropicServerOptions extends FakeProviderServerOptions {
  /**
   * Refuse a history whose first message is not `user`, or with two messages of the same role in a row, as the
   * Messages API did until late 2024 and Bedrock and Vertex still do. The first-party API now merges consecutive
   * turns and accepts a leading assistant turn; set `false` to behave like it. @default true
   */
  strictRoles?: boolean;
}

/** The image types Anthropic takes inline. */
const imageMediaTypes = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'];

/** Anthropic's custom tool name pattern: a dotted name (`notes.search`) must be rewritten. */
const toolNamePattern = /^[a-zA-Z0-9_-]{1,128}$/;

// Counts `cache_control` markers anywhere in the system prompt, the tools and the messages' content blocks.
function countCacheControl(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countCacheControl(item), 0);
  if (value === null || typeof value !== 'object') return 0;
  let count = 0;
  for (const [key, child] of Object.entries(value)) {
    if (key === 'cache_control') count += child === null || child === undefined ? 0 : 1;
    else if (key === 'content' || key === 'system' || Array.isArray(child)) count += countCacheControl(child);
  }
  return count;
}

/** Anthropic's `tool_use` id pattern: an id from another provider (`call_…|…`, `functions.x:0`) must be rewritten. */
const toolUseIdPattern = /^[a-zA-Z0-9_-]+$/;

/** The body Anthropic sends with an HTTP error: `{type: 'error', error: {type, message}, request_id}`. */
export function anthropicErrorBody(type: string, message: string): Record<string, unknown> {
  return { type: 'error', error: { type, message }, request_id: `req_fake${Date.now().toString(36)}` };
}

/** Anthropic's error type and default message for an HTTP status. */
export function anthropicErrorFor(status: number): { type: string; message: string } {
  switch (status) {
    case 400:
      return { type: 'invalid_request_error', message: 'Invalid request' };
    case 401:
      return { type: 'authentication_error', message: 'invalid x-api-key' };
    case 403:
      return {
        type: 'permission_error',
        message: 'Your API key does not have permission to use the specified resource.',
      };
    case 404:
      return { type: 'not_found_error', message: 'Not found' };
    case 413:
      return { type: 'request_too_large', message: 'Request exceeds the maximum allowed number of bytes.' };
    case 429:
      return {
        type: 'rate_limit_error',
        message: 'This request would exceed the rate limit for your organization of 50 requests per minute.',
      };
    case 529:
      return { type: 'overloaded_error', message: 'Overloaded' };
    default:
      return status >= 500
        ? { type: 'api_error', message: 'Internal server error' }
        : { type: 'invalid_request_error', message: `Request failed with status ${status}` };
  }
}

type ContentReply = Extract<FakeProviderReply, { text?: string }> & FakeReplyTiming;

/**
 * A fake Anthropic Messages API on loopback, for tests only: `POST /v1/messages` (JSON, or server-sent events for
 * `stream: true`) and `GET /v1/models[/:id]`. Clients take `url` (`http://127.0.0.1:<port>/v1`) as their base URL.
 *
 * It checks what the real API checks before generating, and refuses like it: the `x-api-key` and
 * `anthropic-version` headers, `max_tokens`, the model (when `models` is given), roles, `tool_use` ids, thinking
 * signatures, `tool_result` ↔ `tool_use` pairing, empty content. See {@link validateAnthropicRequest}.
 *
 * @example
 * await using fake = await FakeAnthropicServer.start({ replies: [{ text: 'Hello' }] });
 * const model = createAnthropic({ baseURL: fake.url, apiKey: 'test' }).languageModel('claude-sonnet-4-5');
 */
export class FakeAnthropicServer extends FakeProviderServer {
  /** The base URL for a client: `http://127.0.0.1:<port>/v1`. */
  readonly url: string;

  private constructor(server: Server, origin: string, options: FakeAnthropicServerOptions) {
    super(server, origin, options);
    this.url = `${origin}/v1`;
  }

  /** Start a server on 127.0.0.1 on a free port. */
  static async start(options: FakeAnthropicServerOptions = {}): Promise<FakeAnthropicServer> {
    return FakeProviderServer.listen((server, origin) => new FakeAnthropicServer(server, origin, options));
  }

  protected isGeneration(request: FakeProviderRequest): boolean {
    return request.method === 'POST' && request.path === '/v1/messages';
  }

  protected errorAnswer(error: FakeErrorSpec): FakeAnswer {
    const { status, message, headers, retryAfterSeconds } = error;
    const defaults = anthropicErrorFor(status);
    const errorHeaders: Record<string, string> = { ...headers };
    if (retryAfterSeconds !== undefined) errorHeaders['retry-after'] = String(retryAfterSeconds);
    // Anthropic always says when to retry a rate-limited request.
    if (status === 429 && errorHeaders['retry-after'] === undefined) errorHeaders['retry-after'] = '1';
    const body = error.body ?? anthropicErrorBody(defaults.type, message ?? defaults.message);
    return { kind: 'json', status, body, headers: errorHeaders };
  }

  protected async route(request: FakeProviderRequest): Promise<FakeAnswer> {
    const refuse = (status: number, type: string, message: string): FakeAnswer => {
      request.rejected = { status, message };
      return { kind: 'json', status, body: anthropicErrorBody(type, message) };
    };
    const auth = this.#authenticate(request);
    if (auth !== undefined) return refuse(auth.status, auth.type, auth.message);

    const modelsMatch = /^\/v1\/models(?:\/([^/]+))?$/.exec(request.path);
    if (request.method === 'GET' && modelsMatch !== null) {
      const id = modelsMatch[1] === undefined ? undefined : decodeURIComponent(modelsMatch[1]);
      if (id === undefined) {
        const ids = this.options.models ?? ['claude-sonnet-4-5', 'claude-haiku-4-5'];
        const data = ids.map(modelObject);
        return {
          kind: 'json',
          status: 200,
          body: { data, has_more: false, first_id: ids[0] ?? null, last_id: ids.at(-1) ?? null },
        };
      }
      if (!this.#knowsModel(id)) return refuse(404, 'not_found_error', `model: ${id}`);
      return { kind: 'json', status: 200, body: modelObject(id) };
    }
    if (request.path !== '/v1/messages') {
      return refuse(404, 'not_found_error', `Not found: ${request.method} ${request.path}`);
    }
    if (request.method !== 'POST') return refuse(405, 'invalid_request_error', `Method ${request.method} not allowed`);

    const body = request.body;
    // Wording ours (the real message for a non-JSON body is not known); the status and type are Anthropic's.
    if (body === undefined) return refuse(400, 'invalid_request_error', 'Request body must be a JSON object');
    const invalid = validateAnthropicRequest(body, {
      strictRoles: (this.options as FakeAnthropicServerOptions).strictRoles ?? true,
    });
    if (invalid !== undefined) return refuse(400, 'invalid_request_error', invalid);
    const model = String(body.model);
    if (!this.#knowsModel(model)) return refuse(404, 'not_found_error', `model: ${model}`);
    const promptTokens = roughTokens(JSON.stringify([body.system ?? '', body.messages, body.tools ?? []]));
    const { maxInputTokens } = this.options;
    if (maxInputTokens !== undefined && promptTokens > maxInputTokens) {
      return refuse(
        400,
        'invalid_request_error',
        `prompt is too long: ${promptTokens} tokens > ${maxInputTokens} maximum`,
      );
    }

    const index = this.generationIndex;
    const scripted = await this.nextReply(request);
    if (scripted === undefined) {
      return {
        kind: 'json',
        status: 500,
        body: anthropicErrorBody('api_error', 'fake server: no scripted reply left'),
      };
    }
    await this.wait(scripted.delayMs, request);
    const streaming = body.stream === true;

    if ('error' in scripted) return this.errorAnswer(scripted.error);
    if ('rawBody' in scripted) {
      return { kind: 'json', status: scripted.status ?? 200, body: scripted.rawBody, headers: scripted.headers ?? {} };
    }
    if ('chunks' in scripted) {
      return {
        kind: 'stream',
        events: scripted.chunks,
        timing: scripted,
        status: scripted.status ?? 200,
        headers: scripted.headers ?? {},
      };
    }
    if ('rawEvents' in scripted) {
      return { kind: 'stream', events: scripted.rawEvents.map(anthropicEventText), timing: scripted };
    }
    const message = messageObject(scripted, {
      id: `msg_fake${String(index).padStart(4, '0')}`,
      model,
      promptTokens,
      index,
    });
    if (!streaming) return { kind: 'json', status: 200, body: message.body };
    return { kind: 'stream', events: streamEvents(message, scripted), timing: scripted };
  }

  #authenticate(request: FakeProviderRequest): { status: number; type: string; message: string } | undefined {
    const key = request.headers['x-api-key'];
    if (key === undefined || key === '') {
      return { status: 401, type: 'authentication_error', message: 'x-api-key header is required' };
    }
    if (this.options.apiKey !== undefined && key !== this.options.apiKey) {
      return { status: 401, type: 'authentication_error', message: 'invalid x-api-key' };
    }
    if (request.headers['anthropic-version'] === undefined) {
      return { status: 400, type: 'invalid_request_error', message: 'anthropic-version: header is required' };
    }
    return undefined;
  }

  #knowsModel(id: string): boolean {
    return this.options.models === undefined || this.options.models.includes(id);
  }
}

function modelObject(id: string): Record<string, unknown> {
  return { type: 'model', id, display_name: id, created_at: '2025-01-01T00:00:00Z' };
}

/** One event as Anthropic writes it: `event: <type>` then `data: <json>`; a string is sent as the data as is. */
export function anthropicEventText(event: object | string): string {
  if (typeof event === 'string') {
    let type = 'message';
    try {
      const parsed = JSON.parse(event) as { type?: unknown };
      if (typeof parsed.type === 'string') type = parsed.type;
    } catch {
      // Not JSON: a test replaying a broken event; sent under a generic name.
    }
    return `event: ${type}\ndata: ${event}\n\n`;
  }
  const type = (event as { type?: unknown }).type;
  return `event: ${typeof type === 'string' ? type : 'message'}\ndata: ${JSON.stringify(event)}\n\n`;
}

/**
 * Check a Messages request as the API does before generating; returns the API's error message, or `undefined` when
 * the request is valid. What it checks: `model`, `max_tokens` and `messages` present; roles `user`/`assistant` (with
 * `strictRoles`, a first `user` message and alternating roles); no empty content or empty text block; every
 * `tool_use` id matches `^[a-zA-Z0-9_-]+$`; every `thinking` block has its `signature` and every `redacted_thinking`
 * its `data`; every `tool_result` answers a `tool_use` of the message just before, and every `tool_use` is answered in
 * the message just after (when there is one); custom tool names match `^[a-zA-Z0-9_-]{1,128}$` and their
 * `input_schema` is an object schema; at most 4 `cache_control` breakpoints; with thinking on, a budget of at least
 * 1024 below `max_tokens`, no forced `tool_choice`, and the assistant message answered by the last tool results
 * starting with its thinking, `temperature` 1 or unset; inline images of a type it takes; a prefilled final assistant
 * turn not ending in whitespace. What it does not: content types beyond these, image sizes, the JSON Schema of tools,
 * whether a signature is genuine or a thinking block unmodified, token counts beyond `maxInputTokens`.
 */
export function validateAnthropicRequest(
  body: Record<string, unknown>,
  options: { strictRoles: boolean },
): string | undefined {
  if (typeof body.model !== 'string' || body.model === '') return 'model: Field required';
  if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
  if (!Array.isArray(body.messages)) return 'messages: Field required';
  const messages = body.messages as unknown[];
  // Wording ours, as for the next few checks marked so; the status and error type are Anthropic's.
  if (messages.length === 0) return 'messages: at least one message is required';
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  for (const [toolIndex, tool] of tools.entries()) {
    // Server tools (web search, code execution…) carry a versioned `type`; custom tools have none or `custom`.
    if (tool.type !== undefined && tool.type !== 'custom') continue;
    if (typeof tool.name !== 'string' || !toolNamePattern.test(tool.name)) {
      return `tools.${toolIndex}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`;
    }
    const schema = tool.input_schema as Record<string, unknown> | undefined;
    if (schema === undefined || schema === null || schema.type !== 'object') {
      // Wording ours.
      return `tools.${toolIndex}.custom.input_schema.type: Input should be 'object'`;
    }
  }
  const cacheBreakpoints = countCacheControl([body.system, tools, messages]);
  if (cacheBreakpoints > 4) {
    return `A maximum of 4 blocks with cache_control may be provided. Found ${cacheBreakpoints}.`;
  }
  const thinking = body.thinking as Record<string, unknown> | undefined;
  const thinkingOn = thinking?.type === 'enabled' || thinking?.type === 'adaptive';
  if (thinking?.type === 'enabled') {
    const budget = thinking.budget_tokens;
    if (typeof budget !== 'number' || budget < 1024) {
      return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
    }
    if ((body.max_tokens as number) <= budget) {
      return '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size';
    }
  }
  if (thinkingOn && body.temperature !== undefined && body.temperature !== 1) {
    return '`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility';
  }
  const toolChoice = body.tool_choice as Record<string, unknown> | undefined;
  if (thinkingOn && (toolChoice?.type === 'any' || toolChoice?.type === 'tool')) {
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  }
  const blocksOf = (message: Record<string, unknown>): Record<string, unknown>[] =>
    typeof message.content === 'string'
      ? [{ type: 'text', text: message.content }]
      : Array.isArray(message.content)
        ? (message.content as Record<string, unknown>[])
        : [];
  let previousRole: string | undefined;
  for (const [messageIndex, raw] of messages.entries()) {
    if (raw === null || typeof raw !== 'object') return `messages.${messageIndex}: Input should be an object`;
    const message = raw as Record<string, unknown>;
    const role = message.role;
    if (role !== 'user' && role !== 'assistant') {
      return `messages.${messageIndex}.role: Input should be 'user' or 'assistant'`;
    }
    if (options.strictRoles) {
      if (messageIndex === 0 && role !== 'user') return 'messages: first message must use the "user" role';
      if (role === previousRole) {
        return `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`;
      }
    }
    previousRole = role;
    const blocks = blocksOf(message);
    const isFinalAssistant = messageIndex === messages.length - 1 && role === 'assistant';
    // A prefilled answer (a final assistant turn) may not end with whitespace: the model would start mid-token.
    const lastBlock = blocks.at(-1);
    if (isFinalAssistant && lastBlock?.type === 'text' && /\s$/.test(String(lastBlock.text))) {
      return 'messages: final assistant content cannot end with trailing whitespace';
    }
    if (blocks.length === 0 && !isFinalAssistant) {
      return `messages.${messageIndex}: all messages must have non-empty content except for the optional final assistant message`;
    }
    for (const [blockIndex, block] of blocks.entries()) {
      const at = `messages.${messageIndex}.content.${blockIndex}`;
      if (block.type === 'text' && (typeof block.text !== 'string' || block.text === '')) {
        return 'messages: text content blocks must be non-empty';
      }
      if (block.type === 'tool_use') {
        // Wording ours.
        if (role !== 'assistant') return `${at}: tool_use blocks can only be in assistant messages`;
        if (typeof block.id !== 'string' || !toolUseIdPattern.test(block.id)) {
          return `${at}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`;
        }
      }
      if (block.type === 'thinking') {
        // Wording ours.
        if (role !== 'assistant') return `${at}: thinking blocks can only be in assistant messages`;
        if (typeof block.thinking !== 'string') return `${at}.thinking.thinking: Field required`;
        if (typeof block.signature !== 'string' || block.signature === '') {
          return `${at}.thinking.signature: Field required`;
        }
      }
      if (block.type === 'image') {
        const source = block.source as Record<string, unknown> | undefined;
        if (source?.type === 'base64' && !imageMediaTypes.includes(String(source.media_type))) {
          return `${at}.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`;
        }
      }
      if (block.type === 'redacted_thinking' && (typeof block.data !== 'string' || block.data === '')) {
        return `${at}.redacted_thinking.data: Field required`;
      }
    }
  }
  // With thinking on, the assistant message whose tool calls the last user message answers must start with its
  // thinking: a history translated from another provider has none, and the API refuses it.
  const last = messages.at(-1) as Record<string, unknown>;
  const beforeLast = messages.at(-2) as Record<string, unknown> | undefined;
  if (
    thinkingOn &&
    last.role === 'user' &&
    blocksOf(last).some((block) => block.type === 'tool_result') &&
    beforeLast?.role === 'assistant'
  ) {
    const first = blocksOf(beforeLast)[0];
    if (first !== undefined && first.type !== 'thinking' && first.type !== 'redacted_thinking') {
      return `messages.${messages.length - 2}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${String(first.type)}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`;
    }
  }
  // Pairing: a tool_result answers a tool_use of the message just before; a tool_use is answered just after.
  for (const [messageIndex, raw] of messages.entries()) {
    const message = raw as Record<string, unknown>;
    const blocks = blocksOf(message);
    if (message.role === 'user') {
      const previous = messageIndex > 0 ? (messages[messageIndex - 1] as Record<string, unknown>) : undefined;
      const offered = new Set(
        previous?.role === 'assistant'
          ? blocksOf(previous)
              .filter((block) => block.type === 'tool_use')
              .map((block) => block.id)
          : [],
      );
      for (const [blockIndex, block] of blocks.entries()) {
        if (block.type !== 'tool_result') continue;
        if (!offered.has(block.tool_use_id)) {
          return `messages.${messageIndex}.content.${blockIndex}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${String(block.tool_use_id)}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`;
        }
      }
    } else {
      const calls = blocks.filter((block) => block.type === 'tool_use').map((block) => String(block.id));
      const next = messages[messageIndex + 1] as Record<string, unknown> | undefined;
      if (calls.length === 0 || next === undefined) continue;
      const answered = new Set(
        blocksOf(next)
          .filter((block) => block.type === 'tool_result')
          .map((block) => block.tool_use_id),
      );
      const missing = calls.filter((id) => !answered.has(id));
      if (next.role !== 'user' || missing.length > 0) {
        return `messages.${messageIndex + 1}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${(next.role === 'user' ? missing : calls).join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`;
      }
    }
  }
  return undefined;
}

interface MessageParts {
  body: Record<string, unknown>;
  blocks: Record<string, unknown>[];
  /** The tool calls' argument text as streamed (possibly truncated). */
  toolArguments: string[];
  usage: {
    input_tokens: number;
    cache_creation_input_tokens: number;
    cache_read_input_tokens: number;
    output_tokens: number;
  };
  stopReason: string;
}

function messageObject(
  reply: ContentReply,
  identity: { id: string; model: string; promptTokens: number; index: number },
): MessageParts {
  const blocks: Record<string, unknown>[] = [];
  const toolArguments: string[] = [];
  if (reply.redactedThinking !== undefined) blocks.push({ type: 'redacted_thinking', data: reply.redactedThinking });
  if (reply.thinking !== undefined) {
    blocks.push({ type: 'thinking', thinking: reply.thinking.text, signature: reply.thinking.signature });
  }
  if (reply.text !== undefined && reply.text !== '') blocks.push({ type: 'text', text: reply.text });
  for (const [callIndex, call] of (reply.toolCalls ?? []).entries()) {
    const text = argumentsText(call.arguments);
    const sent = reply.malformedToolJson === true ? truncatedJson(text) : text;
    toolArguments.push(sent);
    let input: unknown = sent;
    try {
      input = JSON.parse(sent);
    } catch {
      // Invalid JSON on purpose: the non-streaming body carries it as a string, which breaks Anthropic's schema.
    }
    blocks.push({
      type: 'tool_use',
      id: call.id ?? `toolu_fake${String(identity.index).padStart(4, '0')}_${callIndex}`,
      name: call.name,
      input,
    });
  }
  const outputText = blocks.map((block) => JSON.stringify(block)).join('');
  const usage = {
    input_tokens: reply.usage?.input ?? identity.promptTokens,
    cache_creation_input_tokens: reply.usage?.cacheWrite ?? 0,
    cache_read_input_tokens: reply.usage?.cacheRead ?? 0,
    output_tokens: reply.usage?.output ?? roughTokens(outputText),
  };
  const stopReason = reply.stopReason ?? ((reply.toolCalls ?? []).length > 0 ? 'tool_use' : 'end_turn');
  return {
    body: {
      id: identity.id,
      type: 'message',
      role: 'assistant',
      model: identity.model,
      content: blocks,
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    },
    blocks,
    toolArguments,
    usage,
    stopReason,
  };
}

/** The events of a streamed message, in the order the API sends them. */
function streamEvents(message: MessageParts, reply: ContentReply): string[] {
  const events: object[] = [];
  const { body, usage } = message;
  events.push({
    type: 'message_start',
    message: { ...body, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
  });
  let toolIndex = 0;
  for (const [index, block] of message.blocks.entries()) {
    if (block.type === 'redacted_thinking') {
      events.push({ type: 'content_block_start', index, content_block: block });
    } else if (block.type === 'thinking') {
      events.push({
        type: 'content_block_start',
        index,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      });
      for (const piece of splitIntoWords(String(block.thinking))) {
        events.push({ type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: piece } });
      }
      events.push({
        type: 'content_block_delta',
        index,
        delta: { type: 'signature_delta', signature: block.signature },
      });
    } else if (block.type === 'text') {
      events.push({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
      for (const piece of splitIntoWords(String(block.text))) {
        events.push({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      }
    } else if (block.type === 'tool_use') {
      events.push({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: '' } });
      for (const piece of splitIntoPieces(message.toolArguments[toolIndex] ?? '')) {
        events.push({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
      toolIndex++;
    }
    events.push({ type: 'content_block_stop', index });
    // The API sends a ping soon after the first block starts; clients must ignore it.
    if (index === 0) events.splice(2, 0, { type: 'ping' });
  }
  if (message.blocks.length === 0) events.push({ type: 'ping' });
  events.push({
    type: 'message_delta',
    delta: { stop_reason: message.stopReason, stop_sequence: null },
    usage,
  });
  events.push({ type: 'message_stop' });
  if (reply.streamError !== undefined) {
    const after = Math.min(reply.streamError.afterEvents ?? 1, events.length);
    const error = {
      type: 'error',
      error: { type: reply.streamError.type ?? 'overloaded_error', message: reply.streamError.message ?? 'Overloaded' },
    };
    return [...events.slice(0, after), error].map(anthropicEventText);
  }
  return events.map(anthropicEventText);
}

import { scrubSecrets } from '@assistant/errors';
import type OpenAI from 'openai';
import { type ModelCapabilities, modelCapabilities } from './capabilities.ts';
import type { ChatMessage, ChatModel, ChatRequest, ChatResponse, ProviderKind, TokenUsage } from './chat-types.ts';
import { LlmContextTooLongError, LlmRequestError } from './llm-errors.ts';
import type { ModelGate } from './model-gate.ts';
import { historyForProvider } from './providers/provider-switch.ts';
import {
  exponentialDelayMs,
  maxRetryAfterMs,
  parseRetryAfterMs,
  retryingChat,
} from './providers/retrying-chat-model.ts';
import { parseReactReply, reactMessages } from './react-strategy.ts';
import { ReplayMissError } from './record-replay/record-replay-fetch.ts';

export interface OpenAiChatModelOptions {
  /** The profile's name, for logs and errors. */
  name: string;
  /** `openai` for OpenAI itself; anything else speaking its chat API is `openai-compatible`. @default 'openai-compatible' */
  provider?: Extract<ProviderKind, 'openai' | 'openai-compatible'>;
  baseUrl: string;
  model: string;
  /** The token, revealed; local endpoints need none. */
  token?: string | undefined;
  parameters?: Record<string, unknown>;
  timeoutMs?: number;
  /**
   * Retries after 429, 5xx or a broken connection. With a `gate`, the last unavailability failure throws the gate's
   * ModelUnavailableError rather than LlmRequestError. @default 4
   */
  maxRetries?: number;
  capabilities?: { tools?: boolean; jsonSchema?: boolean; contextWindow?: number };
  /** The fetch the client uses: the record/replay cache, or a test's. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** Called with the server-reported usage of every successful request. */
  onUsage?: (usage: TokenUsage, model: string) => void;
  /**
   * Called once per successful request with how long it took (sending to the last streamed word, retries included)
   * and its usage when the server reported one: the History page's model latency and tokens.
   */
  onCall?: (call: { model: string; latencyMs: number; usage?: TokenUsage }) => void;
  /** Waits between retries; tests shorten it. @default setTimeout honouring the signal */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * The profile's gate, shared by every call in the process: each request waits for its permit and reports its
   * outcome there, and a retry after unavailability waits on the gate's breaker instead of its own backoff.
   * @default none: every request goes out at once and retries keep their own backoff
   */
  gate?: ModelGate;
}

type OpenAiSdk = typeof import('openai');
/**
 * The `openai` package, imported on the first request rather than at start: it is the largest library a worker
 * loads (about 30 MB resident), and most tasks never call a model. Its error classes are recognised through it,
 * which is sound: none of its errors can exist before it is loaded.
 */
let sdk: OpenAiSdk | undefined;
let sdkLoading: Promise<OpenAiSdk> | undefined;
async function loadSdk(): Promise<OpenAiSdk> {
  sdkLoading ??= import('openai').then((loaded) => {
    sdk = loaded;
    return loaded;
  });
  return sdkLoading;
}

/**
 * A named profile as a {@link ChatModel}, over the official `openai` client. Its own retries are off: ours honour
 * `retry-after`, cap the wait, and never retry a cancellation or an error retrying cannot fix. A model without
 * native tool calls gets them through a prompted ReAct format.
 */
export function createOpenAiChatModel(
  options: OpenAiChatModelOptions,
): ChatModel & { capabilities: ModelCapabilities } {
  const capabilities = modelCapabilities(options.model, options.capabilities);
  let client: OpenAI | undefined;
  const clientOf = async (): Promise<OpenAI> => {
    const { default: OpenAiClient } = await loadSdk();
    client ??= new OpenAiClient({
      baseURL: options.baseUrl,
      // Local servers ignore the key, but the client insists on one.
      apiKey: options.token ?? 'not-needed',
      maxRetries: 0,
      timeout: options.timeoutMs ?? 120_000,
      ...(options.fetch ? { fetch: options.fetch } : {}),
    });
    return client;
  };

  const send = async (
    request: ChatRequest,
    signal: AbortSignal | undefined,
    onDelta: ((text: string) => void) | undefined,
  ): Promise<ChatResponse> => {
    const native = capabilities.tools || !request.tools || request.tools.length === 0;
    // A history another provider wrote (a profile switch): its reasoning, signatures and odd tool-call ids adapted.
    const history = historyForProvider(options.provider ?? 'openai-compatible', request.messages);
    const messages = native ? history : reactMessages(history, request.tools ?? []);
    const body: Record<string, unknown> = {
      model: options.model,
      messages: messages.map(toOpenAi),
      ...options.parameters,
      ...request.parameters,
    };
    if (native && request.tools && request.tools.length > 0) {
      body.tools = request.tools.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      }));
    }
    if (request.responseFormat && capabilities.jsonSchema) {
      body.response_format = {
        type: 'json_schema',
        json_schema: { name: request.responseFormat.name, schema: request.responseFormat.schema, strict: false },
      };
    }
    const startedMs = performance.now();
    // ReAct replies are never streamed: their text is the tool-call format, not words for a reader.
    const completion =
      onDelta !== undefined && native
        ? await readStream(await clientOf(), body, signal, onDelta, options.timeoutMs ?? 120_000)
        : await (await clientOf()).chat.completions.create(
            body as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming,
            signal ? { signal } : {},
          );
    const choice = completion.choices[0];
    if (!choice) throw new LlmRequestError(`${options.name}: the server answered with no choices`);
    const content = choice.message.content ?? null;
    const usage = completion.usage ? usageOf(completion.usage) : undefined;
    if (usage) options.onUsage?.(usage, completion.model);
    options.onCall?.({
      model: completion.model,
      latencyMs: performance.now() - startedMs,
      ...(usage ? { usage } : {}),
    });
    const toolCalls = native
      ? (choice.message.tool_calls ?? []).flatMap((call) =>
          call.type === 'function'
            ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }]
            : [],
        )
      : [];
    const reply = native ? { content, toolCalls } : parseReactReply(content ?? '', request.tools ?? []);
    return {
      message: { role: 'assistant', content: reply.content, toolCalls: reply.toolCalls },
      finishReason: reply.toolCalls.length > 0 ? 'tool_calls' : (choice.finish_reason ?? null),
      ...(usage ? { usage } : {}),
      model: completion.model,
    };
  };

  return {
    name: options.name,
    model: options.model,
    provider: options.provider ?? 'openai-compatible',
    contextWindow: capabilities.contextWindow,
    capabilities,
    chat: retryingChat({
      name: options.name,
      maxRetries: options.maxRetries,
      sleep: options.sleep,
      gate: options.gate,
      send,
      classify: (error, attempt) => ({
        aborted: sdk !== undefined && error instanceof sdk.APIUserAbortError,
        retryDelayMs: retryDelay(error, attempt),
        unavailable: isUnavailable(error),
        retryAfterMs: retryAfterMs(error),
      }),
      failure: (error, attempt) => failure(options, error, attempt),
    }),
  };
}

/** How long to wait before retrying, or undefined when retrying cannot help. */
export function retryDelay(error: unknown, attempt: number): number | undefined {
  // A replay miss arrives wrapped as a connection error; retrying cannot make a recording appear.
  if (error instanceof Error && error.cause instanceof ReplayMissError) return undefined;
  const exponential = exponentialDelayMs(attempt);
  if (sdk !== undefined && error instanceof sdk.APIConnectionError) return exponential;
  if (sdk !== undefined && error instanceof sdk.APIError) {
    const status = error.status;
    if (status === undefined || !(status === 408 || status === 409 || status === 429 || status >= 500))
      return undefined;
    const waitMs = parseRetryAfterMs(error.headers?.get('retry-after'));
    return waitMs === undefined ? exponential : Math.min(maxRetryAfterMs, waitMs);
  }
  // A body that is not JSON, a reset socket mid-read, a stream cut short: worth one more try like a connection error.
  if (error instanceof StreamInterruptedError) return exponential;
  if (error instanceof SyntaxError || (error instanceof TypeError && /fetch|network|socket/i.test(error.message)))
    return exponential;
  return undefined;
}

/**
 * Whether the endpoint itself is unavailable: no connection, a timeout, 408, 429, a 5xx, a stream cut short. Not
 * a 409 or a body that is not JSON (retried, but the server did answer), nor anything retrying cannot fix.
 */
function isUnavailable(error: unknown): boolean {
  if (error instanceof Error && error.cause instanceof ReplayMissError) return false;
  if (sdk !== undefined && error instanceof sdk.APIConnectionError) return true;
  if (sdk !== undefined && error instanceof sdk.APIError) {
    const status = error.status;
    return status !== undefined && (status === 408 || status === 429 || status >= 500);
  }
  if (error instanceof StreamInterruptedError) return true;
  return error instanceof TypeError && /fetch|network|socket/i.test(error.message);
}

/** A 429's or 503's `retry-after`, in milliseconds, uncapped (the gate caps it). */
function retryAfterMs(error: unknown): number | undefined {
  if (sdk === undefined || !(error instanceof sdk.APIError) || !(error.status === 429 || error.status === 503)) {
    return undefined;
  }
  return parseRetryAfterMs(error.headers?.get('retry-after'));
}

/** A streamed reply that broke off before its finish reason: the connection dropped or the server gave up. */
class StreamInterruptedError extends Error {
  override name = 'StreamInterruptedError';
}

/** What {@link readStream} assembles: the parts of a `ChatCompletion` the rest of `send` reads. */
interface AssembledCompletion {
  model: string;
  choices: {
    message: { content: string | null; tool_calls: OpenAI.ChatCompletionMessageFunctionToolCall[] };
    finish_reason: string | null;
  }[];
  usage?: OpenAI.CompletionUsage | undefined;
}

/**
 * Sends the request as a stream (`stream: true` with usage in the last chunk), hands each piece of content to
 * `onDelta` as it arrives, and assembles the pieces into what the non-streaming answer would hold: the content, the
 * tool calls (joined by their index), the finish reason, the usage and the model. The client's timeout ends when the
 * answer starts; after that, a stream that sends nothing for `idleTimeoutMs` is given up as broken off (and retried).
 */
async function readStream(
  client: OpenAI,
  body: Record<string, unknown>,
  signal: AbortSignal | undefined,
  onDelta: (text: string) => void,
  idleTimeoutMs: number,
): Promise<AssembledCompletion> {
  const idle = new AbortController();
  const stream = await client.chat.completions.create(
    {
      ...body,
      stream: true,
      stream_options: { include_usage: true },
    } as unknown as OpenAI.ChatCompletionCreateParamsStreaming,
    { signal: signal === undefined ? idle.signal : AbortSignal.any([signal, idle.signal]) },
  );
  // Armed only once the answer has started, so an idle abort is never taken for the caller's cancellation.
  const timer = setTimeout(() => idle.abort(), idleTimeoutMs);
  let model = '';
  let content: string | null = null;
  let finishReason: string | null = null;
  let usage: OpenAI.CompletionUsage | undefined;
  const calls: { id: string; name: string; arguments: string }[] = [];
  try {
    for await (const chunk of stream) {
      timer.refresh();
      if (typeof chunk.model === 'string' && chunk.model !== '') model = chunk.model;
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices?.[0];
      if (choice === undefined) continue;
      const piece = choice.delta?.content;
      if (typeof piece === 'string') {
        content = (content ?? '') + piece;
        if (piece !== '' && !signal?.aborted) onDelta(piece);
      }
      for (const call of choice.delta?.tool_calls ?? []) {
        calls[call.index] ??= { id: '', name: '', arguments: '' };
        const slot = calls[call.index];
        if (slot === undefined) continue;
        if (call.id) slot.id = call.id;
        if (call.function?.name) slot.name = call.function.name;
        if (call.function?.arguments) slot.arguments += call.function.arguments;
      }
      if (choice.finish_reason) finishReason = choice.finish_reason;
    }
  } catch (error) {
    // The server's own error events, a malformed event and an abort keep their meaning; anything else that breaks
    // the read (a reset socket: undici's "terminated") is a stream cut short.
    if (signal?.aborted) throw error;
    if (idle.signal.aborted) throw idleFailure(idleTimeoutMs);
    if (error instanceof SyntaxError || (sdk !== undefined && error instanceof sdk.APIError)) throw error;
    throw new StreamInterruptedError(`the streamed reply broke off: ${describe(error)}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
  // The client ends the iteration quietly when the request is aborted.
  signal?.throwIfAborted();
  if (idle.signal.aborted) throw idleFailure(idleTimeoutMs);
  if (finishReason === null) throw new StreamInterruptedError('the streamed reply ended before its finish reason');
  return {
    model,
    choices: [
      {
        message: {
          content,
          tool_calls: calls
            .filter((call) => call !== undefined)
            .map((call) => ({
              id: call.id,
              type: 'function',
              function: { name: call.name, arguments: call.arguments },
            })),
        },
        finish_reason: finishReason,
      },
    ],
    usage,
  };
}

function idleFailure(idleTimeoutMs: number): StreamInterruptedError {
  return new StreamInterruptedError(`the streamed reply sent nothing for ${idleTimeoutMs} ms`);
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error.message}${cause}`;
}

/** OpenAI's `context_length_exceeded`, and the wording of servers that copy its API without its codes. */
function isContextTooLong(error: InstanceType<OpenAiSdk['APIError']>): boolean {
  return (
    error.status === 400 &&
    (error.code === 'context_length_exceeded' || /context length|context window|too many tokens/i.test(error.message))
  );
}

function failure(options: OpenAiChatModelOptions, error: unknown, attempt: number): Error {
  if (error instanceof Error && error.cause instanceof ReplayMissError) return error.cause as ReplayMissError;
  const status = sdk !== undefined && error instanceof sdk.APIError ? error.status : undefined;
  if (sdk !== undefined && error instanceof sdk.APIError && isContextTooLong(error)) {
    return new LlmContextTooLongError(
      `LLM profile ${options.name} (${options.model}): the request is longer than the model's context window: ${scrubSecrets(error.message.split('\n')[0] ?? '')}`,
      { status, cause: error },
    );
  }
  // The body of an error answer is the server's text: a proxy may echo the Authorization header in it.
  const detail = scrubSecrets((error instanceof Error ? error.message.split('\n')[0] : String(error)) ?? '');
  const tries = attempt === 0 ? '' : ` after ${attempt + 1} attempts`;
  return new LlmRequestError(
    `LLM profile ${options.name} (${options.model} at ${options.baseUrl}) failed${tries}: ${detail}`,
    {
      status,
      cause: error,
      ...(status === 401 || status === 403
        ? { hint: "check the profile's `api_key:` (formerly `token:`), a secret in secrets.yaml" }
        : status === 404
          ? { hint: 'check `base_url` (it usually ends in /v1) and that the model exists there' }
          : sdk !== undefined && error instanceof sdk.APIConnectionError
            ? { hint: 'is the server running and reachable? `assistant doctor` checks every profile' }
            : {}),
    },
  );
}

/** OpenAI's usage in our terms: cached prompt tokens (its automatic prefix cache) and reasoning tokens when reported. */
function usageOf(usage: OpenAI.CompletionUsage): TokenUsage {
  const cached = usage.prompt_tokens_details?.cached_tokens;
  const reasoning = usage.completion_tokens_details?.reasoning_tokens;
  return {
    promptTokens: usage.prompt_tokens,
    completionTokens: usage.completion_tokens,
    totalTokens: usage.total_tokens,
    ...(typeof cached === 'number' && cached > 0 ? { cachedPromptTokens: cached } : {}),
    ...(typeof reasoning === 'number' && reasoning > 0 ? { reasoningTokens: reasoning } : {}),
  };
}

function toOpenAi(message: ChatMessage): Record<string, unknown> {
  switch (message.role) {
    case 'system':
      return { role: message.role, content: message.content };
    case 'user':
      // Images as `image_url` parts (a data URL for inline bytes); a message without images stays a plain string.
      return message.images && message.images.length > 0
        ? {
            role: 'user',
            content: [
              ...(message.content === '' ? [] : [{ type: 'text', text: message.content }]),
              ...message.images.map((image) => ({
                type: 'image_url',
                image_url: { url: image.url ?? `data:${image.mediaType};base64,${image.data ?? ''}` },
              })),
            ],
          }
        : { role: message.role, content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls && message.toolCalls.length > 0
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  }
}

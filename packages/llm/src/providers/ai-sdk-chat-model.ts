import type { LanguageModelV4, LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { scrubSecrets } from '@assistant/errors';
import { type ModelCapabilities, modelCapabilities } from '../capabilities.ts';
import type { ChatModel, ChatRequest, ChatResponse } from '../chat-types.ts';
import {
  LlmContextTooLongError,
  LlmRequestError,
  LlmResponseMalformedError,
  LlmSchemaUnsupportedError,
} from '../llm-errors.ts';
import type { ModelGate } from '../model-gate.ts';
import { parseReactReply, reactMessages } from '../react-strategy.ts';
import { ReplayMissError } from '../record-replay/record-replay-fetch.ts';
import { type AiSdkProvider, excerpt, StreamAssembler, toCallOptions, toChatResponse } from './ai-sdk-translate.ts';
import {
  type ErrorVerdict,
  exponentialDelayMs,
  maxRetryAfterMs,
  parseRetryAfterMs,
  retryingChat,
} from './retrying-chat-model.ts';

export interface AiSdkChatModelOptions {
  provider: AiSdkProvider;
  /** The profile's name, for errors. */
  name: string;
  model: string;
  baseUrl: string;
  apiKey?: string | undefined;
  parameters?: Record<string, unknown> | undefined;
  /** Until the answer starts, and then the longest silence inside a stream. @default 120000 */
  timeoutMs?: number | undefined;
  maxRetries?: number | undefined;
  capabilities?: { tools?: boolean; jsonSchema?: boolean; contextWindow?: number } | undefined;
  promptCache?: boolean | undefined;
  fetch?: typeof fetch | undefined;
  onUsage?: ((usage: import('../chat-types.ts').TokenUsage, model: string) => void) | undefined;
  onCall?:
    | ((call: { model: string; latencyMs: number; usage?: import('../chat-types.ts').TokenUsage }) => void)
    | undefined;
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  gate?: ModelGate | undefined;
}

/**
 * The AI SDK's provider packages, imported on a profile's first request: a worker that never calls Claude or Gemini
 * never loads them (see docs/decisions/0033).
 */
async function languageModelOf(options: AiSdkChatModelOptions): Promise<LanguageModelV4> {
  const common = {
    baseURL: options.baseUrl,
    // The SDK reads an environment variable when no key is given; a placeholder keeps it from doing so, and the
    // provider answers 401, which names the profile's `api_key`.
    apiKey: options.apiKey ?? 'missing-api-key',
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  if (options.provider === 'anthropic') {
    const { createAnthropic } = await import('@ai-sdk/anthropic');
    return createAnthropic(common).languageModel(options.model);
  }
  const { createGoogleGenerativeAI } = await import('@ai-sdk/google');
  return createGoogleGenerativeAI(common).languageModel(options.model);
}

/** An attempt that got no answer in time, or a stream that went silent: the endpoint is not answering. */
class AttemptTimedOutError extends Error {
  override name = 'AttemptTimedOutError';
}

/** A stream that ended before its finish: retried like a dropped connection, then reported as malformed. */
class StreamCutError extends LlmResponseMalformedError {}

const providerTitles: Record<AiSdkProvider, string> = { anthropic: 'Anthropic', google: 'Gemini' };

/**
 * A profile on Anthropic or Gemini as a {@link ChatModel}: the AI SDK provider package builds the request and reads
 * the answer (LanguageModelV4 `doGenerate` / `doStream`, without the `ai` core), our loop does the rest (gate,
 * retries, `retry-after`, the breaker). The SDK itself never retries: the provider packages have no retry loop of
 * their own (it lives in `ai` core, which is not used).
 */
export function createAiSdkChatModel(options: AiSdkChatModelOptions): ChatModel & { capabilities: ModelCapabilities } {
  const capabilities = modelCapabilities(options.model, {
    // Claude and Gemini models all call tools and take schemas; a profile's `capabilities:` still wins.
    tools: true,
    jsonSchema: true,
    contextWindow: options.provider === 'anthropic' ? 200_000 : 1_000_000,
    ...options.capabilities,
  });
  const timeoutMs = options.timeoutMs ?? 120_000;
  const title = providerTitles[options.provider];
  let modelLoading: Promise<LanguageModelV4> | undefined;

  const send = async (
    request: ChatRequest,
    signal: AbortSignal | undefined,
    onDelta: ((text: string) => void) | undefined,
  ): Promise<ChatResponse> => {
    modelLoading ??= languageModelOf(options);
    const languageModel = await modelLoading;
    const native = capabilities.tools || !request.tools || request.tools.length === 0;
    const effective: ChatRequest = native
      ? request
      : { ...request, messages: reactMessages(request.messages, request.tools ?? []), tools: [] };
    const plan = toCallOptions(effective, {
      provider: options.provider,
      ...(options.promptCache === undefined ? {} : { promptCache: options.promptCache }),
      parameters: { ...options.parameters, ...request.parameters },
    });
    const startedMs = performance.now();
    const timeout = new AbortController();
    const abortSignal = signal === undefined ? timeout.signal : AbortSignal.any([signal, timeout.signal]);
    const timer = setTimeout(() => timeout.abort(new AttemptTimedOutError(`no answer in ${timeoutMs} ms`)), timeoutMs);
    let response: ChatResponse;
    try {
      if (onDelta !== undefined && native) {
        const { stream } = await languageModel.doStream({ ...plan.call, abortSignal });
        // The answer has started: from here the timer measures silence between parts.
        const assembler = new StreamAssembler((text) => {
          if (!signal?.aborted) onDelta(text);
        });
        await readParts(stream, (part) => {
          timer.refresh();
          assembler.add(part);
        }).catch((error: unknown) => {
          // The provider's own error events keep their meaning; anything else that breaks the read (a reset
          // socket: undici's "terminated") is a stream cut short.
          if (signal?.aborted || timeout.signal.aborted || shapeOf(error) !== undefined) throw error;
          if (error instanceof LlmResponseMalformedError) throw error;
          throw new StreamCutError(
            `${title}: the streamed reply broke off: ${describe(error)}`,
            partialText(assembler),
            { cause: error },
          );
        });
        signal?.throwIfAborted();
        if (assembler.finish === undefined || assembler.finish.finishReason.unified === 'interrupted') {
          throw new StreamCutError(`${title}: the streamed reply ended before its finish`, partialText(assembler));
        }
        response = toChatResponse(
          {
            content: assembler.content,
            finishReason: assembler.finish.finishReason,
            usage: assembler.finish.usage,
            modelId: assembler.modelId,
          },
          { provider: options.provider, model: options.model, answerTool: plan.answerTool },
        );
      } else {
        const result = await languageModel.doGenerate({ ...plan.call, abortSignal });
        response = toChatResponse(
          {
            content: result.content,
            finishReason: result.finishReason,
            usage: result.usage,
            modelId: result.response?.modelId,
          },
          { provider: options.provider, model: options.model, answerTool: plan.answerTool },
        );
      }
    } catch (error) {
      if (timeout.signal.aborted && !signal?.aborted) throw timeout.signal.reason;
      // A 200 whose body broke off (the SDK's "Failed to process successful response", a reset socket under it).
      const status = shapeOf(error)?.statusCode;
      if (status !== undefined && status >= 200 && status < 300) {
        throw new StreamCutError(`${title}: the reply broke off: ${describe(error)}`, '', { cause: error });
      }
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (!native) {
      const reply = parseReactReply(response.message.content ?? '', request.tools ?? []);
      response = {
        ...response,
        message: { role: 'assistant', content: reply.content, toolCalls: reply.toolCalls },
        finishReason: reply.toolCalls.length > 0 ? 'tool_calls' : response.finishReason,
      };
    }
    if (response.usage) options.onUsage?.(response.usage, response.model);
    options.onCall?.({
      model: response.model,
      latencyMs: performance.now() - startedMs,
      ...(response.usage ? { usage: response.usage } : {}),
    });
    return response;
  };

  return {
    name: options.name,
    model: options.model,
    provider: options.provider,
    contextWindow: capabilities.contextWindow,
    capabilities,
    chat: retryingChat({
      name: options.name,
      maxRetries: options.maxRetries,
      sleep: options.sleep,
      gate: options.gate,
      send,
      classify: classifyAiSdkError,
      failure: (error, attempt) => aiSdkFailure(options, error, attempt),
    }),
  };
}

/** The text a cut stream had delivered, as the malformed answer's excerpt (scrubbed, shortened). */
function partialText(assembler: StreamAssembler): string {
  return excerpt(assembler.content.map((part) => (part.type === 'text' ? part.text : '')).join(''));
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return scrubSecrets(`${error.message}${cause}`);
}

async function readParts(
  stream: ReadableStream<LanguageModelV4StreamPart>,
  onPart: (part: LanguageModelV4StreamPart) => void,
): Promise<void> {
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      onPart(value);
    }
  } finally {
    reader.releaseLock();
  }
}

/** What an AI SDK error says: an APICallError, or a provider's stream error part; both carry `statusCode`. */
interface ProviderErrorShape {
  statusCode?: number;
  responseHeaders?: Record<string, string>;
  responseBody?: string;
  message?: string;
  type?: string;
  isRetryable?: boolean;
  data?: unknown;
}

function shapeOf(error: unknown): ProviderErrorShape | undefined {
  if (error === null || typeof error !== 'object') return undefined;
  const shape = error as ProviderErrorShape;
  const named = error instanceof Error && (error.name === 'AI_APICallError' || 'responseBody' in error);
  return named || typeof shape.statusCode === 'number' ? shape : undefined;
}

function replayMissIn(error: unknown): ReplayMissError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current instanceof Error; depth += 1) {
    if (current instanceof ReplayMissError) return current;
    current = current.cause;
  }
  return undefined;
}

/** Anthropic 400 "prompt is too long", Gemini 400 "input token count … exceeds the maximum". */
function isContextTooLong(shape: ProviderErrorShape): boolean {
  const text = `${shape.message ?? ''} ${shape.responseBody ?? ''}`;
  return (
    (shape.statusCode === 400 || shape.statusCode === 413) &&
    /prompt is too long|input token count.*exceeds|context_length_exceeded|context window|too many tokens/is.test(text)
  );
}

/** Gemini's 429 carries `RetryInfo` in its body: `"retryDelay": "12s"`. */
function bodyRetryDelayMs(body: string | undefined): number | undefined {
  const match = body === undefined ? null : /"retryDelay"\s*:\s*"(\d+(?:\.\d+)?)s"/.exec(body);
  return match?.[1] === undefined ? undefined : Number(match[1]) * 1_000;
}

/** How the retry loop treats an error from the AI SDK (or from our own reading of its answer). */
function classifyAiSdkError(error: unknown, attempt: number): ErrorVerdict {
  const exponential = exponentialDelayMs(attempt);
  if (replayMissIn(error)) return { retryDelayMs: undefined, unavailable: false };
  if (error instanceof StreamCutError || error instanceof AttemptTimedOutError) {
    return { retryDelayMs: exponential, unavailable: true };
  }
  if (error instanceof LlmResponseMalformedError || error instanceof LlmSchemaUnsupportedError) {
    return { retryDelayMs: undefined, unavailable: false };
  }
  if (error instanceof Error && error.name === 'AbortError')
    return { aborted: true, retryDelayMs: undefined, unavailable: false };
  const shape = shapeOf(error);
  if (shape !== undefined) {
    const status = shape.statusCode;
    if (status === undefined) {
      // No answer at all: connection refused or reset (the SDK's "Cannot connect to API").
      return { retryDelayMs: exponential, unavailable: true };
    }
    if (isContextTooLong(shape)) return { retryDelayMs: undefined, unavailable: false };
    const unavailable = status === 408 || status === 429 || status >= 500;
    if (!unavailable && status !== 409) return { retryDelayMs: undefined, unavailable: false };
    const retryAfterMs =
      parseRetryAfterMs(shape.responseHeaders?.['retry-after']) ?? bodyRetryDelayMs(shape.responseBody);
    return {
      retryDelayMs: retryAfterMs === undefined ? exponential : Math.min(maxRetryAfterMs, retryAfterMs),
      unavailable,
      retryAfterMs,
    };
  }
  // A reset socket mid-read ("terminated"), a fetch that failed outright.
  if (error instanceof TypeError && /fetch|network|socket|terminated/i.test(error.message)) {
    return { retryDelayMs: exponential, unavailable: true };
  }
  return { retryDelayMs: undefined, unavailable: false };
}

function aiSdkFailure(options: AiSdkChatModelOptions, error: unknown, attempt: number): Error {
  const miss = replayMissIn(error);
  if (miss) return miss;
  if (
    error instanceof LlmResponseMalformedError ||
    error instanceof LlmSchemaUnsupportedError ||
    error instanceof LlmContextTooLongError
  ) {
    return error;
  }
  const shape = shapeOf(error);
  const status = shape?.statusCode;
  const where = `LLM profile ${options.name} (${providerTitles[options.provider]} ${options.model} at ${options.baseUrl})`;
  // A provider's error body may echo the request's key: scrubbed before it is shown anywhere.
  const detail = scrubSecrets(
    (shape?.message ?? (error instanceof Error ? error.message : String(error))).split('\n')[0] ?? '',
  );
  if (shape !== undefined && isContextTooLong(shape)) {
    return new LlmContextTooLongError(`${where}: the request is longer than the model's context window: ${detail}`, {
      status,
      cause: error,
    });
  }
  const tries = attempt === 0 ? '' : ` after ${attempt + 1} attempts`;
  // Gemini answers a wrong key with 400 API_KEY_INVALID, not 401.
  const text = `${shape?.message ?? ''} ${shape?.responseBody ?? ''}`;
  return new LlmRequestError(`${where} failed${tries}: ${detail}`, {
    status,
    cause: error,
    ...(status === 401 || status === 403 || (status === 400 && /API_KEY_INVALID|API key not valid/i.test(text))
      ? { hint: "check the profile's `api_key:` (a secret in secrets.yaml) and that it is a key for this provider" }
      : status === 404
        ? { hint: 'check `model` (the provider does not know it) and `base_url`' }
        : shape !== undefined && status === undefined
          ? { hint: 'is the endpoint reachable? `assistant doctor` checks every profile' }
          : {}),
  });
}

/**
 * The chat shapes the rest of Assistant speaks: a small, provider-neutral subset of the OpenAI chat API. Agent loops
 * and tests depend on these, not on the `openai` package, so a fake model is a few lines.
 */

/**
 * The wire format a profile speaks (`llms.<name>.provider`). `openai-compatible` is any server with the OpenAI chat
 * completions API (Ollama, llama.cpp, vLLM, proxies); `openai` is OpenAI itself.
 */
export const providerKinds = ['openai-compatible', 'openai', 'anthropic', 'google'] as const;
export type ProviderKind = (typeof providerKinds)[number];

/**
 * One message of a conversation, the one schema every provider adapter translates to and from. Tool results answer a
 * tool call by its id. `at` is when the message was written (ISO 8601), where known: adapters show it to the model
 * so it can tell how long ago something was said.
 */
export type ChatMessage =
  | { role: 'system'; content: string; at?: string }
  | { role: 'user'; content: string; images?: ImagePart[]; at?: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[]; reasoning?: ReasoningBlock[]; at?: string }
  | { role: 'tool'; toolCallId: string; content: string; at?: string };

/** An image in a user message, for providers that take them; inline (`data`, base64) or by `url`. */
export interface ImagePart {
  /** `image/png`, `image/jpeg`, … */
  mediaType: string;
  /** The image's bytes, base64. */
  data?: string;
  url?: string;
}

/**
 * A model's thinking before its answer, as the provider that wrote it returned it. `signature` (Anthropic's
 * `signature`, Gemini's `thoughtSignature`) and `redacted` (Anthropic's encrypted `redacted_thinking`) are only
 * valid for the provider named in `provider`: an adapter for another provider drops them (and may pass the text as
 * plain context) so the history is never rejected after a switch.
 */
export interface ReasoningBlock {
  provider: ProviderKind;
  text: string;
  signature?: string;
  redacted?: string;
}

/** A model's request to run a tool. `arguments` is the JSON text the model wrote (parse and validate it). */
export interface ToolCall {
  /** Unique in the conversation. Adapters translate ids the next provider would refuse (format, length). */
  id: string;
  name: string;
  arguments: string;
  /** A provider's opaque token that must come back with this call (Gemini's `thoughtSignature`). */
  signature?: { provider: ProviderKind; value: string };
}

/** A tool as the model sees it: a name, what it does, and its input as JSON Schema. */
export interface ToolSpec {
  name: string;
  description: string;
  /** JSON Schema of the tool's input object. */
  parameters: Record<string, unknown>;
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** Ask for JSON matching this schema (`response_format: json_schema` where the model supports it). */
  responseFormat?: { name: string; schema: Record<string, unknown> };
  /** Sampling and other parameters, merged over the profile's. */
  parameters?: Record<string, unknown>;
}

export interface TokenUsage {
  /** All input tokens, cached ones included. */
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
  /** Of `promptTokens`, those read from the provider's prompt cache (billed at its cache price). */
  cachedPromptTokens?: number;
  /** Of `promptTokens`, those written to the provider's prompt cache (Anthropic bills them above the input price). */
  cacheWriteTokens?: number;
  /** Of `completionTokens`, those spent thinking, where the provider reports them. */
  reasoningTokens?: number;
}

export interface ChatResponse {
  message: { role: 'assistant'; content: string | null; toolCalls: ToolCall[]; reasoning?: ReasoningBlock[] };
  finishReason: string | null;
  /** As the server reported it; absent when it reported none. */
  usage?: TokenUsage;
  model: string;
}

export interface ChatOptions {
  /** Aborting cancels the request: an `LlmAbortedError`, never retried, never counted as a failure. */
  signal?: AbortSignal;
  /**
   * Stream the reply: called with each piece of the reply's text as the model writes it; the pieces joined are the
   * response's content. `restart: true` (with empty text) means a retry follows a stream that broke: discard the
   * text received so far. Not called for a model that gets tools through the ReAct prompt (its text is the tool
   * format, not words for a reader). The response is the same as without it. A listener that throws is ignored.
   */
  onDelta?: (delta: ChatDelta) => void;
}

/** One piece of a streamed reply, see {@link ChatOptions.onDelta}. */
export interface ChatDelta {
  text: string;
  /** Discard the text streamed so far in this request: the request is being retried. */
  restart?: boolean;
}

/** Anything that answers chat requests: a profile's client, a fake in a test. */
export interface ChatModel {
  /** The profile's name, for logs (`default`, `fast`). */
  readonly name: string;
  /** The model the profile asks the server for (`llama3.1:8b`), where known. */
  readonly model?: string;
  /** The wire format the profile speaks, where known. */
  readonly provider?: ProviderKind;
  /** The model's context window in tokens, for compression decisions. */
  readonly contextWindow: number;
  chat(request: ChatRequest, options?: ChatOptions): Promise<ChatResponse>;
}

/**
 * The chat shapes the rest of Assistant speaks: a small, provider-neutral subset of the OpenAI chat API. Agent loops
 * and tests depend on these, not on the `openai` package, so a fake model is a few lines.
 */

/** One message of a conversation. Tool results answer a tool call by its id. */
export type ChatMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

/** A model's request to run a tool. `arguments` is the JSON text the model wrote (parse and validate it). */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
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
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatResponse {
  message: { role: 'assistant'; content: string | null; toolCalls: ToolCall[] };
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
  /** The model's context window in tokens, for compression decisions. */
  readonly contextWindow: number;
  chat(request: ChatRequest, options?: ChatOptions): Promise<ChatResponse>;
}

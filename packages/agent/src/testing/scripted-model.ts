import type {
  ChatDelta,
  ChatModel,
  ChatOptions,
  ChatRequest,
  ChatResponse,
  TokenUsage,
  ToolCall,
} from '@assistant/llm';

/** A tool call in a script. `arguments` that are not a string are sent as their JSON. */
export interface ScriptedToolCall {
  /** @default `call_<call number>_<index>` */
  id?: string;
  name: string;
  /** @default {} */
  arguments?: unknown;
}

/** One scripted answer: text, tool calls, or an error to throw. A plain string is a final answer. */
export type ScriptedReply =
  | string
  | {
      content?: string | null;
      toolCalls?: ScriptedToolCall[];
      usage?: TokenUsage;
      /** Thrown instead of answering, to script a failing server. */
      error?: Error;
      /**
       * What a caller that streams (`onDelta`) receives, in order, instead of the content split a word a piece: to
       * script a retried stream (`{text: '', restart: true}`).
       */
      deltas?: ChatDelta[];
    };

/** Decides the reply from the request; may return a promise the test settles, to hold a call in flight. */
export type ScriptedResponder = (
  request: ChatRequest,
  call: { index: number; signal: AbortSignal | undefined },
) => ScriptedReply | Promise<ScriptedReply>;

/** Options of {@link createScriptedModel}. */
export interface ScriptedModelOptions {
  /** Replies in order (running out is an error), or a function of the request. */
  replies: ScriptedReply[] | ScriptedResponder;
  /** @default 'scripted' */
  name?: string;
  /** @default 100_000 */
  contextWindow?: number;
  /** Waits this long before each reply (the wait ends early, with an abort error, when the call is aborted). */
  delayMs?: number;
  /** Usage reported for replies that do not give their own. Absent by default, like a server that reports none. */
  usage?: TokenUsage;
}

/** A {@link ChatModel} that answers from a script and remembers what it was asked. */
export interface ScriptedModel extends ChatModel {
  /** Every request received, in order, including those later aborted. */
  readonly requests: ChatRequest[];
}

/**
 * An in-process fake model for tests of code that takes a `ChatModel`. It honours the abort signal while a reply is
 * pending (a responder's promise or `delayMs`), rejecting with an `AbortError` as a real client would. Given an
 * `onDelta`, it streams the reply's text to it a word a piece (or a reply's scripted `deltas`) before answering.
 */
export function createScriptedModel(options: ScriptedModelOptions): ScriptedModel {
  const requests: ChatRequest[] = [];
  const replies = options.replies;
  let calls = 0;

  const nextReply = async (request: ChatRequest, index: number, signal: AbortSignal | undefined) => {
    if (options.delayMs !== undefined) await abortableDelay(options.delayMs, signal);
    if (typeof replies === 'function') return replies(request, { index, signal });
    const reply = replies[index];
    if (reply === undefined) {
      throw new Error(`The scripted model ${options.name ?? 'scripted'} has no reply for call ${index + 1}`);
    }
    return reply;
  };

  return {
    name: options.name ?? 'scripted',
    contextWindow: options.contextWindow ?? 100_000,
    requests,
    async chat(request: ChatRequest, chatOptions: ChatOptions = {}): Promise<ChatResponse> {
      const index = calls;
      calls += 1;
      requests.push(structuredClone(request));
      const signal = chatOptions.signal;
      signal?.throwIfAborted();
      const reply = await raceAbort(nextReply(request, index, signal), signal);
      const stream = (deltas: ChatDelta[]): void => {
        for (const delta of deltas) {
          if (signal?.aborted) throw abortError(signal);
          try {
            chatOptions.onDelta?.(delta);
          } catch {
            // As with a real model: a listener that throws is ignored.
          }
        }
      };
      if (typeof reply === 'string') {
        stream(wordsOf(reply));
        return response(reply, [], options.usage);
      }
      if (reply.error !== undefined) throw reply.error;
      stream(reply.deltas ?? wordsOf(reply.content ?? ''));
      const toolCalls: ToolCall[] = (reply.toolCalls ?? []).map((call, position) => ({
        id: call.id ?? `call_${index + 1}_${position}`,
        name: call.name,
        arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
      }));
      return response(reply.content ?? null, toolCalls, reply.usage ?? options.usage);
    },
  };
}

// A word a piece (with the whitespace after it), as a streaming server sends tokens.
function wordsOf(text: string): ChatDelta[] {
  if (text === '') return [];
  return (text.match(/\s*\S+\s*/g) ?? [text]).map((piece) => ({ text: piece }));
}

function response(content: string | null, toolCalls: ToolCall[], usage: TokenUsage | undefined): ChatResponse {
  return {
    message: { role: 'assistant', content, toolCalls },
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    model: 'scripted',
    ...(usage === undefined ? {} : { usage }),
  };
}

function abortError(signal: AbortSignal): DOMException {
  return new DOMException('The chat request was aborted', { name: 'AbortError', cause: signal.reason });
}

async function raceAbort<Value>(promise: Promise<Value>, signal: AbortSignal | undefined): Promise<Value> {
  if (signal === undefined) return promise;
  // A responder that honours the signal itself rejects after the race is decided; that rejection is expected.
  promise.catch(() => {});
  let onAbort = (): void => {};
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

function abortableDelay(delayMs: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, delayMs);
    const onAbort = (): void => {
      clearTimeout(timer);
      if (signal !== undefined) reject(abortError(signal));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

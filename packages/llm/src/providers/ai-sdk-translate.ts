import type {
  JSONValue,
  LanguageModelV4CallOptions,
  LanguageModelV4Content,
  LanguageModelV4FunctionTool,
  LanguageModelV4Message,
  LanguageModelV4Prompt,
  LanguageModelV4StreamPart,
  LanguageModelV4Usage,
  SharedV4ProviderMetadata,
} from '@ai-sdk/provider';
import { scrubSecrets } from '@assistant/errors';
import type { ChatRequest, ChatResponse, ReasoningBlock, TokenUsage, ToolCall } from '../chat-types.ts';
import { LlmResponseMalformedError } from '../llm-errors.ts';
import { assertGeminiSchema } from './gemini-schema.ts';
import { historyForProvider } from './provider-switch.ts';

/** The providers reached through the AI SDK's provider packages. */
export type AiSdkProvider = 'anthropic' | 'google';

/** The line the time wrapper appends last to the system prompt (see docs/configuration.md). */
const timeLine = '\n\nCurrent time: ';

const ephemeral = { anthropic: { cacheControl: { type: 'ephemeral' } } };

export interface TranslateOptions {
  provider: AiSdkProvider;
  /** Anthropic `cache_control` on the system prompt's stable part and the last tool. @default true */
  promptCache?: boolean;
  /** The profile's parameters, the request's over them. */
  parameters?: Record<string, unknown>;
}

/** What {@link toCallOptions} adds beside the call options: how to read the answer back. */
export interface CallPlan {
  call: LanguageModelV4CallOptions;
  /** The forced tool whose input is the structured answer (Anthropic), if any. */
  answerTool: string | undefined;
}

/**
 * A request in our schema as AI SDK call options (LanguageModelV4), for Anthropic or Gemini:
 * - the history adapted to the provider (see historyForProvider), system messages first, the time line in its own
 *   system block after the stable prompt so Anthropic's cache breakpoint covers only what does not change;
 * - tools as function tools; a structured answer as a single forced tool (Anthropic: explicit, so it does not depend
 *   on the model having Anthropic's newer `output_format`) or `responseJsonSchema` (Gemini, checked first);
 * - sampling parameters by their AI SDK names, anything else as the provider's own options (`thinking`,
 *   `thinkingConfig`).
 */
export function toCallOptions(request: ChatRequest, options: TranslateOptions): CallPlan {
  const { provider } = options;
  const cache = provider === 'anthropic' && options.promptCache !== false;
  const history = historyForProvider(provider, request.messages);
  const system: LanguageModelV4Message[] = [];
  const rest: LanguageModelV4Message[] = [];
  const toolNames = new Map<string, string>();
  for (const message of history) {
    switch (message.role) {
      case 'system': {
        const cut = message.content.lastIndexOf(timeLine);
        const stable = cut === -1 ? message.content : message.content.slice(0, cut);
        const volatile = cut === -1 ? undefined : message.content.slice(cut + 2);
        if (stable !== '') system.push({ role: 'system', content: stable });
        if (volatile !== undefined) system.push({ role: 'system', content: volatile, volatile: true } as never);
        break;
      }
      case 'user':
        rest.push({
          role: 'user',
          content: [
            ...(message.content === '' && (message.images?.length ?? 0) > 0
              ? []
              : [{ type: 'text' as const, text: message.content }]),
            ...(message.images ?? []).map((image) => ({
              type: 'file' as const,
              mediaType: image.mediaType,
              data:
                image.url !== undefined
                  ? { type: 'url' as const, url: new URL(image.url) }
                  : { type: 'data' as const, data: image.data ?? '' },
            })),
          ],
        });
        break;
      case 'assistant': {
        const content: Extract<LanguageModelV4Message, { role: 'assistant' }>['content'] = [];
        const hasText = message.content !== null && message.content !== '';
        // Gemini 3 signs a text answer too: kept as a reasoning block without text, sent back on the text part.
        const textSignature =
          provider === 'google' && hasText
            ? message.reasoning?.find((block) => block.text === '' && block.signature !== undefined)
            : undefined;
        for (const block of message.reasoning ?? []) {
          if (block !== textSignature) content.push(reasoningPart(provider, block));
        }
        if (hasText) {
          content.push({
            type: 'text',
            text: message.content ?? '',
            ...(textSignature?.signature !== undefined
              ? { providerOptions: { google: { thoughtSignature: textSignature.signature } } }
              : {}),
          });
        }
        for (const call of message.toolCalls ?? []) {
          toolNames.set(call.id, call.name);
          content.push({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: call.name,
            input: parseArguments(call.arguments),
            ...(call.signature !== undefined && provider === 'google'
              ? { providerOptions: { google: { thoughtSignature: call.signature.value } } }
              : {}),
          });
        }
        rest.push({ role: 'assistant', content });
        break;
      }
      case 'tool': {
        const part = {
          type: 'tool-result' as const,
          toolCallId: message.toolCallId,
          // historyForProvider keeps only results right after their call, so the name is always known.
          toolName: toolNames.get(message.toolCallId) ?? 'unknown',
          output: { type: 'text' as const, value: message.content },
        };
        const last = rest.at(-1);
        // One tool message per turn: Anthropic wants every result of a turn in one user message.
        if (last?.role === 'tool') last.content.push(part);
        else rest.push({ role: 'tool', content: [part] });
        break;
      }
    }
  }
  // The cache breakpoint goes on the last stable system block: everything up to it (tools come before the system
  // prompt in Anthropic's prefix) is cached; the time line after it is not.
  if (cache) {
    const lastStable = system.findLast((message) => !('volatile' in message));
    if (lastStable) lastStable.providerOptions = ephemeral;
  }
  for (const message of system) delete (message as { volatile?: boolean }).volatile;

  const tools: LanguageModelV4FunctionTool[] = (request.tools ?? []).map((tool) => {
    if (provider === 'google') assertGeminiSchema(tool.parameters, `/tools/${tool.name}/parameters`);
    return {
      type: 'function',
      name: tool.name,
      description: tool.description,
      inputSchema: tool.parameters as LanguageModelV4FunctionTool['inputSchema'],
    };
  });
  let answerTool: string | undefined;
  let responseFormat: LanguageModelV4CallOptions['responseFormat'];
  let toolChoice: LanguageModelV4CallOptions['toolChoice'];
  if (request.responseFormat) {
    const { name, schema } = request.responseFormat;
    if (provider === 'anthropic') {
      answerTool = name.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64) || 'answer';
      tools.push({
        type: 'function',
        name: answerTool,
        description: 'Give your answer as this tool input.',
        inputSchema: schema as LanguageModelV4FunctionTool['inputSchema'],
      });
      toolChoice = { type: 'tool', toolName: answerTool };
    } else {
      assertGeminiSchema(schema, '/responseFormat/schema');
      responseFormat = { type: 'json', schema: schema as never, name };
    }
  }
  const lastTool = tools.at(-1);
  if (cache && lastTool) lastTool.providerOptions = ephemeral;

  const { settings, providerOptions } = splitParameters(options.parameters ?? {});
  // Anthropic refuses a forced tool choice while extended thinking is on: a structured answer is asked without it.
  if (answerTool !== undefined) delete providerOptions.thinking;
  return {
    call: {
      prompt: [...system, ...rest] as LanguageModelV4Prompt,
      ...settings,
      ...(tools.length > 0 ? { tools } : {}),
      ...(toolChoice ? { toolChoice } : {}),
      ...(responseFormat ? { responseFormat } : {}),
      ...(Object.keys(providerOptions).length > 0
        ? { providerOptions: { [provider]: providerOptions as Record<string, JSONValue> } }
        : {}),
    },
    answerTool,
  };
}

function reasoningPart(
  provider: AiSdkProvider,
  block: ReasoningBlock,
): Extract<LanguageModelV4Content, { type: 'reasoning' }> & { providerOptions?: SharedV4ProviderMetadata } {
  const metadata: Record<string, JSONValue> = {};
  if (provider === 'anthropic') {
    if (block.signature !== undefined) metadata.signature = block.signature;
    if (block.redacted !== undefined) metadata.redactedData = block.redacted;
  } else if (block.signature !== undefined) metadata.thoughtSignature = block.signature;
  return {
    type: 'reasoning',
    text: block.text,
    ...(Object.keys(metadata).length > 0 ? { providerOptions: { [provider]: metadata } } : {}),
  };
}

/** Our own parameter names (and OpenAI's) as the AI SDK's; the rest goes to the provider as its options. */
const settingNames: Record<string, string> = {
  temperature: 'temperature',
  top_p: 'topP',
  topP: 'topP',
  top_k: 'topK',
  topK: 'topK',
  max_tokens: 'maxOutputTokens',
  max_completion_tokens: 'maxOutputTokens',
  maxOutputTokens: 'maxOutputTokens',
  stop: 'stopSequences',
  stopSequences: 'stopSequences',
  seed: 'seed',
  presence_penalty: 'presencePenalty',
  frequency_penalty: 'frequencyPenalty',
};

function splitParameters(parameters: Record<string, unknown>): {
  settings: Record<string, unknown>;
  providerOptions: Record<string, unknown>;
} {
  const settings: Record<string, unknown> = {};
  const providerOptions: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(parameters)) {
    const name = settingNames[key];
    if (name === 'stopSequences') settings[name] = Array.isArray(value) ? value : [value];
    else if (name !== undefined) settings[name] = value;
    else providerOptions[key] = value;
  }
  return { settings, providerOptions };
}

/** A tool call's arguments as the value the SDK re-serialises; text that is not JSON is kept as a string. */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text === '' ? '{}' : text);
  } catch {
    return text;
  }
}

/** The parts of an answer, from `doGenerate`'s content or assembled from `doStream`'s parts. */
export interface AnswerParts {
  content: LanguageModelV4Content[];
  finishReason: { unified: string; raw: string | undefined };
  usage: LanguageModelV4Usage | undefined;
  modelId: string | undefined;
}

/** The V3 answer in our schema: text, tool calls (arguments checked to be JSON), reasoning with signatures, usage. */
export function toChatResponse(
  parts: AnswerParts,
  options: { provider: AiSdkProvider; model: string; answerTool: string | undefined },
): ChatResponse {
  const { provider } = options;
  let text = '';
  let hasText = false;
  const toolCalls: ToolCall[] = [];
  const reasoning: ReasoningBlock[] = [];
  for (const part of parts.content) {
    if (part.type === 'text') {
      text += part.text;
      hasText ||= part.text !== '';
      const signature = (part.providerMetadata?.[provider] as Record<string, unknown> | undefined)?.thoughtSignature;
      if (provider === 'google' && typeof signature === 'string') reasoning.push({ provider, text: '', signature });
    } else if (part.type === 'reasoning') {
      const metadata = part.providerMetadata?.[provider] as Record<string, unknown> | undefined;
      const signature = metadata?.signature ?? metadata?.thoughtSignature;
      const redacted = metadata?.redactedData;
      reasoning.push({
        provider,
        text: part.text,
        ...(typeof signature === 'string' ? { signature } : {}),
        ...(typeof redacted === 'string' ? { redacted } : {}),
      });
    } else if (part.type === 'tool-call') {
      const input = part.input === '' ? '{}' : part.input;
      try {
        JSON.parse(input);
      } catch (error) {
        throw new LlmResponseMalformedError(
          `${provider}: the arguments of tool call ${part.toolName} are not JSON`,
          excerpt(input),
          { cause: error },
        );
      }
      if (part.toolName === options.answerTool) {
        // The forced answer tool: its input is the structured answer.
        text = input;
        hasText = true;
        continue;
      }
      const signature = (part.providerMetadata?.[provider] as Record<string, unknown> | undefined)?.thoughtSignature;
      toolCalls.push({
        id: part.toolCallId,
        name: part.toolName,
        arguments: input,
        ...(typeof signature === 'string' ? { signature: { provider, value: signature } } : {}),
      });
    }
  }
  const usage = parts.usage ? usageOf(parts.usage) : undefined;
  return {
    message: {
      role: 'assistant',
      content: hasText ? text : null,
      toolCalls,
      ...(reasoning.length > 0 ? { reasoning } : {}),
    },
    finishReason: toolCalls.length > 0 ? 'tool_calls' : finishReasonOf(parts.finishReason.unified),
    ...(usage ? { usage } : {}),
    model: parts.modelId ?? options.model,
  };
}

/** The AI SDK's unified finish reasons in OpenAI's words, which the rest of Assistant reads. */
function finishReasonOf(unified: string): string {
  switch (unified) {
    case 'tool-calls':
      return 'tool_calls';
    case 'content-filter':
      return 'content_filter';
    default:
      return unified;
  }
}

function usageOf(usage: LanguageModelV4Usage): TokenUsage | undefined {
  const prompt = usage.inputTokens.total;
  const completion = usage.outputTokens.total;
  if (prompt === undefined && completion === undefined) return undefined;
  const { cacheRead, cacheWrite } = usage.inputTokens;
  const reasoning = usage.outputTokens.reasoning;
  return {
    promptTokens: prompt ?? 0,
    completionTokens: completion ?? 0,
    totalTokens: (prompt ?? 0) + (completion ?? 0),
    ...(cacheRead !== undefined && cacheRead > 0 ? { cachedPromptTokens: cacheRead } : {}),
    ...(cacheWrite !== undefined && cacheWrite > 0 ? { cacheWriteTokens: cacheWrite } : {}),
    ...(reasoning !== undefined && reasoning > 0 ? { reasoningTokens: reasoning } : {}),
  };
}

/** At most 300 characters of a provider's raw answer, secrets scrubbed: enough to see what broke. */
export function excerpt(text: string): string {
  return scrubSecrets(text.length > 300 ? `${text.slice(0, 300)}…` : text);
}

type TextSlot = { type: 'text'; text: string; providerMetadata?: SharedV4ProviderMetadata };

/** Assembles `doStream`'s parts into {@link AnswerParts}, handing text deltas to `onText`. */
export class StreamAssembler {
  readonly content: LanguageModelV4Content[] = [];
  finish: { finishReason: { unified: string; raw: string | undefined }; usage: LanguageModelV4Usage } | undefined;
  modelId: string | undefined;
  readonly #texts = new Map<string, TextSlot>();
  readonly #reasoning = new Map<
    string,
    { type: 'reasoning'; text: string; providerMetadata?: SharedV4ProviderMetadata }
  >();
  readonly #onText: ((text: string) => void) | undefined;

  constructor(onText: ((text: string) => void) | undefined) {
    this.#onText = onText;
  }

  /** Takes one part; throws the provider's error part as it is (the classifier reads it). */
  add(part: LanguageModelV4StreamPart): void {
    switch (part.type) {
      case 'response-metadata':
        if (part.modelId !== undefined) this.modelId = part.modelId;
        return;
      case 'text-start': {
        const slot: TextSlot = { type: 'text', text: '' };
        if (part.providerMetadata) slot.providerMetadata = part.providerMetadata;
        this.#texts.set(part.id, slot);
        this.content.push(slot);
        return;
      }
      case 'text-delta': {
        let slot = this.#texts.get(part.id);
        if (slot === undefined) {
          slot = { type: 'text', text: '' };
          this.#texts.set(part.id, slot);
          this.content.push(slot);
        }
        slot.text += part.delta;
        // Gemini's thought signature on a text part arrives with its delta.
        if (part.providerMetadata) slot.providerMetadata = mergeMetadata(slot.providerMetadata, part.providerMetadata);
        if (part.delta !== '') this.#onText?.(part.delta);
        return;
      }
      case 'text-end': {
        const slot = this.#texts.get(part.id);
        if (slot !== undefined && part.providerMetadata) {
          slot.providerMetadata = mergeMetadata(slot.providerMetadata, part.providerMetadata);
        }
        return;
      }
      case 'reasoning-start': {
        const slot: { type: 'reasoning'; text: string; providerMetadata?: SharedV4ProviderMetadata } = {
          type: 'reasoning',
          text: '',
          ...(part.providerMetadata ? { providerMetadata: part.providerMetadata } : {}),
        };
        this.#reasoning.set(part.id, slot);
        this.content.push(slot);
        return;
      }
      case 'reasoning-delta':
      case 'reasoning-end': {
        let slot = this.#reasoning.get(part.id);
        if (slot === undefined) {
          slot = { type: 'reasoning', text: '' };
          this.#reasoning.set(part.id, slot);
          this.content.push(slot);
        }
        if (part.type === 'reasoning-delta') slot.text += part.delta;
        // The signature arrives on a delta (Anthropic's signature_delta) or the end: merge, later wins.
        if (part.providerMetadata) slot.providerMetadata = mergeMetadata(slot.providerMetadata, part.providerMetadata);
        return;
      }
      case 'tool-call':
        this.content.push(part);
        return;
      case 'finish':
        this.finish = { finishReason: part.finishReason, usage: part.usage };
        return;
      case 'error':
        throw part.error;
      default:
        // tool-input-* (the SDK assembles them into the tool-call part), stream-start, sources, raw: nothing to keep.
        return;
    }
  }
}

function mergeMetadata(a: SharedV4ProviderMetadata | undefined, b: SharedV4ProviderMetadata): SharedV4ProviderMetadata {
  const merged: SharedV4ProviderMetadata = { ...a };
  for (const [key, value] of Object.entries(b)) merged[key] = { ...a?.[key], ...value };
  return merged;
}

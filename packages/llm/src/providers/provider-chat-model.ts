import type { ModelCapabilities } from '../capabilities.ts';
import type { ChatModel, ProviderKind, TokenUsage } from '../chat-types.ts';
import type { ModelGate } from '../model-gate.ts';
import { createOpenAiChatModel } from '../openai-chat-model.ts';
import { createAiSdkChatModel } from './ai-sdk-chat-model.ts';

export interface ProviderChatModelOptions {
  /** The wire format the profile speaks. */
  provider: ProviderKind;
  /** The profile's name, for logs and errors. */
  name: string;
  model: string;
  /** @default defaultBaseUrls[provider]; required for `openai-compatible` */
  baseUrl?: string | undefined;
  /** The key, revealed; local openai-compatible endpoints need none. */
  apiKey?: string | undefined;
  parameters?: Record<string, unknown> | undefined;
  /** @default 120000 */
  timeoutMs?: number | undefined;
  /** @default 4 */
  maxRetries?: number | undefined;
  capabilities?: { tools?: boolean; jsonSchema?: boolean; contextWindow?: number } | undefined;
  /** Anthropic `cache_control` on the system prompt's stable part and the tools. @default true */
  promptCache?: boolean | undefined;
  /** The record/replay transport, or a test's. @default globalThis.fetch */
  fetch?: typeof fetch | undefined;
  /** Called with the server-reported usage (cached tokens included when reported) of every successful request. */
  onUsage?: ((usage: TokenUsage, model: string) => void) | undefined;
  onCall?: ((call: { model: string; latencyMs: number; usage?: TokenUsage }) => void) | undefined;
  /** Waits between retries; tests shorten it. */
  sleep?: ((ms: number, signal?: AbortSignal) => Promise<void>) | undefined;
  gate?: ModelGate | undefined;
}

/** Where each provider's API lives when the profile sets no `base_url`. */
export const defaultBaseUrls: Record<ProviderKind, string | undefined> = {
  'openai-compatible': undefined,
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1',
  google: 'https://generativelanguage.googleapis.com/v1beta',
};

/**
 * A profile as a {@link ChatModel}, whatever its provider: OpenAI and OpenAI-compatible servers over the `openai`
 * package, Anthropic and Gemini over the AI SDK's provider packages; all share one retry/gate loop and one message
 * schema (see docs/providers.md).
 */
export function createProviderChatModel(
  options: ProviderChatModelOptions,
): ChatModel & { capabilities: ModelCapabilities } {
  const baseUrl = options.baseUrl ?? defaultBaseUrls[options.provider];
  if (baseUrl === undefined) {
    throw new TypeError(
      `LLM profile ${options.name}: provider \`${options.provider}\` needs a \`base_url\` (the server's address, usually ending in /v1)`,
    );
  }
  const shared = {
    name: options.name,
    model: options.model,
    ...(options.parameters === undefined ? {} : { parameters: options.parameters }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.maxRetries === undefined ? {} : { maxRetries: options.maxRetries }),
    ...(options.capabilities === undefined ? {} : { capabilities: options.capabilities }),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.onUsage === undefined ? {} : { onUsage: options.onUsage }),
    ...(options.onCall === undefined ? {} : { onCall: options.onCall }),
    ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
    ...(options.gate === undefined ? {} : { gate: options.gate }),
  };
  switch (options.provider) {
    case 'openai':
    case 'openai-compatible':
      return createOpenAiChatModel({ ...shared, provider: options.provider, baseUrl, token: options.apiKey });
    case 'anthropic':
    case 'google':
      return createAiSdkChatModel({
        ...shared,
        provider: options.provider,
        baseUrl,
        apiKey: options.apiKey,
        promptCache: options.promptCache,
      });
  }
}

export {
  anthropicErrorBody,
  anthropicErrorFor,
  anthropicEventText,
  FakeAnthropicServer,
  type FakeAnthropicServerOptions,
  validateAnthropicRequest,
} from './fake-anthropic-server.ts';
export {
  FakeGeminiServer,
  type FakeGeminiServerOptions,
  geminiEventText,
  googleErrorBody,
  googleStatusFor,
  validateGeminiRequest,
} from './fake-gemini-server.ts';
export {
  type FakeChatRequest,
  FakeOpenAiServer,
  type FakeOpenAiServerOptions,
  type FakeReply,
} from './fake-openai-server.ts';
export type {
  FakeProviderReply,
  FakeProviderRequest,
  FakeProviderServerOptions,
  FakeReplyTiming,
  FakeUsage,
} from './fake-provider-server.ts';

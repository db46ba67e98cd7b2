/**
 * Test tools for `@assistant/llm`: fake model servers on loopback that speak each provider's wire format, so adapter,
 * transport and scenario tests run against real HTTP without a key or the network. Never a product default.
 *
 * - {@link FakeOpenAiServer}: OpenAI-compatible Chat Completions (`/v1/chat/completions`, `/v1/models`).
 * - {@link FakeAnthropicServer}: the Anthropic Messages API (`/v1/messages`, `/v1/models[/:id]`); base URL `fake.url`
 *   (`…/v1`).
 * - {@link FakeGeminiServer}: the Gemini API (`/v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
 *   `/v1beta/models[/{model}]`); base URL `fake.url` (`…/v1beta`).
 *
 * The Anthropic and Gemini fakes share one script shape ({@link FakeProviderReply}): `{text}`, `{toolCalls}`,
 * `{thinking: {text, signature}}`, `usage` (cached tokens included), `stopReason`, `malformedToolJson`, `streamError`
 * (the provider's mid-stream error event), `{error: {status, message?, body?, headers?, retryAfterSeconds?}}` (the
 * provider's own error body by default), `{chunks}` (raw SSE text), `{rawEvents}` and `{rawBody}` (a real capture
 * replayed byte for byte; see `ai-sdk-captures/`), with `delayMs` before the answer, `chunkDelayMs` between events and
 * `cutAfterEvents` to drop the connection mid-stream. Replies are consumed in order (or computed by `respond`);
 * every request is recorded in `requests` (`generationRequests` for the model calls), with `rejected` set when the
 * fake refused it. A refused request consumes no reply. When the replies run out the provider's 500 is sent.
 * `failWith(error)` answers every generation with an error until `recover()`; `refuseConnections()` makes the port
 * refuse connections (an unreachable provider) until `recover()` listens again on the same port.
 *
 * What they check, as the real APIs do before generating, answering in the provider's error shape:
 * - Anthropic: `x-api-key` (401 `authentication_error`; `apiKey` pins the one accepted), `anthropic-version`,
 *   `model` and `max_tokens`, the model (404 `not_found_error` when `models` is given), roles (with `strictRoles`, the
 *   default: first message `user`, alternating), non-empty content, `tool_use` ids `^[a-zA-Z0-9_-]+$`, thinking blocks
 *   signed, `tool_result` ↔ `tool_use` pairing across adjacent messages, tool names and object `input_schema`, at most
 *   4 `cache_control` breakpoints, thinking budget, `temperature` and forced `tool_choice`, thinking first in the
 *   assistant turn the last tool results answer, inline image types, a prefilled assistant turn without trailing
 *   whitespace, and `maxInputTokens` ("prompt is too long: N tokens > M maximum").
 * - Gemini: the key in `x-goog-api-key` or `?key=` (403 `PERMISSION_DENIED` when absent, 400 `API_KEY_INVALID` when
 *   wrong), the model (404 `NOT_FOUND`), non-empty `contents` and `parts`, roles `user`/`model`, function call and
 *   function response turns (order, count, names), Gemini 3 thought signatures on the current turn's function calls,
 *   function names, `generationConfig` field names, the `Schema` fields `responseSchema` and `parameters` accept (`$ref`, `additionalProperties`,
 *   `const`, list types… are refused with Google's "Unknown name" message), a lone `$ref` in `responseJsonSchema`,
 *   and `maxInputTokens` ("The input token count (N) exceeds the maximum number of tokens allowed (M).").
 *
 * What they do not: real tokenisation (counts are about four characters a token), whether a signature is genuine or a
 * thinking block unmodified, media, safety, server tools, sampling parameter ranges, the rest of JSON Schema, rate
 * limits (script them with `{error: {status: 429}}`). Where a fake is stricter than today's first-party API it says
 * so and the rule is an option: the Anthropic API now merges consecutive same-role turns and accepts a leading
 * assistant turn (`strictRoles: false`), which Bedrock and Vertex still refuse. Decision 0035 says why.
 */
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
  FakeErrorSpec,
  FakeProviderReply,
  FakeProviderRequest,
  FakeProviderServerOptions,
  FakeReplyTiming,
  FakeUsage,
} from './fake-provider-server.ts';

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
  splitIntoWords,
  truncatedJson,
} from './fake-provider-server.ts';

export type FakeGeminiServerOptions = FakeProviderServerOptions;

/** Google's canonical status name for an HTTP status, as it appears in `error.status`. */
export function googleStatusFor(code: number): string {
  const names: Record<number, string> = {
    400: 'INVALID_ARGUMENT',
    401: 'UNAUTHENTICATED',
    403: 'PERMISSION_DENIED',
    404: 'NOT_FOUND',
    409: 'ABORTED',
    429: 'RESOURCE_EXHAUSTED',
    499: 'CANCELLED',
    500: 'INTERNAL',
    501: 'NOT_IMPLEMENTED',
    503: 'UNAVAILABLE',
    504: 'DEADLINE_EXCEEDED',
  };
  return names[code] ?? (code >= 500 ? 'INTERNAL' : 'FAILED_PRECONDITION');
}

const defaultMessages: Record<number, string> = {
  400: 'Request contains an invalid argument.',
  401: 'Request had invalid authentication credentials.',
  403: 'The caller does not have permission',
  404: 'Requested entity was not found.',
  429: 'You exceeded your current quota, please check your plan and billing details.',
  500: 'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  503: 'The model is overloaded. Please try again later.',
  504: 'The request timed out. Please try again.',
};

/** The body Google sends with an HTTP error: `{error: {code, message, status, details?}}`. */
export function googleErrorBody(code: number, message?: string, details?: unknown[]): Record<string, unknown> {
  const error: Record<string, unknown> = {
    code,
    message: message ?? defaultMessages[code] ?? `Request failed with status ${code}`,
    status: googleStatusFor(code),
  };
  if (details !== undefined && details.length > 0) error.details = details;
  return { error };
}

/** The fields of Gemini's `Schema` message (an OpenAPI 3.0 subset), the only ones `responseSchema` and `parameters` take. */
const schemaFields = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'maxItems',
  'minItems',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'minLength',
  'maxLength',
  'pattern',
  'example',
  'anyOf',
  'propertyOrdering',
  'default',
  'items',
  'minimum',
  'maximum',
]);
/** The fields of `GenerationConfig` (v1beta), lowerCamel. */
const generationConfigFields = new Set([
  'stopSequences',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  '_responseJsonSchema',
  'responseModalities',
  'candidateCount',
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseLogprobs',
  'logprobs',
  'enableEnhancedCivicAnswers',
  'speechConfig',
  'thinkingConfig',
  'imageConfig',
  'mediaResolution',
  'audioTimestamp',
  'enableAffectiveDialog',
]);

/** Gemini's function name rule. */
const functionNamePattern = /^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$/;
const schemaTypes = new Set(['TYPE_UNSPECIFIED', 'STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT', 'NULL']);

type ContentReply = Extract<FakeProviderReply, { text?: string }> & FakeReplyTiming;

/**
 * A fake Gemini API (Google AI `generativelanguage`, v1beta) on loopback, for tests only:
 * `POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent?alt=sse` (server-sent events, one
 * `GenerateContentResponse` a `data:` event) or without `alt=sse` (a streamed JSON array), and
 * `GET /v1beta/models[/{model}]`. Clients take `url` (`http://127.0.0.1:<port>/v1beta`) as their base URL.
 *
 * It checks what the real API checks before generating and refuses in Google's error shape: the API key
 * (`x-goog-api-key` header or `?key=`), the model (when `models` is given), roles, function call and response
 * turns, Gemini 3 thought signatures, and the schema fields `responseSchema` and function `parameters` accept. See
 * {@link validateGeminiRequest}.
 *
 * @example
 * await using fake = await FakeGeminiServer.start({ replies: [{ text: 'Hello' }] });
 * const model = createGoogleGenerativeAI({ baseURL: fake.url, apiKey: 'test' }).languageModel('gemini-2.5-flash');
 */
export class FakeGeminiServer extends FakeProviderServer {
  /** The base URL for a client: `http://127.0.0.1:<port>/v1beta`. */
  readonly url: string;

  private constructor(server: Server, origin: string, options: FakeGeminiServerOptions) {
    super(server, origin, options);
    this.url = `${origin}/v1beta`;
  }

  /** Start a server on 127.0.0.1 on a free port. */
  static async start(options: FakeGeminiServerOptions = {}): Promise<FakeGeminiServer> {
    return FakeProviderServer.listen((server, origin) => new FakeGeminiServer(server, origin, options));
  }

  protected isGeneration(request: FakeProviderRequest): boolean {
    return request.method === 'POST' && /:(stream)?generateContent$/i.test(request.path);
  }

  protected errorAnswer(error: FakeErrorSpec): FakeAnswer {
    const { status, message, headers, retryAfterSeconds } = error;
    const details =
      retryAfterSeconds === undefined
        ? undefined
        : [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: `${retryAfterSeconds}s` }];
    const body = error.body ?? googleErrorBody(status, message, details);
    return { kind: 'json', status, body, headers: headers ?? {} };
  }

  protected async route(request: FakeProviderRequest): Promise<FakeAnswer> {
    const refuse = (code: number, message: string, details?: unknown[]): FakeAnswer => {
      request.rejected = { status: code, message };
      return { kind: 'json', status: code, body: googleErrorBody(code, message, details) };
    };
    const key = request.headers['x-goog-api-key'] ?? request.query.key;
    if (key === undefined || key === '') {
      return refuse(
        403,
        "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
      );
    }
    if (this.options.apiKey !== undefined && key !== this.options.apiKey) {
      return refuse(400, 'API key not valid. Please pass a valid API key.', [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        },
      ]);
    }

    const match = /^\/v1beta\/models(?:\/([^/:]+)(?::([A-Za-z]+))?)?$/.exec(request.path);
    if (match === null) return refuse(404, `Method not found: ${request.method} ${request.path}`);
    const model = match[1] === undefined ? undefined : decodeURIComponent(match[1]);
    const action = match[2];
    if (request.method === 'GET' && action === undefined) {
      if (model === undefined) {
        const ids = this.options.models ?? ['gemini-2.5-flash', 'gemini-2.5-pro', 'gemini-3-pro-preview'];
        return { kind: 'json', status: 200, body: { models: ids.map(modelObject) } };
      }
      if (!this.#knowsModel(model)) return refuse(404, `models/${model} is not found for API version v1beta`);
      return { kind: 'json', status: 200, body: modelObject(model) };
    }
    if (model === undefined || (action !== 'generateContent' && action !== 'streamGenerateContent')) {
      return refuse(404, `Method not found: ${request.method} ${request.path}`);
    }
    if (request.method !== 'POST') return refuse(404, `Method not found: ${request.method} ${request.path}`);
    if (!this.#knowsModel(model)) {
      return refuse(
        404,
        `models/${model} is not found for API version v1beta, or is not supported for ${action}. Call ListModels to see the list of available models and their supported methods.`,
      );
    }
    const body = request.body;
    // Wording ours, in Google's style; the status is Google's.
    if (body === undefined) return refuse(400, 'Invalid JSON payload received. Expected an object.');
    const invalid = validateGeminiRequest(body, { model });
    if (invalid !== undefined) return refuse(400, invalid);
    const promptTokens = roughTokens(JSON.stringify([body.systemInstruction ?? '', body.contents, body.tools ?? []]));
    const { maxInputTokens } = this.options;
    if (maxInputTokens !== undefined && promptTokens > maxInputTokens) {
      return refuse(
        400,
        `The input token count (${promptTokens}) exceeds the maximum number of tokens allowed (${maxInputTokens}).`,
      );
    }

    const index = this.generationIndex;
    const scripted = await this.nextReply(request);
    if (scripted === undefined) {
      return { kind: 'json', status: 500, body: googleErrorBody(500, 'fake server: no scripted reply left') };
    }
    await this.wait(scripted.delayMs, request);
    const streaming = action === 'streamGenerateContent';
    const sse = request.query.alt === 'sse';

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
      return { kind: 'stream', events: scripted.rawEvents.map(geminiEventText), timing: scripted };
    }
    const includeThoughts = thinkingConfigOf(body).includeThoughts === true;
    const identity = { model, promptTokens, index, includeThoughts };
    if (!streaming) return { kind: 'json', status: 200, body: responseObject(scripted, identity) };
    const chunks = streamChunks(scripted, identity);
    if (sse) return { kind: 'stream', events: chunks.map(geminiEventText), timing: scripted };
    // Without alt=sse, the API streams one JSON array, an element at a time.
    const events = chunks.map((chunk, position) => `${position === 0 ? '[' : ',\r\n'}${JSON.stringify(chunk)}`);
    events.push(']');
    return { kind: 'stream', events, timing: scripted, headers: { 'content-type': 'application/json; charset=UTF-8' } };
  }

  #knowsModel(id: string): boolean {
    return this.options.models === undefined || this.options.models.includes(id);
  }
}

function modelObject(id: string): Record<string, unknown> {
  return {
    name: `models/${id}`,
    version: '001',
    displayName: id,
    inputTokenLimit: 1048576,
    outputTokenLimit: 65536,
    supportedGenerationMethods: ['generateContent', 'countTokens'],
  };
}

/** One server-sent event as Gemini writes it: `data: <json>` and a CRLF blank line; a string is sent as the data. */
export function geminiEventText(event: object | string): string {
  return `data: ${typeof event === 'string' ? event : JSON.stringify(event)}\r\n\r\n`;
}

function thinkingConfigOf(body: Record<string, unknown>): Record<string, unknown> {
  const config = body.generationConfig as Record<string, unknown> | undefined;
  return (config?.thinkingConfig as Record<string, unknown> | undefined) ?? {};
}

type Part = Record<string, unknown>;
type Content = { role?: unknown; parts?: unknown };

/**
 * Check a `generateContent` request as the API does before generating; returns Google's error message, or
 * `undefined` when the request is valid. What it checks: `contents` present and non-empty, each with non-empty
 * `parts` and a role `user` or `model`; a function call turn comes right after a user turn or a function response
 * turn; a function response turn comes right after a function call turn, with as many responses as calls and every
 * response named after one of the calls; on Gemini 3 models, the first function call of each model step since the
 * last user text carries a `thoughtSignature`; `generationConfig.responseSchema` and every function's `parameters`
 * use only the fields of Gemini's `Schema` (no `$ref`, `$defs`, `additionalProperties`, `const`, `oneOf`, `allOf`,
 * `$schema`…) and a single `type`; function names start with a letter or `_` and have at most 64 letters, digits,
 * `_ . : -`; `responseJsonSchema` and `parametersJsonSchema` (full JSON Schema) have no
 * `$ref` with sibling keywords; `generationConfig` has only `GenerationConfig`'s fields (`max_tokens` is refused).
 * What it does not: media parts, safety settings, tool config, generation parameter
 * ranges, the rest of JSON Schema.
 */
export function validateGeminiRequest(body: Record<string, unknown>, options: { model: string }): string | undefined {
  const contents = body.contents;
  if (!Array.isArray(contents) || contents.length === 0) {
    return '* GenerateContentRequest.contents: contents is not specified\n';
  }
  const list = contents as Content[];
  for (const [index, content] of list.entries()) {
    if (!Array.isArray(content.parts) || content.parts.length === 0) {
      return `* GenerateContentRequest.contents[${index}].parts: contents.parts must not be empty.\n`;
    }
    if (content.role !== undefined && content.role !== 'user' && content.role !== 'model') {
      return 'Please use a valid role: user, model.';
    }
  }
  const partsOf = (content: Content | undefined): Part[] =>
    Array.isArray(content?.parts) ? (content.parts as Part[]) : [];
  const calls = (content: Content | undefined) =>
    partsOf(content).filter((part) => part.functionCall !== undefined && part.functionCall !== null);
  const responses = (content: Content | undefined) =>
    partsOf(content).filter((part) => part.functionResponse !== undefined && part.functionResponse !== null);
  for (const [index, content] of list.entries()) {
    const previous = index > 0 ? list[index - 1] : undefined;
    if (calls(content).length > 0 && index > 0 && previous?.role !== 'user' && previous?.role !== undefined) {
      return 'Please ensure that function call turn comes immediately after a user turn or after a function response turn.';
    }
    const answered = responses(content);
    if (answered.length === 0) continue;
    const asked = calls(previous);
    if (previous === undefined || previous.role !== 'model' || asked.length === 0) {
      return 'Please ensure that function response turn comes immediately after a function call turn.';
    }
    if (answered.length !== asked.length) {
      return 'Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.';
    }
    const names = asked.map((part) => String((part.functionCall as Record<string, unknown>).name));
    for (const part of answered) {
      const name = String((part.functionResponse as Record<string, unknown>).name);
      if (!names.includes(name)) {
        // Wording ours: whether the live API checks names, and how it words it, is not known.
        return `Please ensure that the function response name '${name}' matches the name of a function call of the function call turn (${names.map((each) => `'${each}'`).join(', ')}).`;
      }
    }
  }
  if (/^gemini-3/.test(options.model)) {
    // Gemini 3 validates signatures for the current turn only: the model steps after the last user text.
    let start = 0;
    for (const [index, content] of list.entries()) {
      if (content.role !== 'model' && partsOf(content).some((part) => typeof part.text === 'string')) start = index + 1;
    }
    for (let index = start; index < list.length; index++) {
      const content = list[index];
      if (content?.role !== 'model') continue;
      const firstCall = calls(content)[0];
      if (
        firstCall !== undefined &&
        (typeof firstCall.thoughtSignature !== 'string' || firstCall.thoughtSignature === '')
      ) {
        const position = partsOf(content).indexOf(firstCall) + 1;
        const name = String((firstCall.functionCall as Record<string, unknown>).name);
        return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${name}\` , position ${position}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.`;
      }
    }
  }
  const problems: string[] = [];
  const config = body.generationConfig as Record<string, unknown> | undefined;
  for (const key of Object.keys(config ?? {})) {
    // Protocol buffer JSON takes a field under its lowerCamel or its snake_case name; anything else is unknown.
    const camel = key.replace(/_([a-z])/g, (_match, letter: string) => letter.toUpperCase());
    if (!generationConfigFields.has(camel)) {
      problems.push(`Invalid JSON payload received. Unknown name "${key}" at 'generation_config': Cannot find field.`);
    }
  }
  if (config?.responseSchema !== undefined) {
    checkSchema(config.responseSchema, 'generation_config.response_schema', problems);
  }
  if (config?.responseJsonSchema !== undefined) {
    checkJsonSchema(config.responseJsonSchema, 'generation_config.response_json_schema', problems);
  }
  const tools = Array.isArray(body.tools) ? (body.tools as Record<string, unknown>[]) : [];
  for (const [toolIndex, tool] of tools.entries()) {
    const declarations = Array.isArray(tool.functionDeclarations)
      ? (tool.functionDeclarations as Record<string, unknown>[])
      : [];
    for (const [declarationIndex, declaration] of declarations.entries()) {
      const at = `tools[${toolIndex}].function_declarations[${declarationIndex}]`;
      if (typeof declaration.name !== 'string' || !functionNamePattern.test(declaration.name)) {
        return `* GenerateContentRequest.${at}.name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 64.\n`;
      }
      if (declaration.parameters !== undefined) checkSchema(declaration.parameters, `${at}.parameters`, problems);
      if (declaration.parametersJsonSchema !== undefined) {
        checkJsonSchema(declaration.parametersJsonSchema, `${at}.parameters_json_schema`, problems);
      }
    }
  }
  return problems.length > 0 ? problems.join('\n') : undefined;
}

// Gemini's Schema is a protocol buffer message: a JSON key it has no field for is refused by the JSON parser itself.
function checkSchema(schema: unknown, path: string, problems: string[]): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    // Wording ours, in Google's style.
    problems.push(`Invalid JSON payload received. Expected an object at '${path}'.`);
    return;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (!schemaFields.has(key)) {
      problems.push(`Invalid JSON payload received. Unknown name "${key}" at '${path}': Cannot find field.`);
      continue;
    }
    if (key === 'type') {
      if (Array.isArray(value)) {
        problems.push(
          `Invalid JSON payload received. Unknown name "type" at '${path}': Proto field is not repeating, cannot start list.`,
        );
      } else if (typeof value !== 'string' || !schemaTypes.has(value.toUpperCase())) {
        problems.push(
          `Invalid value at '${path}.type' (type.googleapis.com/google.ai.generativelanguage.v1beta.Type), ${JSON.stringify(value)}`,
        );
      }
    }
    if (key === 'properties' && value !== null && typeof value === 'object') {
      Object.values(value).forEach((child, index) => {
        checkSchema(child, `${path}.properties[${index}].value`, problems);
      });
    }
    if (key === 'items') checkSchema(value, `${path}.items`, problems);
    if (key === 'anyOf' && Array.isArray(value)) {
      value.forEach((child, index) => {
        checkSchema(child, `${path}.any_of[${index}]`, problems);
      });
    }
  }
}

// responseJsonSchema takes JSON Schema; the one structural rule checked is that a $ref stands alone (reported for
// Gemini's Schema.ref; the wording is ours).
function checkJsonSchema(schema: unknown, path: string, problems: string[]): void {
  if (schema === null || typeof schema !== 'object') return;
  if (Array.isArray(schema)) {
    schema.forEach((child, index) => {
      checkJsonSchema(child, `${path}[${index}]`, problems);
    });
    return;
  }
  const record = schema as Record<string, unknown>;
  if (record.$ref !== undefined) {
    const siblings = Object.keys(record).filter((key) => !['$ref', 'description', 'default'].includes(key));
    if (siblings.length > 0) {
      problems.push(
        `Invalid JSON schema at '${path}': a schema with "$ref" may only have "description" and "default" beside it, found ${siblings.map((key) => `"${key}"`).join(', ')}.`,
      );
    }
  }
  for (const [key, value] of Object.entries(record)) {
    if (key === 'properties' || key === '$defs' || key === 'definitions') {
      if (value !== null && typeof value === 'object') {
        for (const [name, child] of Object.entries(value)) checkJsonSchema(child, `${path}.${key}.${name}`, problems);
      }
    } else if (value !== null && typeof value === 'object') {
      checkJsonSchema(value, `${path}.${key}`, problems);
    }
  }
}

interface Identity {
  model: string;
  promptTokens: number;
  index: number;
  includeThoughts: boolean;
}

interface AnswerParts {
  thought: Part | undefined;
  texts: string[];
  calls: Part[];
  /** The signature to attach to the first text part when there is no function call. */
  textSignature: string | undefined;
  usage: Record<string, unknown>;
  finishReason: string;
}

function answerParts(reply: ContentReply, identity: Identity): AnswerParts {
  const gemini3 = /^gemini-3/.test(identity.model);
  let pendingSignature = reply.thinking?.signature;
  const calls: Part[] = (reply.toolCalls ?? []).map((call, callIndex) => {
    const text = argumentsText(call.arguments);
    let args: unknown = text;
    if (reply.malformedToolJson === true) {
      args = truncatedJson(text);
    } else {
      try {
        args = JSON.parse(text);
      } catch {
        // A string that is not JSON: sent as is, which breaks Gemini's schema (args is an object).
      }
    }
    const part: Part = { functionCall: { name: call.name, args } };
    // Gemini 3 signs the first function call of a step; a scripted signature wins, then the thinking's.
    let signature = call.signature;
    if (callIndex === 0) {
      signature ??= pendingSignature ?? (gemini3 ? `fake-thought-signature-${identity.index}` : undefined);
      pendingSignature = undefined;
    }
    if (signature !== undefined) part.thoughtSignature = signature;
    return part;
  });
  const thought =
    reply.thinking !== undefined && identity.includeThoughts ? { text: reply.thinking.text, thought: true } : undefined;
  const texts = reply.text === undefined || reply.text === '' ? [] : [reply.text];
  const output = reply.usage?.output ?? roughTokens([...texts, ...calls.map((call) => JSON.stringify(call))].join(''));
  const thoughts = reply.usage?.thoughts ?? (reply.thinking === undefined ? 0 : roughTokens(reply.thinking.text));
  const cached = reply.usage?.cacheRead ?? 0;
  const prompt = (reply.usage?.input ?? identity.promptTokens) + cached;
  const usage: Record<string, unknown> = {
    promptTokenCount: prompt,
    candidatesTokenCount: output,
    totalTokenCount: prompt + output + thoughts,
    promptTokensDetails: [{ modality: 'TEXT', tokenCount: prompt }],
  };
  if (cached > 0) {
    usage.cachedContentTokenCount = cached;
    usage.cacheTokensDetails = [{ modality: 'TEXT', tokenCount: cached }];
  }
  if (thoughts > 0) usage.thoughtsTokenCount = thoughts;
  return {
    thought,
    texts,
    calls,
    // Gemini 3 thinks on every answer, so a step without a function call still ends with a signed part.
    textSignature:
      pendingSignature ?? (gemini3 && calls.length === 0 ? `fake-thought-signature-${identity.index}` : undefined),
    usage,
    finishReason: reply.stopReason ?? 'STOP',
  };
}

function responseEnvelope(parts: Part[], identity: Identity, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    candidates: [{ content: { parts, role: 'model' }, ...extra, index: 0 }],
    modelVersion: identity.model,
    responseId: `fakeResponse${String(identity.index).padStart(4, '0')}`,
  };
}

function responseObject(reply: ContentReply, identity: Identity): Record<string, unknown> {
  const answer = answerParts(reply, identity);
  const parts: Part[] = [];
  if (answer.thought !== undefined) parts.push(answer.thought);
  for (const [position, text] of answer.texts.entries()) {
    const part: Part = { text };
    if (position === 0 && answer.textSignature !== undefined) part.thoughtSignature = answer.textSignature;
    parts.push(part);
  }
  if (answer.texts.length === 0 && answer.calls.length === 0 && answer.textSignature !== undefined) {
    parts.push({ text: '', thoughtSignature: answer.textSignature });
  }
  parts.push(...answer.calls);
  const envelope = responseEnvelope(parts, identity, { finishReason: answer.finishReason });
  return { ...envelope, usageMetadata: answer.usage };
}

/** The `GenerateContentResponse` chunks of a streamed answer. */
function streamChunks(reply: ContentReply, identity: Identity): (object | string)[] {
  const answer = answerParts(reply, identity);
  const partial = {
    promptTokenCount: answer.usage.promptTokenCount,
    totalTokenCount: answer.usage.promptTokenCount,
    promptTokensDetails: answer.usage.promptTokensDetails,
  };
  const bodies: Part[][] = [];
  if (answer.thought !== undefined) {
    for (const word of splitIntoWords(String(answer.thought.text))) bodies.push([{ text: word, thought: true }]);
  }
  for (const text of answer.texts) for (const word of splitIntoWords(text)) bodies.push([{ text: word }]);
  // Gemini sends each function call whole, in one chunk.
  for (const call of answer.calls) bodies.push([call]);
  // With no function call, Gemini 3 puts the signature on a last, empty text part.
  if (answer.textSignature !== undefined) bodies.push([{ text: '', thoughtSignature: answer.textSignature }]);
  if (bodies.length === 0) bodies.push([{ text: '' }]);
  const chunks: object[] = bodies.map((parts, position) => {
    const last = position === bodies.length - 1;
    const envelope = responseEnvelope(parts, identity, last ? { finishReason: answer.finishReason } : {});
    return { ...envelope, usageMetadata: last ? answer.usage : partial };
  });
  if (reply.streamError !== undefined) {
    const after = Math.min(reply.streamError.afterEvents ?? 1, chunks.length);
    const code = reply.streamError.type === 'RESOURCE_EXHAUSTED' ? 429 : 500;
    const error = googleErrorBody(code, reply.streamError.message);
    if (reply.streamError.type !== undefined) (error.error as Record<string, unknown>).status = reply.streamError.type;
    return [...chunks.slice(0, after), error];
  }
  return chunks;
}

import * as z from 'zod';
import type { ChatMessage, ChatModel, ChatResponse, TokenUsage } from './chat-types.ts';
import { LlmOutputError, LlmResponseMalformedError } from './llm-errors.ts';

export interface StructuredOptions {
  /** Names the schema for the server (`response_format.json_schema.name`). @default 'answer' */
  name?: string;
  signal?: AbortSignal;
  /** Corrective retries after the first answer. @default 3 */
  retries?: number;
}

/**
 * A conversation with one model: `ask` for text, `structured` for data checked against a zod schema. Messages
 * accumulate, so follow-up questions see the earlier turns; usage adds up in `usage`.
 */
export class Conversation {
  readonly model: ChatModel;
  readonly messages: ChatMessage[];
  readonly usage: TokenUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0 };

  constructor(model: ChatModel, options: { system?: string; messages?: ChatMessage[] } = {}) {
    this.model = model;
    this.messages = [
      ...(options.system ? [{ role: 'system' as const, content: options.system }] : []),
      ...(options.messages ?? []),
    ];
  }

  async ask(text: string, options: { signal?: AbortSignal } = {}): Promise<string> {
    this.messages.push({ role: 'user', content: text });
    const response = await this.model.chat(
      { messages: this.messages },
      options.signal ? { signal: options.signal } : {},
    );
    this.#count(response.usage);
    const content = response.message.content ?? '';
    this.messages.push({ role: 'assistant', content });
    return content;
  }

  /**
   * Asks for data matching `schema`. An answer that is not JSON or does not validate is shown back to the model with
   * what is wrong, and it answers again, up to `retries` times: the model learns from the error rather than
   * rolling the dice on the same prompt. Throws LlmOutputError with every attempt when none validates.
   */
  async structured<T>(schema: z.ZodType<T>, text: string, options: StructuredOptions = {}): Promise<T> {
    const schemaBody = jsonSchemaOf(schema);
    // A server that takes `response_format: json_schema` is held to the schema itself; the message then only names
    // the keys and their types (a few tokens) instead of repeating the whole schema.
    const outline = (this.model as { capabilities?: { jsonSchema?: boolean } }).capabilities?.jsonSchema
      ? schemaOutline(schemaBody)
      : undefined;
    this.messages.push({
      role: 'user',
      content:
        outline === undefined
          ? `${text}\n\nAnswer with only a JSON value matching this JSON Schema, no other text:\n${JSON.stringify(schemaBody)}`
          : `${text}\n\nAnswer with only a JSON object, no other text: ${outline}`,
    });
    const attempts: { reply: string; problem: string }[] = [];
    const retries = options.retries ?? 3;
    for (let attempt = 0; attempt <= retries; attempt += 1) {
      let response: ChatResponse | undefined;
      try {
        response = await this.model.chat(
          { messages: this.messages, responseFormat: { name: options.name ?? 'answer', schema: schemaBody } },
          options.signal ? { signal: options.signal } : {},
        );
      } catch (error) {
        // An answer that broke the provider's own format (a forced tool's input that is not JSON, a stream cut off
        // for good) is an invalid answer like any other: the model is asked again, told what was wrong.
        if (!(error instanceof LlmResponseMalformedError)) throw error;
        // Its excerpt is what the model wrote, shown back so it can see the mistake (a broken-off answer has none).
        if (error.excerpt !== '') this.messages.push({ role: 'assistant', content: error.excerpt });
        attempts.push({ reply: error.excerpt, problem: error.message });
      }
      const problem: { ok: true; value: T } | { ok: false; message: string } =
        response === undefined
          ? { ok: false, message: attempts.at(-1)?.problem ?? 'malformed answer' }
          : this.#reply(schema, response);
      if (problem.ok) return problem.value;
      if (response !== undefined) attempts.push({ reply: response.message.content ?? '', problem: problem.message });

      if (attempt < retries) {
        this.messages.push({
          role: 'user',
          content: `That answer is not valid: ${problem.message}. Answer again with only the corrected JSON.`,
        });
      }
    }
    throw new LlmOutputError(
      `${this.model.name}: no valid answer after ${attempts.length} attempts; the last: ${attempts.at(-1)?.problem}`,
      attempts,
    );
  }

  /** Records a structured answer in the conversation and checks it against the schema. */
  #reply<T>(schema: z.ZodType<T>, response: ChatResponse): { ok: true; value: T } | { ok: false; message: string } {
    this.#count(response.usage);
    const reply = response.message.content ?? '';
    this.messages.push({ role: 'assistant', content: reply });
    return check(schema, reply);
  }

  #count(usage: TokenUsage | undefined): void {
    if (!usage) return;
    this.usage.promptTokens += usage.promptTokens;
    this.usage.completionTokens += usage.completionTokens;
    this.usage.totalTokens += usage.totalTokens;
  }
}

/**
 * Each schema's JSON Schema, without `$schema`, made once (a classify task sends the same schema at every message,
 * and making it walks the whole schema); each conversation gets its own copy, which a provider's adapter may change.
 */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  let made = jsonSchemas.get(schema);
  if (made === undefined) {
    const { $schema: _ignored, ...body } = z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<
      string,
      unknown
    >;
    made = body;
    jsonSchemas.set(schema, made);
  }
  return structuredClone(made);
}

function check<T>(schema: z.ZodType<T>, reply: string): { ok: true; value: T } | { ok: false; message: string } {
  const text = reply
    .trim()
    .replace(/^```(?:json)?\s*/i, '')
    .replace(/\s*```$/, '');
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    return { ok: false, message: `it is not JSON (${(error as Error).message})` };
  }
  const result = schema.safeParse(data);
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    message: result.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : 'the value'}: ${issue.message}`)
      .join('; '),
  };
}

/**
 * `{"human": number 0–1, "urgent": true|false, "kind": "a"|"b"}` for a flat object schema of numbers, booleans,
 * strings and enums; undefined for anything else (the full schema is given then).
 */
function schemaOutline(schema: Record<string, unknown>): string | undefined {
  const properties = schema.properties;
  if (schema.type !== 'object' || properties === null || typeof properties !== 'object') return undefined;
  const parts: string[] = [];
  for (const [name, raw] of Object.entries(properties as Record<string, unknown>)) {
    const property = (raw ?? {}) as { type?: unknown; enum?: unknown; minimum?: unknown; maximum?: unknown };
    let type: string;
    if (Array.isArray(property.enum)) type = property.enum.map((value) => JSON.stringify(value)).join('|');
    else if (property.type === 'boolean') type = 'true|false';
    else if (property.type === 'number' || property.type === 'integer') {
      type =
        typeof property.minimum === 'number' && typeof property.maximum === 'number'
          ? `${property.type} ${property.minimum}–${property.maximum}`
          : String(property.type);
    } else if (property.type === 'string') type = 'string';
    else return undefined;
    parts.push(`${JSON.stringify(name)}: ${type}`);
  }
  return `{${parts.join(', ')}}`;
}

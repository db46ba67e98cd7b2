import { isLoopbackHost, type LlmProfile, type LlmProvider } from '@assistant/config';
import * as z from 'zod';
import type { DoctorCheck } from './doctor-check.ts';

export interface CheckLlmProfileOptions {
  name: string;
  /** What the probe uses of a profile: `assistant init` probes one before any config.yaml holds it. */
  profile: Pick<LlmProfile, 'baseUrl' | 'model' | 'apiKey'> & Partial<Pick<LlmProfile, 'provider'>>;
  /** Where the profile is written, `config.yaml:12`, named in a failure. @default not named */
  where?: string;
  /** @default 5000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

// OpenAI-compatible servers answer GET /models with `{data: [{id}]}`; anything else still proves reachability.
const modelList = z.object({ data: z.array(z.object({ id: z.string() })) });

/**
 * Asks the profile's endpoint about its model: proves the server is up, the key accepted and the model known. An
 * OpenAI-compatible server is asked for its list (`GET /models`, which every such server has); OpenAI, Anthropic
 * and Gemini are asked for the one model (`GET /models/{model}`, with each provider's own key header).
 */
export async function checkLlmProfile(options: CheckLlmProfileOptions): Promise<DoctorCheck> {
  const provider = options.profile.provider ?? 'openai-compatible';
  if (provider !== 'openai-compatible') return checkProviderModel({ ...options, provider });
  const { name, profile } = options;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const url = `${profile.baseUrl.replace(/\/+$/, '')}/models`;
  const label = `llm ${name}${options.where ? ` (${options.where})` : ''}: GET ${url}`;
  const timeout = AbortSignal.timeout(timeoutMs);
  let status: number;
  let body: string;
  try {
    const response = await fetch(url, {
      headers: profile.apiKey ? { authorization: `Bearer ${profile.apiKey.reveal()}` } : {},
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
    });
    status = response.status;
    body = await response.text();
  } catch (error) {
    return {
      ok: false,
      message: `${label} failed: ${describeFetchError(error, timeoutMs)}`,
      hint: unreachableHint(profile),
    };
  }
  if (status < 200 || status > 299) {
    return { ok: false, message: `${label} answered HTTP ${status}`, hint: statusHint(status) };
  }
  const models = parseModels(body);
  if (models === undefined) return { ok: true, message: `${label} answered HTTP ${status}` };
  // Ollama lists `llama3.2:latest` for a model configured as `llama3.2`.
  if (models.some((id) => id === profile.model || id === `${profile.model}:latest`)) {
    return { ok: true, message: `${label} answered HTTP ${status}, model ${profile.model} available` };
  }
  return {
    ok: false,
    message: `${label} answered HTTP ${status}, but model ${profile.model} is not among the ${models.length} it serves`,
    hint:
      models.length > 0
        ? `served: ${models.slice(0, 10).join(', ')}${models.length > 10 ? ', …' : ''} (with Ollama: \`ollama pull ${profile.model}\`)`
        : `with Ollama: \`ollama pull ${profile.model}\``,
  };
}

/** The request that asks a provider about one model, with its own way of sending the key. */
function modelRequest(
  provider: Exclude<LlmProvider, 'openai-compatible'>,
  baseUrl: string,
  model: string,
  key: string,
) {
  // Gemini names models `models/gemini-2.5-flash`; a profile may write either form.
  const id = provider === 'google' ? model.replace(/^models\//, '') : model;
  const url = `${baseUrl.replace(/\/+$/, '')}/models/${encodeURIComponent(id)}`;
  const headers: Record<string, string> =
    provider === 'anthropic'
      ? { 'x-api-key': key, 'anthropic-version': '2023-06-01' }
      : provider === 'google'
        ? { 'x-goog-api-key': key }
        : { authorization: `Bearer ${key}` };
  return { url, headers };
}

async function checkProviderModel(
  options: CheckLlmProfileOptions & { provider: Exclude<LlmProvider, 'openai-compatible'> },
): Promise<DoctorCheck> {
  const { name, profile, provider } = options;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const where = options.where ? ` (${options.where})` : '';
  const { url, headers } = modelRequest(provider, profile.baseUrl, profile.model, profile.apiKey?.reveal() ?? '');
  const label = `llm ${name}${where}: ${provider} GET ${url}`;
  const timeout = AbortSignal.timeout(timeoutMs);
  let status: number;
  let body: string;
  try {
    const response = await fetch(url, {
      headers,
      signal: options.signal ? AbortSignal.any([options.signal, timeout]) : timeout,
    });
    status = response.status;
    body = await response.text();
  } catch (error) {
    return {
      ok: false,
      message: `${label} failed: ${describeFetchError(error, timeoutMs)}`,
      hint: unreachableHint(profile),
    };
  }
  if (status >= 200 && status <= 299) {
    return { ok: true, message: `${label} answered HTTP ${status}, model ${profile.model} available` };
  }
  // Gemini answers a wrong key with 400 API_KEY_INVALID rather than 401.
  const keyRefused =
    status === 401 || status === 403 || (provider === 'google' && status === 400 && /API_KEY_INVALID/.test(body));
  if (keyRefused) {
    return {
      ok: false,
      message: `${label} answered HTTP ${status}: the api_key was refused`,
      hint: `check \`api_key\` of \`llms.${name}\` and its value in secrets.yaml`,
    };
  }
  if (status === 404) {
    return {
      ok: false,
      message: `${label} answered HTTP 404: the provider does not know model ${profile.model}`,
      hint: `check \`model\` of \`llms.${name}\`; ${modelNameHint(provider)}`,
    };
  }
  return { ok: false, message: `${label} answered HTTP ${status}`, hint: statusHint(status) };
}

function modelNameHint(provider: Exclude<LlmProvider, 'openai-compatible'>): string {
  if (provider === 'anthropic') return 'Anthropic model ids look like claude-sonnet-4-5 (see GET /v1/models)';
  if (provider === 'google') return 'Gemini model ids look like gemini-2.5-flash (see GET /v1beta/models)';
  return 'OpenAI model ids look like gpt-4.1 (see GET /v1/models)';
}

function parseModels(body: string): string[] | undefined {
  try {
    const parsed = modelList.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data.data.map((model) => model.id) : undefined;
  } catch {
    return undefined;
  }
}

function describeFetchError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${timeoutMs / 1000}s`;
  // fetch wraps the socket error: `TypeError: fetch failed` with the useful code in `cause`.
  const cause = error instanceof Error ? error.cause : undefined;
  const code = (cause as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string') return code;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function unreachableHint(profile: Pick<LlmProfile, 'baseUrl'>): string {
  const host = new URL(profile.baseUrl).hostname;
  return isLoopbackHost(host)
    ? 'is the LLM server running on this machine? For Ollama: `ollama serve`'
    : `is ${host} reachable from here, and is \`base_url\` right?`;
}

function statusHint(status: number): string {
  if (status === 401 || status === 403)
    return 'the endpoint refused the key: check `api_key` (or `token`) in the profile and secrets.yaml';
  if (status === 404) return '`base_url` should be the API root that has /models, e.g. http://127.0.0.1:11434/v1';
  return 'the endpoint is up but unhappy; its own logs say more';
}

import { isLoopbackHost, type LlmProfile } from '@assistant/config';
import * as z from 'zod';
import type { DoctorCheck } from './doctor-check.ts';

export interface CheckLlmProfileOptions {
  name: string;
  /** What the probe uses of a profile: `assistant init` probes one before any config.yaml holds it. */
  profile: Pick<LlmProfile, 'baseUrl' | 'model' | 'token'>;
  /** @default 5000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

// OpenAI-compatible servers answer GET /models with `{data: [{id}]}`; anything else still proves reachability.
const modelList = z.object({ data: z.array(z.object({ id: z.string() })) });

/** Asks the profile's endpoint for its models: proves the server is up, the token accepted and the model served. */
export async function checkLlmProfile(options: CheckLlmProfileOptions): Promise<DoctorCheck> {
  const { name, profile } = options;
  const timeoutMs = options.timeoutMs ?? 5_000;
  const url = `${profile.baseUrl.replace(/\/+$/, '')}/models`;
  const label = `llm ${name}: GET ${url}`;
  const timeout = AbortSignal.timeout(timeoutMs);
  let status: number;
  let body: string;
  try {
    const response = await fetch(url, {
      headers: profile.token ? { authorization: `Bearer ${profile.token.reveal()}` } : {},
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
    return 'the endpoint refused the token: check `token` in the profile and secrets.yaml';
  if (status === 404) return '`base_url` should be the API root that has /models, e.g. http://127.0.0.1:11434/v1';
  return 'the endpoint is up but unhappy; its own logs say more';
}

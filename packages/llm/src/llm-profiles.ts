import path from 'node:path';
import type { LoadedConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { ChatModel, TokenUsage } from './chat-types.ts';
import { createOpenAiChatModel } from './openai-chat-model.ts';
import { type CacheMode, createRecordReplayFetch } from './record-replay/record-replay-fetch.ts';

export interface LlmProfilesOptions {
  config: Pick<LoadedConfig, 'llms' | 'llmCache' | 'paths'>;
  /** Overrides `llm_cache.mode`, e.g. from ASSISTANT_LLM_CACHE in tests. */
  cacheMode?: CacheMode;
  onUsage?: (profile: string, usage: TokenUsage, model: string) => void;
  /** For tests: the fetch under the cache. */
  fetch?: typeof fetch;
}

/** The named LLM profiles of config.yaml as models, created on first use. `llm()` is the `default` profile. */
export function createLlmProfiles(options: LlmProfilesOptions): (profile?: string) => ChatModel {
  const models = new Map<string, ChatModel>();
  const mode = options.cacheMode ?? options.config.llmCache.mode;
  const cachedFetch =
    mode === 'off'
      ? options.fetch
      : createRecordReplayFetch({
          mode,
          directory: path.resolve(path.dirname(options.config.paths.configFile), options.config.llmCache.directory),
          ...(options.fetch ? { fetch: options.fetch } : {}),
        });
  return (name = 'default') => {
    let model = models.get(name);
    if (model) return model;
    const profile = options.config.llms[name];
    if (!profile) {
      const names = Object.keys(options.config.llms);
      throw new AssistantError('CONFIG_INVALID', `there is no LLM profile \`${name}\` under \`llms:\``, {
        hint: names.length > 0 ? `profiles: ${names.join(', ')}` : 'add one under `llms:` in config.yaml',
      });
    }
    model = createOpenAiChatModel({
      name,
      baseUrl: profile.baseUrl,
      model: profile.model,
      token: profile.token?.reveal(),
      parameters: profile.parameters,
      timeoutMs: profile.timeoutMs,
      maxRetries: profile.maxRetries,
      capabilities: {
        ...profile.capabilities,
        ...(profile.contextWindow ? { contextWindow: profile.contextWindow } : {}),
      },
      ...(cachedFetch ? { fetch: cachedFetch } : {}),
      ...(options.onUsage ? { onUsage: (usage, model) => options.onUsage?.(name, usage, model) } : {}),
    });
    models.set(name, model);
    return model;
  };
}

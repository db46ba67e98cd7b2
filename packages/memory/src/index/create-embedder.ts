import type { Embedder } from '../memory-types.ts';
import { HashingEmbedder } from './hashing-embedder.ts';
import { OpenAiEmbedder } from './openai-embedder.ts';

/** The `embeddings:` section of config.yaml, as the config package hands it over (the key already resolved). */
export interface EmbeddingsConfig {
  base_url: string;
  model: string;
  api_key?: string | undefined;
  timeout_ms?: number | undefined;
  batch_size?: number | undefined;
}

/** The embedder for a config: the endpoint's when `embeddings:` is set, else the offline hashing embedder. */
export function createEmbedder(config?: EmbeddingsConfig): Embedder {
  if (config === undefined) return new HashingEmbedder();
  return new OpenAiEmbedder({
    baseUrl: config.base_url,
    model: config.model,
    apiKey: config.api_key,
    ...(config.timeout_ms === undefined ? {} : { timeoutMs: config.timeout_ms }),
    ...(config.batch_size === undefined ? {} : { batchSize: config.batch_size }),
  });
}

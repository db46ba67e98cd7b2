import { formatDuration } from '@assistant/queue';
import { Document, type Node, Pair, Scalar, YAMLMap, YAMLSeq } from 'yaml';
import type { Action, Config, IntegrationInstance, PlatformConfig, QueuePolicy } from './schema.ts';
import { Secret } from './secret.ts';
import { Yolo } from './yolo.ts';

type Plain = unknown;

const defined = (entries: Record<string, Plain>): Record<string, Plain> =>
  Object.fromEntries(Object.entries(entries).filter(([, value]) => value !== undefined));

function action(value: Action): Plain {
  let written: Plain;
  if (value.kind === 'platform') {
    written = value.argument === undefined ? value.action : { [value.action]: value.argument };
  } else if (value.kind === 'script') {
    written = { script: value.script, inputs: value.inputs };
  } else {
    written = {
      service: defined({
        call: value.call,
        inputs: value.inputs,
        human_log: value.humanLog,
        on_result: value.onResult,
      }),
    };
  }
  return value.yolo ? new Yolo(written) : written;
}

function platform(value: PlatformConfig): Plain {
  return {
    ...value.settings,
    enabled: value.enabled,
    classifications: Object.fromEntries(
      Object.entries(value.classifications).map(([name, classification]) => [name, { ...classification }]),
    ),
    automations: value.automations.map((automation) =>
      defined({
        name: automation.name,
        when: automation.when,
        // biome-ignore lint/suspicious/noThenProperty: the config key is `then:`.
        then: automation.actions.map(action),
        approval: automation.approval ? 'required' : undefined,
        approval_expires:
          automation.approvalExpiresMs === undefined ? undefined : formatDuration(automation.approvalExpiresMs),
      }),
    ),
  };
}

function integration(value: IntegrationInstance): Plain {
  const schedule =
    value.schedule === undefined
      ? undefined
      : value.schedule.kind === 'every'
        ? { every: formatDuration(value.schedule.everyMs), catch_up: value.schedule.catchUp ?? true }
        : defined({
            cron: value.schedule.expression,
            timezone: value.schedule.timezone,
            catch_up: value.schedule.catchUp ?? true,
          });
  return defined({
    ...value.settings,
    type: value.type,
    name: value.name,
    enabled: value.enabled,
    // Only when on: a config without shadow mode serialises as it did before the key existed.
    shadow: value.shadow ? true : undefined,
    schedule,
    llm: value.llm,
    platforms: Object.fromEntries(Object.entries(value.platforms).map(([name, config]) => [name, platform(config)])),
  });
}

function policy(value: Partial<QueuePolicy>): Plain {
  return defined({
    dedup: value.dedup,
    rate_limit:
      value.rateLimit === undefined
        ? undefined
        : value.rateLimit === null
          ? null
          : { max: value.rateLimit.max, per: formatDuration(value.rateLimit.perMs) },
    max_attempts: value.maxAttempts,
    backoff:
      value.backoff === undefined
        ? undefined
        : {
            type: value.backoff.type,
            delay: formatDuration(value.backoff.delayMs),
            max: formatDuration(value.backoff.maxMs),
          },
    timeout: value.timeoutMs === undefined ? undefined : formatDuration(value.timeoutMs),
  });
}

/** The config as canonical YAML data: every shorthand expanded, every default written out. */
function toPlain(config: Config): Plain {
  return {
    data_dir: config.dataDir,
    directories: defined({ ...config.directories }),
    integration_dirs: config.integrationDirs,
    integration_packages: config.integrationPackages,
    llms: Object.fromEntries(
      Object.entries(config.llms).map(([name, profile]) => [
        name,
        defined({
          provider: profile.provider,
          base_url: profile.baseUrl,
          model: profile.model,
          api_key: profile.apiKey,
          parameters: profile.parameters,
          timeout: formatDuration(profile.timeoutMs),
          context_window: profile.contextWindow,
          capabilities:
            Object.keys(profile.capabilities).length === 0
              ? undefined
              : defined({ tools: profile.capabilities.tools, json_schema: profile.capabilities.jsonSchema }),
          max_retries: profile.maxRetries,
          max_in_flight: profile.maxInFlight,
          requests_per_minute: profile.requestsPerMinute,
          tokens_per_minute: profile.tokensPerMinute,
          prices:
            profile.prices === undefined
              ? undefined
              : {
                  input: profile.prices.input,
                  output: profile.prices.output,
                  cached_input: profile.prices.cachedInput,
                  cache_write: profile.prices.cacheWrite,
                },
          prompt_cache: profile.promptCache ? undefined : false,
        }),
      ]),
    ),
    llm_cache: { mode: config.llmCache.mode, directory: config.llmCache.directory },
    integrations: config.integrations.map(integration),
    scripts: Object.fromEntries(
      Object.entries(config.scripts).map(([name, script]) => [
        name,
        defined({
          description: script.description,
          shell: 'shell' in script ? script.shell : undefined,
          node: 'node' in script ? script.node : undefined,
          inputs: script.inputs,
          timeout: formatDuration(script.timeoutMs),
          reversible: script.reversible,
          network: script.network,
        }),
      ]),
    ),
    mcp_servers: Object.fromEntries(
      Object.entries(config.mcpServers).map(([name, server]) => [
        name,
        {
          ...(server.transport === 'stdio'
            ? defined({ command: server.command, args: server.args, env: server.env, cwd: server.cwd })
            : { url: server.url, headers: server.headers }),
          allow: server.allow,
          deny: server.deny,
          read_only: server.readOnly,
          timeout: formatDuration(server.timeoutMs),
          trust_annotations: server.trustAnnotations,
          max_response_bytes: server.maxResponseBytes,
        },
      ]),
    ),
    queue: {
      durability: config.queue.durability,
      max_task_bytes: config.queue.maxTaskBytes,
      claim_grace: formatDuration(config.queue.claimGraceMs),
      retention: {
        done: formatDuration(config.queue.retention.doneMs),
        failed: formatDuration(config.queue.retention.failedMs),
      },
      policies: {
        defaults: policy(config.queue.policies.defaults),
        overrides: Object.fromEntries(
          Object.entries(config.queue.policies.overrides).map(([pattern, override]) => [pattern, policy(override)]),
        ),
      },
    },
    server: defined({
      host: config.server.host,
      port: config.server.port,
      token: config.server.token,
      allowed_hosts: config.server.allowedHosts,
      event_streams_per_client: config.server.eventStreamsPerClient,
      dashboard: config.server.dashboard,
    }),
    worker: {
      concurrency: config.worker.concurrency,
      poll_interval: formatDuration(config.worker.pollIntervalMs),
      shutdown_grace: formatDuration(config.worker.shutdownGraceMs),
      sandbox: config.worker.sandbox,
      model_backlog: config.worker.modelBacklog,
    },
    circuit_breaker: {
      failures: config.circuitBreaker.failures,
      pause: formatDuration(config.circuitBreaker.pauseMs),
    },
    events: { retention_days: config.events.retentionDays },
    human_log: config.humanLog.retentionDays === undefined ? {} : { retention_days: config.humanLog.retentionDays },
    agents: { max_live: config.agents.maxLive },
    approvals: { expires: formatDuration(config.approvals.expiresMs) },
    tools: {
      allow: config.tools.allow,
      deny: config.tools.deny,
      approve: config.tools.approve,
      approval_timeout: formatDuration(config.tools.approvalTimeoutMs),
    },
    owner: { timezone: config.owner.timeZone, currency: config.owner.currency },
    ...(config.embeddings === undefined
      ? {}
      : {
          embeddings: defined({
            base_url: config.embeddings.baseUrl,
            model: config.embeddings.model,
            api_key: config.embeddings.apiKey,
            timeout: formatDuration(config.embeddings.timeoutMs),
          }),
        }),
    memory: defined({
      consolidate: config.memory.consolidate,
      // The implied `default` stays implied: written out, it would be checked as a profile named by hand, and a
      // config without any LLM would no longer load.
      llm: config.memory.llm === 'default' ? undefined : config.memory.llm,
      owner_identities: config.memory.ownerIdentities.length > 0 ? config.memory.ownerIdentities : undefined,
      context: { facts: config.memory.context.facts, guidance: config.memory.context.guidance },
    }),
    // Hooks are kept as written (@assistant/hooks normalises them), `!yolo` tags included.
    ...(config.hooks.length > 0 ? { hooks: config.hooks } : {}),
  };
}

function toNode(value: Plain): Node {
  if (value instanceof Secret) {
    // Named secrets go back as references; an inline secret can only be written as itself.
    if (value.name === 'inline') return new Scalar(value.reveal());
    const node = new Scalar(value.name);
    node.tag = '!secret';
    return node;
  }
  if (value instanceof Yolo) {
    const node = toNode(value.value);
    node.tag = '!yolo';
    return node;
  }
  if (Array.isArray(value)) {
    const sequence = new YAMLSeq();
    for (const item of value) sequence.items.push(toNode(item));
    return sequence;
  }
  if (value !== null && typeof value === 'object') {
    const map = new YAMLMap();
    for (const [key, item] of Object.entries(value)) map.items.push(new Pair(new Scalar(key), toNode(item)));
    return map;
  }
  return new Scalar(value);
}

/** YAML text for plain data in which Secret and Yolo markers become `!secret` and `!yolo` tags. */
export function toYamlText(value: unknown): string {
  const document = new Document();
  document.contents = toNode(value) as never;
  return document.toString({ lineWidth: 0 });
}

/**
 * The config as config.yaml's own keys and units (`poll_interval: 5m`, not `pollIntervalMs: 300000`), every default
 * written out, secrets still `Secret`s: what the dashboard's Config page shows.
 */
export function configData(config: Config): Record<string, unknown> {
  return toPlain(config) as Record<string, unknown>;
}

/**
 * Writes a normalised config back as config.yaml text in canonical form (no shorthands, defaults explicit).
 * Loading the result gives the same config: the round-trip property the tests check.
 */
export function serializeConfig(config: Config): string {
  return toYamlText(toPlain(config));
}

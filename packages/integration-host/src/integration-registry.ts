import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ActionRegistry, HookAuthority } from '@assistant/actions';
import type { CompiledRule } from '@assistant/automations';
import { compilePlatformAutomations } from '@assistant/automations';
import type { IntegrationConfigSchema, LoadedConfig, Schedule } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { DiscoveredIntegration } from '@assistant/manifests';
import { handlerReferencePattern, ManifestError, type ManifestProblem, settingsShape } from '@assistant/manifests';
import type { JsonValue, Task } from '@assistant/queue';
import * as z from 'zod';
import type { PlatformContext, TaskHandler } from './handler-context.ts';

export type TaskTypeKind = 'stage' | 'service' | 'task';

/** A handler reference as a manifest writes it (`./src/check.ts#check`), resolved, and where it is written. */
export interface HandlerReference {
  reference: string;
  /** The module's absolute path (it may lie outside the integration's folder: every check refuses that). */
  module: string;
  exportName: string;
  /** The key the reference is written at, for the manifest's line in errors. */
  manifestKey: (string | number)[];
}

export type InboundKind = 'listener' | 'webhook';

/** A listener or webhook some manifest declares, with the handler that runs it (for each enabled instance). */
export interface InboundHandlerInfo {
  kind: InboundKind;
  /** Its name under `listeners:` or `webhooks:`. */
  name: string;
  domain: string;
  handler: HandlerReference;
  integration: DiscoveredIntegration;
}

/**
 * A listener's or webhook's function, before it is narrowed to `ListenerFunction` or `WebhookFunction` (which live
 * beside the code that calls them).
 */
export type InboundFunction = (context: never) => Promise<unknown>;

/** Which handlers a check covers. */
export interface HandlerSelection {
  /** The handlers of every task type (stages, services, tasks): what the worker runs. @default true */
  taskTypes?: boolean;
  /**
   * Listeners' and webhooks' handlers, what the server runs: `'enabled'` those of integrations with an enabled
   * instance (the ones the server starts and mounts), `'all'` those of every manifest.
   * @default 'none'
   */
  inbound?: 'none' | 'enabled' | 'all';
}

/** Anything that names a handler in a manifest: a task type or a listener or webhook. */
type HandlerSite = Pick<TaskTypeInfo, 'handler' | 'integration'>;

/** An integration's check of one instance for `assistant doctor`. */
export type DoctorCheckFunction = (options: {
  instance: { name: string; settings: Record<string, unknown> };
  signal: AbortSignal;
  /** config.yaml, for settings that are paths relative to it. */
  configFile: string;
}) => Promise<{ ok: boolean; message: string; hint?: string }>;

/** A task type some manifest declares, with the handler that runs it. */
export interface TaskTypeInfo {
  type: string;
  kind: TaskTypeKind;
  domain: string;
  /** For stages. */
  platform?: string;
  stage?: string;
  /** For services. */
  service?: string;
  /** The priority tasks of this type get unless the enqueuer says otherwise. */
  priority: number;
  /** True for the stage a platform's schedule and triggers enqueue. */
  entry: boolean;
  description?: string;
  /** The handler reference as written (`./src/check.ts#check`) and where. */
  handler: HandlerReference;
  integration: DiscoveredIntegration;
}

/** An integration instance: one from config.yaml, or a manifest's default instance. */
export interface RuntimeInstance {
  name: string;
  domain: string;
  enabled: boolean;
  /** Shadow mode (`shadow: true`): the rules' actions become proposals, nothing is done (decision 0031). */
  shadow: boolean;
  schedule?: Schedule;
  llm: string;
  settings: Record<string, unknown>;
  platforms: Record<string, PlatformContext>;
  /** False for a manifest's default instance, which config.yaml does not list. */
  configured: boolean;
}

/** The config schema an integration's manifest contributes: its instances are checked key by key. */
export function integrationConfigSchemas(integrations: readonly DiscoveredIntegration[]): IntegrationConfigSchema[] {
  return integrations.map(({ manifest }) => ({
    type: manifest.domain,
    settings: settingsShape(manifest.config),
    platforms: Object.fromEntries(
      Object.entries(manifest.platforms).map(([name, platform]) => [
        name,
        { settings: settingsShape(platform.config) },
      ]),
    ),
  }));
}

export type EntryTaskResult =
  | { ok: true; type: string; priority: number; integration: string; payload: JsonValue }
  | { ok: false; status: 404 | 409; message: string };

/**
 * Everything the manifests declare, joined with config.yaml's instances: which task types exist, which handler runs
 * each, which instance a task belongs to, what each schedule enqueues. Built once per process start.
 */
export class IntegrationRegistry implements ActionRegistry {
  readonly integrations: readonly DiscoveredIntegration[];
  readonly #types = new Map<string, TaskTypeInfo>();
  /** Listeners and webhooks, by `domain`, kind and name. */
  readonly #inbound = new Map<string, InboundHandlerInfo>();
  readonly #instances = new Map<string, RuntimeInstance>();
  readonly #rules = new Map<string, CompiledRule[]>();
  readonly #config: LoadedConfig;
  /** Handler modules being imported or imported, by path: each is imported once. */
  readonly #modules = new Map<string, Promise<Record<string, unknown>>>();
  readonly #hooks: ReadonlyMap<string, HookAuthority>;

  constructor(options: {
    integrations: readonly DiscoveredIntegration[];
    config: LoadedConfig;
    /** The loaded hooks (`loadRuntime` compiles them), for the gate's check of what a hook enqueued. @default none */
    hooks?: readonly (HookAuthority & { name: string })[];
  }) {
    this.integrations = options.integrations;
    this.#config = options.config;
    this.#hooks = new Map((options.hooks ?? []).map((hook) => [hook.name, hook]));
    for (const integration of options.integrations) {
      this.#addTypes(integration);
      this.#addInbound(integration);
    }
    this.#addInstances(options.config);
  }

  /** A loaded hook by name: the gate checks a script or service task a hook enqueued against it. */
  hook(name: string): HookAuthority | undefined {
    return this.#hooks.get(name);
  }

  /**
   * The compiled automations of an instance's platform. Rules with problems are left out (config loading reports
   * them), so nothing here can take an action the platform does not allow.
   */
  automations(instanceName: string, platformName: string): CompiledRule[] {
    const key = `${instanceName}\u0000${platformName}`;
    let rules = this.#rules.get(key);
    if (!rules) {
      const instance = this.#instances.get(instanceName);
      const platform = this.manifestPlatform(instance?.domain ?? '', platformName);
      const platformConfig = instance?.platforms[platformName];
      rules =
        platform && platformConfig
          ? compilePlatformAutomations({
              config: this.#config,
              integrations: this.integrations,
              platform,
              platformConfig,
            }).rules
          : [];
      this.#rules.set(key, rules);
    }
    return rules;
  }

  /** A platform as its manifest declares it (stages, fields, actions). */
  manifestPlatform(domain: string, platformName: string) {
    return this.integrations.find((integration) => integration.manifest.domain === domain)?.manifest.platforms[
      platformName
    ];
  }

  #addTypes(integration: DiscoveredIntegration): void {
    const { manifest } = integration;
    const add = (
      info: Omit<TaskTypeInfo, 'handler' | 'integration'>,
      reference: string,
      manifestKey: (string | number)[],
    ) => {
      this.#types.set(info.type, {
        ...info,
        handler: handlerReference(integration, reference, manifestKey),
        integration,
      });
    };
    for (const [platformName, platform] of Object.entries(manifest.platforms)) {
      for (const [stageName, stage] of Object.entries(platform.stages)) {
        add(
          {
            type: `${manifest.domain}.${platformName}.${stageName}`,
            kind: 'stage',
            domain: manifest.domain,
            platform: platformName,
            stage: stageName,
            priority: stage.priority,
            entry: platform.entry === stageName,
            ...(stage.description === undefined ? {} : { description: stage.description }),
          },
          stage.handler,
          ['platforms', platformName, 'stages', stageName, 'handler'],
        );
      }
    }
    for (const [serviceName, service] of Object.entries(manifest.services)) {
      add(
        {
          type: `service.${manifest.domain}.${serviceName}`,
          kind: 'service',
          domain: manifest.domain,
          service: serviceName,
          priority: service.priority,
          entry: false,
          ...(service.description === undefined ? {} : { description: service.description }),
        },
        service.handler,
        ['services', serviceName, 'handler'],
      );
    }
    for (const [taskName, task] of Object.entries(manifest.tasks)) {
      add(
        {
          type: `${manifest.domain}.${taskName}`,
          kind: 'task',
          domain: manifest.domain,
          priority: task.priority,
          entry: false,
          ...(task.description === undefined ? {} : { description: task.description }),
        },
        task.handler,
        ['tasks', taskName, 'handler'],
      );
    }
  }

  #addInbound(integration: DiscoveredIntegration): void {
    const { manifest } = integration;
    const declared = [
      ...Object.entries(manifest.listeners).map(
        ([name, { handler }]) => ['listener', 'listeners', name, handler] as const,
      ),
      ...Object.entries(manifest.webhooks).map(
        ([name, { handler }]) => ['webhook', 'webhooks', name, handler] as const,
      ),
    ];
    for (const [kind, key, name, reference] of declared) {
      this.#inbound.set(inboundKey(manifest.domain, kind, name), {
        kind,
        name,
        domain: manifest.domain,
        handler: handlerReference(integration, reference, [key, name, 'handler']),
        integration,
      });
    }
  }

  #addInstances(config: LoadedConfig): void {
    const byDomain = new Map(this.integrations.map((integration) => [integration.manifest.domain, integration]));
    for (const instance of config.integrations) {
      const integration = byDomain.get(instance.type);
      if (!integration) continue; // config validation already refused unknown types
      const platforms: Record<string, PlatformContext> = {};
      for (const [name, platform] of Object.entries(integration.manifest.platforms)) {
        const configured = instance.platforms[name];
        const base = configured
          ? { name, ...configured }
          : defaultPlatform(name, platform.config as Record<string, never>);
        platforms[name] = { ...base, classifications: { ...platform.classifications, ...base.classifications } };
      }
      this.#instances.set(instance.name, {
        name: instance.name,
        domain: instance.type,
        enabled: instance.enabled,
        shadow: instance.shadow,
        ...(instance.schedule ? { schedule: instance.schedule } : {}),
        llm: instance.llm ?? 'default',
        settings: instance.settings,
        platforms,
        configured: true,
      });
    }
    for (const integration of this.integrations) {
      const { manifest } = integration;
      const fallback = manifest.default_instance;
      if (!fallback || this.#instances.has(fallback.name)) continue;
      if ([...this.#instances.values()].some((instance) => instance.domain === manifest.domain)) continue;
      const settings = z.strictObject(settingsShape(manifest.config)).safeParse({});
      const platforms: Record<string, PlatformContext> = {};
      for (const [name, platform] of Object.entries(manifest.platforms)) {
        const base = defaultPlatform(name, platform.config as Record<string, never>);
        platforms[name] = { ...base, classifications: { ...platform.classifications } };
      }
      this.#instances.set(fallback.name, {
        name: fallback.name,
        domain: manifest.domain,
        enabled: settings.success,
        shadow: false,
        ...(fallback.schedule ? { schedule: fallback.schedule } : {}),
        llm: 'default',
        settings: settings.success ? (settings.data as Record<string, unknown>) : {},
        platforms,
        configured: false,
      });
    }
  }

  /** Every task type with a handler, sorted by type. */
  taskTypes(): TaskTypeInfo[] {
    return [...this.#types.values()].sort((left, right) => left.type.localeCompare(right.type));
  }

  taskType(type: string): TaskTypeInfo | undefined {
    return this.#types.get(type);
  }

  /**
   * Every listener and webhook the manifests declare, in manifest order; with `enabledOnly`, only those of
   * integrations with at least one enabled instance (the ones the server runs).
   */
  inboundHandlers(options: { enabledOnly?: boolean } = {}): InboundHandlerInfo[] {
    const all = [...this.#inbound.values()];
    if (!options.enabledOnly) return all;
    const enabled = new Set(this.instances().flatMap((instance) => (instance.enabled ? [instance.domain] : [])));
    return all.filter((info) => enabled.has(info.domain));
  }

  /**
   * The function a listener or webhook runs, its module imported on the first call (and shared with every other
   * handler of that module). Throws {@link ManifestError} at the manifest's line when it is not declared, or its
   * module or export is broken.
   */
  async inboundHandler(options: { domain: string; kind: InboundKind; name: string }): Promise<InboundFunction> {
    const info = this.#inbound.get(inboundKey(options.domain, options.kind, options.name));
    if (!info) {
      // The server asks only for what the manifests declare (listenerSpecs, findWebhook): this is a bug of ours.
      throw new AssistantError(
        'INTERNAL',
        `the ${options.domain} integration declares no ${options.kind} \`${options.name}\``,
      );
    }
    const loaded = await this.#importHandler(info);
    if ('problem' in loaded) throw new ManifestError([loaded.problem], brokenHandlerHint);
    return loaded.handler as InboundFunction;
  }

  instances(): RuntimeInstance[] {
    return [...this.#instances.values()];
  }

  instance(name: string): RuntimeInstance | undefined {
    return this.#instances.get(name);
  }

  /**
   * The instance a task runs for: the one it names, which must be of the type's domain; a task that names none
   * (one enqueued by hand) runs for the domain's only instance.
   */
  instanceForTask(
    task: Pick<Task, 'type' | 'integration'>,
  ): { ok: true; instance: RuntimeInstance } | { ok: false; message: string } {
    const info = this.#types.get(task.type);
    if (!info) return { ok: false, message: `no integration handles task type ${task.type}` };
    if (task.integration !== undefined) {
      const instance = this.#instances.get(task.integration);
      if (!instance)
        return {
          ok: false,
          message: `the task names integration instance \`${task.integration}\`, which config.yaml does not define`,
        };
      if (instance.domain !== info.domain) {
        return {
          ok: false,
          message: `instance \`${task.integration}\` is a ${instance.domain} integration; ${task.type} belongs to ${info.domain}`,
        };
      }
      return { ok: true, instance };
    }
    const candidates = this.instances().filter((instance) => instance.domain === info.domain);
    if (candidates.length === 1 && candidates[0]) return { ok: true, instance: candidates[0] };
    if (candidates.length === 0 && info.kind !== 'stage') {
      // Services and plain tasks can run without configuration of their own (system.echo, a stateless service).
      return {
        ok: true,
        instance: {
          name: info.domain,
          domain: info.domain,
          enabled: true,
          shadow: false,
          llm: 'default',
          settings: {},
          platforms: {},
          configured: false,
        },
      };
    }
    return {
      ok: false,
      message:
        candidates.length === 0
          ? `no instance of the ${info.domain} integration is configured`
          : `the task names no \`integration\` and there are ${candidates.length} ${info.domain} instances (${candidates.map((instance) => instance.name).join(', ')})`,
    };
  }

  /** The task a manual trigger of an instance's platform enqueues. */
  entryTask(instanceName: string, platformName: string): EntryTaskResult {
    const instance = this.#instances.get(instanceName);
    if (!instance) {
      const names = this.instances().map((candidate) => candidate.name);
      return {
        ok: false,
        status: 404,
        message: `no integration instance \`${instanceName}\`; configured: ${names.join(', ') || 'none'}`,
      };
    }
    const integration = this.integrations.find((candidate) => candidate.manifest.domain === instance.domain);
    const platform = integration?.manifest.platforms[platformName];
    if (!integration || !platform) {
      const names = Object.keys(integration?.manifest.platforms ?? {});
      return {
        ok: false,
        status: 404,
        message: `the ${instance.domain} integration has no platform \`${platformName}\`; it has: ${names.join(', ') || 'none'}`,
      };
    }
    if (!instance.enabled)
      return { ok: false, status: 409, message: `instance \`${instanceName}\` is disabled in config.yaml` };
    if (instance.platforms[platformName]?.enabled === false) {
      return {
        ok: false,
        status: 409,
        message: `platform \`${platformName}\` of \`${instanceName}\` is disabled in config.yaml`,
      };
    }
    const type = `${instance.domain}.${platformName}.${platform.entry}`;
    return {
      ok: true,
      type,
      priority: this.#types.get(type)?.priority ?? 5,
      integration: instance.name,
      payload: null,
    };
  }

  /** Each enabled instance with a schedule, and the entry task of each of its enabled platforms. */
  scheduledInstances(): {
    instance: RuntimeInstance;
    schedule: Schedule;
    entries: { type: string; priority: number }[];
  }[] {
    const jobs = [];
    for (const instance of this.#instances.values()) {
      if (!instance.enabled || !instance.schedule) continue;
      const entries = Object.keys(instance.platforms)
        .map((platform) => this.entryTask(instance.name, platform))
        .filter((entry) => entry.ok)
        .map((entry) => ({ type: entry.type, priority: entry.priority }));
      if (entries.length > 0) jobs.push({ instance, schedule: instance.schedule, entries });
    }
    return jobs;
  }

  /**
   * The `doctor` check a manifest declares for its instances, imported; undefined when it declares none.
   */
  async doctorCheck(domain: string): Promise<DoctorCheckFunction | undefined> {
    const integration = this.integrations.find((candidate) => candidate.manifest.domain === domain);
    const reference = integration?.manifest.doctor;
    if (!integration || !reference) return undefined;
    const match = handlerReferencePattern.exec(reference);
    const module = path.resolve(integration.directory, match?.[1] ?? reference);
    const relative = path.relative(integration.directory, module);
    if (relative.startsWith('..') || path.isAbsolute(relative)) return undefined;
    const exports = (await import(pathToFileURL(module).href)) as Record<string, unknown>;
    const check = exports[match?.[2] ?? 'default'];
    return typeof check === 'function' ? (check as DoctorCheckFunction) : undefined;
  }

  /**
   * Imports every selected handler module and checks that each named export is a function. Throws
   * {@link ManifestError} with every handler that cannot be loaded, each at its manifest's file and line. What
   * `config check` runs (with `inbound: 'all'`); the worker imports each handler on first use instead
   * ({@link handler}), after {@link checkHandlerModules}, and the server each listener and webhook
   * ({@link inboundHandler}). Answers the task types' handlers, by type.
   */
  async loadHandlers(options: HandlerSelection = {}): Promise<Map<string, TaskHandler>> {
    const handlers = new Map<string, TaskHandler>();
    const problems: ManifestProblem[] = [];
    if (options.taskTypes ?? true) {
      for (const info of this.taskTypes()) {
        const loaded = await this.#importHandler(info);
        if ('problem' in loaded) problems.push(loaded.problem);
        else handlers.set(info.type, loaded.handler as TaskHandler);
      }
    }
    for (const info of this.#selectInbound(options)) {
      const loaded = await this.#importHandler(info);
      if ('problem' in loaded) problems.push(loaded.problem);
    }
    if (problems.length > 0) throw new ManifestError(problems, brokenHandlerHint);
    return handlers;
  }

  /**
   * The handler of `type`, its module imported on the first call (once however many types it serves), so that a
   * worker loads an integration's code and libraries only when a task of it comes. Undefined for a type no manifest
   * declares; throws {@link ManifestError} at the manifest's line when the module or its export is broken.
   */
  async handler(type: string): Promise<TaskHandler | undefined> {
    const info = this.#types.get(type);
    if (!info) return undefined;
    const loaded = await this.#importHandler(info);
    if ('problem' in loaded) {
      throw new HandlerLoadError([loaded.problem], loaded.importFailed === true);
    }
    return loaded.handler as TaskHandler;
  }

  /**
   * Checks without importing anything that every selected handler module is inside its integration's folder and
   * exists, so that a worker (task types, the default) or the server (`{taskTypes: false, inbound: 'enabled'}`)
   * refuses to start on a manifest naming a missing file rather than fail when the handler is first needed. Throws
   * {@link ManifestError} with every such handler.
   */
  async checkHandlerModules(options: HandlerSelection = {}): Promise<void> {
    const problems: ManifestProblem[] = [];
    const seen = new Map<string, Promise<boolean>>();
    const sites: HandlerSite[] = [
      ...((options.taskTypes ?? true) ? this.taskTypes() : []),
      ...this.#selectInbound(options),
    ];
    for (const info of sites) {
      const outside = this.#outsideProblem(info);
      if (outside) {
        problems.push(outside);
        continue;
      }
      let exists = seen.get(info.handler.module);
      if (!exists) {
        exists = stat(info.handler.module).then(
          (stats) => stats.isFile(),
          () => false,
        );
        seen.set(info.handler.module, exists);
      }
      if (!(await exists))
        problems.push(handlerProblem(info, `${info.handler.reference.split('#')[0]} does not exist`));
    }
    if (problems.length > 0) throw new ManifestError(problems, brokenHandlerHint);
  }

  #selectInbound(options: HandlerSelection): InboundHandlerInfo[] {
    const inbound = options.inbound ?? 'none';
    return inbound === 'none' ? [] : this.inboundHandlers({ enabledOnly: inbound === 'enabled' });
  }

  #outsideProblem(info: HandlerSite): ManifestProblem | undefined {
    const relative = path.relative(info.integration.directory, info.handler.module);
    if (relative.startsWith('..') || path.isAbsolute(relative)) {
      return handlerProblem(info, `${info.handler.reference} is outside the integration's folder`);
    }
    return undefined;
  }

  async #importHandler(
    info: HandlerSite,
  ): Promise<{ handler: unknown } | { problem: ManifestProblem; importFailed?: boolean }> {
    const { handler } = info;
    const outside = this.#outsideProblem(info);
    if (outside) return { problem: outside };
    let loading = this.#modules.get(handler.module);
    if (!loading) {
      const started = import(pathToFileURL(handler.module).href) as Promise<Record<string, unknown>>;
      loading = started;
      this.#modules.set(handler.module, started);
      // A module that failed to load is forgotten, so the next task imports it again: a file fixed (or a package
      // installed) while the worker runs is picked up. Handled here, too, so the failure is no unhandled rejection.
      started.catch(() => {
        if (this.#modules.get(handler.module) === started) this.#modules.delete(handler.module);
      });
    }
    let exports: Record<string, unknown>;
    try {
      exports = await loading;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      const moduleText = handler.reference.split('#')[0];
      return {
        problem: handlerProblem(
          info,
          code === 'ERR_MODULE_NOT_FOUND' && String((error as Error).message).includes(handler.module)
            ? `${moduleText} does not exist`
            : `${moduleText} cannot be loaded: ${String((error as Error).message).split('\n')[0]}`,
        ),
        importFailed: true,
      };
    }
    const value = exports[handler.exportName];
    if (value === undefined) {
      const names = Object.keys(exports).filter((name) => typeof exports[name] === 'function');
      return {
        problem: handlerProblem(
          info,
          `${handler.reference.split('#')[0]} exports no \`${handler.exportName}\`${names.length > 0 ? ` (it exports: ${names.join(', ')})` : ''}`,
        ),
      };
    }
    if (typeof value !== 'function') {
      return {
        problem: handlerProblem(
          info,
          `\`${handler.exportName}\` in ${handler.reference.split('#')[0]} is ${typeof value === 'object' ? 'an object' : `a ${typeof value}`}, not a handler function`,
        ),
      };
    }
    return { handler: value };
  }
}

const brokenHandlerHint =
  'fix the handler reference or the module; the worker (task handlers) and the server (listeners and webhooks) do not start while one is missing';

/**
 * A task handler that cannot be had when its task runs. `importFailed`: its module did not load (a syntax error, a
 * package missing while `npm ci` runs, EMFILE), which a later attempt may not meet, since a failed import is not
 * cached; otherwise the module loaded but has no such function, which only a change to the code can fix.
 */
export class HandlerLoadError extends ManifestError {
  readonly importFailed: boolean;

  constructor(problems: readonly ManifestProblem[], importFailed: boolean) {
    super(
      problems,
      importFailed
        ? 'fix the module (or finish installing its packages): the task is tried again with its backoff'
        : 'fix the handler reference or the module, then `assistant task retry` the task',
    );
    this.importFailed = importFailed;
  }
}

function inboundKey(domain: string, kind: InboundKind, name: string): string {
  return `${domain}\u0000${kind}\u0000${name}`;
}

/** A manifest's handler reference resolved against its integration's folder. */
function handlerReference(
  integration: DiscoveredIntegration,
  reference: string,
  manifestKey: (string | number)[],
): HandlerReference {
  const match = handlerReferencePattern.exec(reference);
  return {
    reference,
    module: path.resolve(integration.directory, match?.[1] ?? reference),
    exportName: match?.[2] ?? 'default',
    manifestKey,
  };
}

function handlerProblem(info: HandlerSite, message: string): ManifestProblem {
  const { integration, handler } = info;
  const position = integration.source.positionOf(handler.manifestKey);
  return { file: integration.shownPath, line: position?.line, col: position?.col, path: handler.manifestKey, message };
}

function defaultPlatform(name: string, settingSpecs: Record<string, never>): PlatformContext {
  const settings = z.strictObject(settingsShape(settingSpecs)).safeParse({});
  return {
    name,
    // A platform whose settings have required keys cannot run until config.yaml sets them.
    enabled: settings.success,
    settings: settings.success ? (settings.data as Record<string, unknown>) : {},
    classifications: {},
    automations: [],
  };
}

import type { CompiledRule, Provenance } from '@assistant/automations';
import type { DiscoveredIntegration, ManifestPlatform } from '@assistant/manifests';
import type { Task } from '@assistant/queue';

/**
 * What the act gate, manual actions and result routes need to know about the integrations: the task types their
 * manifests declare, the configured instances, and each platform's compiled rules. The integration host's
 * IntegrationRegistry implements it; the actions never see the registry itself (it sits above them).
 */
export interface ActionRegistry {
  readonly integrations: readonly DiscoveredIntegration[];
  taskType(type: string): ActionTaskType | undefined;
  instance(name: string): ActionInstance | undefined;
  instances(): ActionInstance[];
  /** The instance a task runs for, or why there is none. */
  instanceForTask(
    task: Pick<Task, 'type' | 'integration'>,
  ): { ok: true; instance: ActionInstance } | { ok: false; message: string };
  /** A platform as its manifest declares it (stages, fields, actions). */
  manifestPlatform(domain: string, platformName: string): ManifestPlatform | undefined;
  /** The instance's rules for the platform, compiled against the manifest. */
  automations(instanceName: string, platformName: string): CompiledRule[];
  /**
   * A loaded hook by name, as far as the gate looks at it: what a script or service task a hook enqueued alone is
   * checked against. Absent (or undefined) when no hook of that name is loaded. @default no hooks
   */
  hook?(name: string): HookAuthority | undefined;
}

/** What a compiled hook (packages/hooks, above this package) says about what it may do alone. */
export interface HookAuthority {
  version: string;
  provenance: Provenance;
  /** `approval: required`: nothing of it runs without a person. */
  approval: boolean;
  actions: readonly { kind: string; name?: string; tier: string; yolo: boolean }[];
}

/** A task type some manifest declares, as far as the gate looks at it. */
export interface ActionTaskType {
  type: string;
  kind: 'stage' | 'service' | 'task';
  domain: string;
  platform?: string;
  stage?: string;
  service?: string;
  integration: DiscoveredIntegration;
}

/** An integration instance, as far as the actions look at it. */
export interface ActionInstance {
  name: string;
  domain: string;
  /** The platforms config.yaml configures for the instance, by name. */
  platforms: Record<string, unknown>;
  /** Shadow mode: the gate refuses every action on the instance (decision 0031). @default false */
  shadow?: boolean;
}

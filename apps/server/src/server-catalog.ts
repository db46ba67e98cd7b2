import type { JsonValue } from '@assistant/queue';
import type { IntegrationRegistry } from '@assistant/runtime';

/** What the server needs to know about integrations: which task types exist and what a trigger enqueues. */
export interface ServerCatalog {
  /** Task types a handler exists for; `POST /api/tasks` refuses any other. */
  taskTypes(): string[];
  hasTaskType(type: string): boolean;
  /** The entry task of an integration instance's platform, for manual triggers. */
  entryTask(
    instance: string,
    platform: string,
  ):
    | { ok: true; type: string; priority: number; integration: string; payload: JsonValue }
    | { ok: false; status: 404 | 409; message: string };
}

/** The catalog of a process that loaded the integrations. */
export function catalogFromRegistry(registry: IntegrationRegistry): ServerCatalog {
  return {
    taskTypes: () => registry.taskTypes().map((info) => info.type),
    hasTaskType: (type) => registry.taskType(type) !== undefined,
    entryTask: (instance, platform) => registry.entryTask(instance, platform),
  };
}

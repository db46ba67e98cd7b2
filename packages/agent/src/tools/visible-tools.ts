import type { Tool } from './define-tool.ts';

/**
 * The tools the model may see now: those whose `hiddenUntil` tools have all succeeded at least once in this loop.
 * Hiding write tools until a read tool has run makes the model look before it acts.
 */
export function visibleTools(tools: readonly Tool[], succeeded: ReadonlySet<string>): Tool[] {
  return tools.filter((tool) => tool.hiddenUntil.every((name) => succeeded.has(name)));
}

import { agentToolNames } from './agent-tool-names.ts';

/**
 * The names of the tools Assistant's own loops offer (docs/agents.md, "Tool gate"), for checking a persona's patterns:
 * a pattern without `*` that names none of these (nor an MCP server's `server__tool`) is a typo that would grant or
 * deny nothing. tests/persona-tool-names.test.ts keeps this list in step with the tools' definitions.
 */
export const builtinToolNames: readonly string[] = [
  // integration-host's note tools and system.agent's own.
  'search_notes',
  'read_note',
  'wait',
  // chat's tools.
  'ask_owner',
  'list_queue',
  'show_queue_task',
  'list_approvals',
  'decide_approval',
  'propose',
  'trigger',
  'enqueue_service',
  'steer_task',
  'run_workflow',
  // memory's tools (integration-host's memoryTools), in chat and in system.agent when the persona grants them.
  'recall',
  'remember',
  'lookup_contact',
  'add_task',
  'list_tasks',
  // research's web tools.
  'search',
  'fetch',
  'finish',
  // code as action (docs/codeact.md), for personas with `code_mode:`.
  'run_code',
  'search_tools',
  ...agentToolNames,
];

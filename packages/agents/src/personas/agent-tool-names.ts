/**
 * The sub-agent tools (docs/agents.md, "Sub-agents"). The built-in default persona denies them: a loop gets them only
 * from a persona that grants them by name or pattern, so a chat cannot start a tree of agents unless the owner said so.
 */
export const agentToolNames = [
  'spawn_agent',
  'message_agent',
  'wait_agents',
  'list_agents',
  'reply_to_caller',
] as const;

export type AgentToolName = (typeof agentToolNames)[number];

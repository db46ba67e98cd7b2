// For tests of sub-agents: a fake OpenAI-compatible server that answers each agent by its persona. Persona files
// carry `ROLE=<name>` in their body, so the system prompt says who is asking; each role's script sees the request's
// messages and answers the next step.
import { FakeOpenAiServer, type FakeReply } from '@assistant/llm/testing';

export interface TeamMessage {
  role: string;
  content?: string | null;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
}

export type RoleScript = (messages: TeamMessage[], context: { task: string; toolResults: string[] }) => FakeReply;

/** Starts the server; `scripts` by role. A request from a role without a script fails the request (HTTP 500). */
export function startTeamModel(scripts: Record<string, RoleScript>): Promise<FakeOpenAiServer> {
  return FakeOpenAiServer.start({
    respond: (request) => {
      const messages = (request.body.messages ?? []) as TeamMessage[];
      const system = String(messages[0]?.content ?? '');
      const role = /ROLE=([A-Za-z0-9_-]+)/.exec(system)?.[1] ?? 'none';
      const script = scripts[role];
      if (script === undefined) throw new Error(`no script for role ${role}`);
      const task = String(messages.find((message) => message.role === 'user')?.content ?? '');
      const toolResults = messages
        .filter((message) => message.role === 'tool')
        .map((message) => String(message.content ?? ''));
      return script(messages, { task, toolResults });
    },
  });
}

/** The persona file for a role: frontmatter lines as given, then a body naming the role. */
export function personaFile(role: string, frontmatter: string): string {
  return `---\n${frontmatter.trim()}\n---\nYou are the ${role}. ROLE=${role}\n`;
}

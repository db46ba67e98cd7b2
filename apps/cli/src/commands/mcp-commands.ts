import type { McpServerConfig } from '@assistant/config';
import { type McpServerStatus, McpServers, type McpToolInfo } from '@assistant/mcp';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { loadCliConfig } from '../load-cli-config.ts';
import { writeJson } from '../open-cli-queue.ts';

export interface McpListCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
  /** Only this server. @default every configured server */
  server?: string;
  json?: boolean;
}

/** One server as `assistant mcp ls` reports it. */
interface ListedServer {
  name: string;
  transport: McpServerStatus['transport'];
  /** The command line or URL, without env or header values (they may be secrets). */
  target: string;
  state: 'up' | 'failed';
  error?: string;
  tools: McpToolInfo[];
}

/**
 * `assistant mcp ls [server] [--json]`: each configured MCP server with its transport, whether it starts, and its
 * tools with their tier and whether config offers them. To list tools it starts each server here and stops it again:
 * the worker's own servers are separate processes this command does not see. Returns the exit code: 1 when a
 * server did not start.
 */
export async function mcpListCommand(options: McpListCommandOptions): Promise<number> {
  const { context } = options;
  const { config } = await loadCliConfig(options);
  const servers = new McpServers({ servers: config.mcpServers });
  try {
    const names = options.server === undefined ? servers.names : [options.server];
    // Unknown names fail here, before anything starts, with the list of configured ones.
    for (const name of names) servers.status(name);
    const listed = await Promise.all(
      names.map(async (name): Promise<ListedServer> => {
        const base = {
          name,
          transport: servers.status(name).transport,
          target: describeTarget(config.mcpServers[name]),
        };
        try {
          return { ...base, state: 'up', tools: await servers.describeTools(name) };
        } catch (error) {
          // The pool's retry schedule means nothing to a command that stops the server right after.
          const message = (error instanceof Error ? error.message : String(error)).replace(
            /; it is tried again in \d+ s$/,
            '',
          );
          return { ...base, state: 'failed', error: message, tools: [] };
        }
      }),
    );
    if (options.json) writeJson(context, listed);
    else context.stdout.write(`${formatListing(listed).join('\n')}\n`);
    return listed.some((server) => server.state === 'failed') ? 1 : 0;
  } finally {
    await servers.close();
  }
}

function describeTarget(server: McpServerConfig | undefined): string {
  if (server === undefined) return '';
  if (server.transport === 'http') return server.url;
  return [server.command, ...server.args].join(' ');
}

function formatListing(listed: readonly ListedServer[]): string[] {
  if (listed.length === 0) return ['no MCP servers are configured (`mcp_servers:` in config.yaml; see docs/mcp.md)'];
  const lines = ['(each server was started to list its tools, and stopped again)'];
  for (const server of listed) {
    lines.push('', `${server.name}  ${server.transport}  ${server.target}`);
    if (server.state === 'failed') {
      lines.push(`  failed to start: ${server.error ?? 'unknown error'}`);
      continue;
    }
    const offered = server.tools.filter((tool) => tool.allowed).length;
    lines.push(`  up, ${server.tools.length} tools, ${offered} offered to loops`);
    const width = Math.max(0, ...server.tools.map((tool) => tool.name.length));
    for (const tool of server.tools) {
      const offeredAs = tool.allowed ? `as ${tool.agentName}` : 'not offered (allow/deny in config.yaml)';
      lines.push(`  ${tool.name.padEnd(width)}  ${tool.tier.padEnd(12)}  ${offeredAs}`);
    }
  }
  return lines;
}

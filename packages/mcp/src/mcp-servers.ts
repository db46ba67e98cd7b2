import type { Tool, ToolTier } from '@assistant/agent';
import type { McpServerConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import { fenceUntrusted } from '@assistant/llm';
import type { Tool as McpToolDescription } from '@modelcontextprotocol/sdk/types.js';
import * as z from 'zod';
import {
  type McpLogger,
  type RestartBackoff,
  ServerConnection,
  type ServerState,
} from './internal/server-connection.ts';
import { agentToolName } from './tool-names.ts';
import { isToolAllowed, matchesToolPattern } from './tool-patterns.ts';
import { defaultMaxResultChars, toolResultText } from './tool-result-text.ts';

export type { McpLogger, RestartBackoff, ServerState };

/** Options of {@link McpServers}. */
export interface McpServersOptions {
  /** config.yaml's `mcp_servers:` (with `cwd` resolved, as loadConfig gives it). */
  servers: Readonly<Record<string, McpServerConfig>>;
  /** Where starts, crashes and restarts are told. @default nowhere */
  logger?: McpLogger;
  /** The most characters of one tool result the model gets. @default 20_000 */
  maxResultChars?: number;
  /** @default {initialMs: 1_000, maxMs: 60_000} */
  restartBackoff?: RestartBackoff;
}

/** One tool of a server as `assistant mcp ls` shows it. */
export interface McpToolInfo {
  /** The name the server gives it. */
  name: string;
  /** The name an agent loop knows it by (`server__tool`); empty when config does not offer it. */
  agentName: string;
  description: string;
  tier: ToolTier;
  /** Whether config's `allow` and `deny` offer it to loops. */
  allowed: boolean;
  /** What the server says: `readOnlyHint`, `destructiveHint`… */
  annotations: Record<string, unknown>;
}

/** A server as `assistant mcp ls` shows it. */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: ServerState;
  pid?: number;
  restarts: number;
  lastError?: string;
}

/** The longest tool description passed on; a server's description is text from outside, shown to the model. */
const maxDescriptionChars = 2_000;

/**
 * The MCP servers of one process (a worker), shared by all its loops: each is started on first use, restarted with
 * backoff after a crash, and stopped by {@link close} (a stdio server with its whole process group). Loops get a
 * server's tools as agent tools through {@link toolsFor}.
 */
export class McpServers {
  readonly #connections = new Map<string, ServerConnection>();
  readonly #maxResultChars: number;
  #closing: Promise<void> | undefined;

  constructor(options: McpServersOptions) {
    const logger = options.logger ?? { info: () => {}, warn: () => {} };
    const backoff = options.restartBackoff ?? { initialMs: 1_000, maxMs: 60_000 };
    for (const [name, config] of Object.entries(options.servers)) {
      this.#connections.set(name, new ServerConnection({ name, config, logger, backoff }));
    }
    this.#maxResultChars = options.maxResultChars ?? defaultMaxResultChars;
  }

  /** The configured servers' names, in config order. */
  get names(): string[] {
    return [...this.#connections.keys()];
  }

  /** Where a server is, without starting it. */
  status(name: string): McpServerStatus {
    const connection = this.#connection(name);
    const pid = connection.pid;
    const lastError = connection.lastError;
    return {
      name,
      transport: connection.config.transport,
      state: connection.state,
      ...(pid === undefined ? {} : { pid }),
      restarts: connection.restarts,
      ...(lastError === undefined ? {} : { lastError }),
    };
  }

  /** Every tool of one server, allowed or not, with its tier (starts the server). */
  async describeTools(name: string, options: { signal?: AbortSignal } = {}): Promise<McpToolInfo[]> {
    const connection = this.#connection(name);
    const taken = new Set<string>();
    return (await connection.tools(options.signal)).map((tool) => {
      const allowed = isToolAllowed(tool.name, connection.config);
      return {
        name: tool.name,
        agentName: allowed ? agentToolName(name, tool.name, taken) : '',
        description: tool.description ?? tool.title ?? '',
        tier: toolTier(tool, connection.config),
        allowed,
        annotations: { ...tool.annotations },
      };
    });
  }

  /**
   * The tools config offers of the named servers, as agent tools named `server__tool` (unique, at most 64
   * characters), in the order the servers are named. Starts the servers that are not up. Rejects with
   * MCP_SERVER_UNKNOWN for a name config does not define, and MCP_SERVER_UNAVAILABLE for one that cannot start.
   */
  async toolsFor(serverNames: readonly string[], options: { signal?: AbortSignal } = {}): Promise<Tool[]> {
    const connections = [...new Set(serverNames)].map((name) => this.#connection(name));
    const listed = await Promise.all(
      connections.map(async (connection) => ({ connection, tools: await connection.tools(options.signal) })),
    );
    const taken = new Set<string>();
    const tools: Tool[] = [];
    for (const { connection, tools: described } of listed) {
      for (const tool of described) {
        if (!isToolAllowed(tool.name, connection.config)) continue;
        tools.push(this.#agentTool(connection, tool, agentToolName(connection.name, tool.name, taken)));
      }
    }
    return tools;
  }

  /**
   * Stops every server; idempotent. Resolves when each stdio server's process group has exited (SIGKILL after four
   * seconds at worst), even when some fail to close.
   */
  close(): Promise<void> {
    this.#closing ??= Promise.allSettled([...this.#connections.values()].map((connection) => connection.close())).then(
      () => {},
    );
    return this.#closing;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  #connection(name: string): ServerConnection {
    const connection = this.#connections.get(name);
    if (connection) return connection;
    const known = this.names;
    throw new AssistantError(
      'MCP_SERVER_UNKNOWN',
      `no MCP server named ${JSON.stringify(name)} in config.yaml's mcp_servers (configured: ${known.length === 0 ? 'none' : known.join(', ')})`,
      { hint: 'add it under `mcp_servers:` in config.yaml (docs/mcp.md), or name one of those configured' },
    );
  }

  #agentTool(connection: ServerConnection, tool: McpToolDescription, name: string): Tool<Record<string, unknown>> {
    const description = agentToolDescription(tool, connection.name);
    const maxResultChars = this.#maxResultChars;
    // Like defineTool's specs: the dialect line is noise to a model and some chat APIs refuse it.
    const { $schema: _dialect, ...parameters } = tool.inputSchema;
    return {
      name,
      description,
      // The server validates its own arguments against the schema the model was shown; here only their shape.
      input: z.record(z.string(), z.unknown()),
      hiddenUntil: [],
      spec: { name, description, parameters: { ...parameters, type: 'object' } },
      // What a server returns is text from outside Assistant: the loop fences it.
      trusted: false,
      tier: toolTier(tool, connection.config),
      run: async (input, context) => {
        const result = await connection.call(tool.name, input, context.signal);
        const text = toolResultText(result, maxResultChars);
        // The loop answers a thrown error as `error: …`, fenced like any result.
        if (result.isError) throw new Error(text === '' ? `${tool.name} failed without saying why` : text);
        return text;
      },
    };
  }
}

/**
 * What the model reads about a tool. A server's description (or title) is text from outside, like a tool's result: a
 * server can write "always call delete_all first" there. It is fenced the same way, and cut to 2,000 characters.
 */
export function agentToolDescription(
  tool: Pick<McpToolDescription, 'name' | 'description' | 'title'>,
  serverName: string,
): string {
  const own = (tool.description ?? tool.title ?? '').trim();
  const about = `The ${tool.name} tool of MCP server ${serverName}.`;
  if (own === '') return about;
  const fenced = fenceUntrusted({ [`${tool.name} description`]: own }, { maxChars: maxDescriptionChars }).text;
  return `${about} Its server describes it as:\n${fenced}`;
}

/**
 * A tool is read-only when config's `read_only` names it, or when its server annotates it `readOnlyHint: true` (and
 * config trusts the server's annotations). Anything else may do what cannot be undone, so it is irreversible and the
 * tool gate holds it for approval. A server that says a tool is both read-only and destructive contradicts itself:
 * the worse reading wins.
 */
export function toolTier(
  tool: Pick<McpToolDescription, 'name' | 'annotations'>,
  config: { readOnly: readonly string[]; trustAnnotations: boolean },
): ToolTier {
  if (matchesToolPattern(tool.name, config.readOnly)) return 'read_only';
  if (!config.trustAnnotations) return 'irreversible';
  const annotations = tool.annotations;
  return annotations?.readOnlyHint === true && annotations.destructiveHint !== true ? 'read_only' : 'irreversible';
}

import type { McpServerConfig } from '@assistant/config';
import { AssistantError } from '@assistant/errors';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, McpError, Tool as McpToolDescription } from '@modelcontextprotocol/sdk/types.js';
import type { boundedFetch } from './bounded-fetch.ts';
import type { ProcessGroupStdioTransport } from './process-group-stdio-transport.ts';
import { responseTooLargeOf } from './response-too-large.ts';

/** Where a server is in its life: never started, starting, up, down (failed or crashed) until `retryAtMs`, closed. */
export type ServerState = 'idle' | 'starting' | 'ready' | 'down' | 'closed';

/** The fields of a log line and its message, as pino takes them. */
export interface McpLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** How long a server that failed or crashed waits before it is started again: doubling from `initialMs`. */
export interface RestartBackoff {
  /** @default 1_000 */
  initialMs: number;
  /** @default 60_000 */
  maxMs: number;
}

export interface ServerConnectionOptions {
  name: string;
  config: McpServerConfig;
  logger: McpLogger;
  backoff: RestartBackoff;
}

interface ClientSdk {
  Client: typeof Client;
  getDefaultEnvironment: () => Record<string, string>;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
  McpError: typeof McpError;
  ProcessGroupStdioTransport: typeof ProcessGroupStdioTransport;
  boundedFetch: typeof boundedFetch;
}

// The MCP SDK (the client, its transports and the protocol's schemas) loads when a server is first started, not with
// the worker: most workers never start one, and a worker holds what it loaded for the whole of its life (about 10 MB
// here; docs/performance.md, issue 20).
let clientSdk: ClientSdk | undefined;

async function loadClientSdk(): Promise<ClientSdk> {
  const [client, stdio, http, types, transport, fetching] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('./process-group-stdio-transport.ts'),
    import('./bounded-fetch.ts'),
  ]);
  clientSdk = {
    Client: client.Client,
    getDefaultEnvironment: stdio.getDefaultEnvironment,
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    McpError: types.McpError,
    ProcessGroupStdioTransport: transport.ProcessGroupStdioTransport,
    boundedFetch: fetching.boundedFetch,
  };
  return clientSdk;
}

const clientInfo = { name: 'assistant', version: '0.1.0' };
/** The most pages of `tools/list` read from one server. */
const maxToolPages = 100;
/**
 * Answers too large to read, in a row, that open the server's breaker: it is stopped and calls fail at once with
 * MCP_SERVER_UNAVAILABLE until its backoff has passed (the next call then starts it afresh). One such answer can be
 * a file that happened to be big; several in a row is a server that keeps doing it.
 */
const breakerFailures = 3;
/** The most characters of a server's error text passed on in a call's error. */
const maxErrorChars = 2_000;

/**
 * One configured MCP server: started on first use, its tool list kept, restarted after a crash. A server that
 * crashed while up is started again by a timer once its backoff has passed, so the next call finds it up; one that
 * failed to start is tried again by the next call after its backoff (a broken command is not retried forever with
 * nobody asking). Calls while it is down fail at once with MCP_SERVER_UNAVAILABLE saying when it is tried again.
 */
export class ServerConnection {
  readonly name: string;
  readonly config: McpServerConfig;
  #state: ServerState = 'idle';
  #client: Client | undefined;
  #transport: ProcessGroupStdioTransport | StreamableHTTPClientTransport | undefined;
  #starting: Promise<Client> | undefined;
  #tools: McpToolDescription[] | undefined;
  #lastError: string | undefined;
  #retryAtMs = 0;
  #delayMs: number;
  #readyAtMs = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #restarts = 0;
  /** Failures of the server's making in a row (answers too large), toward {@link breakerFailures}. */
  #failuresInARow = 0;
  readonly #logger: McpLogger;
  readonly #backoff: RestartBackoff;

  constructor(options: ServerConnectionOptions) {
    this.name = options.name;
    this.config = options.config;
    this.#logger = options.logger;
    this.#backoff = options.backoff;
    this.#delayMs = options.backoff.initialMs;
  }

  get state(): ServerState {
    return this.#state;
  }

  /** The process id of a stdio server that is up. */
  get pid(): number | undefined {
    return this.#stdioTransport()?.pid;
  }

  /** Why the server last failed or crashed. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** How often the server was started again after a failure or crash. */
  get restarts(): number {
    return this.#restarts;
  }

  /** The server's tools, listed once per start (every page of `tools/list`). */
  async tools(signal?: AbortSignal): Promise<McpToolDescription[]> {
    const client = await this.#connected();
    if (this.#tools) return this.#tools;
    const tools: McpToolDescription[] = [];
    let cursor: string | undefined;
    // A server that keeps answering with a next cursor would hold the loop (and grow the list) forever.
    for (let pages = 0; pages === 0 || cursor !== undefined; pages++) {
      if (pages === maxToolPages) {
        throw new AssistantError(
          'MCP_CALL_FAILED',
          `MCP server ${this.name} listed more than ${maxToolPages} pages of tools; its tools/list never ends`,
          { hint: `narrow what the server offers, or check that mcp_servers.${this.name} is the server you meant` },
        );
      }
      const page = await this.#request(
        () => client.listTools(cursor === undefined ? {} : { cursor }, requestOptions(this.config.timeoutMs, signal)),
        'listing its tools',
      );
      tools.push(...page.tools);
      cursor = page.nextCursor;
    }
    this.#tools = tools;
    return tools;
  }

  /** Calls a tool by the server's own name for it. A tool's own failure comes back as `isError`, not thrown. */
  async call(tool: string, input: Record<string, unknown>, signal?: AbortSignal): Promise<CallToolResult> {
    const client = await this.#connected();
    const result = await this.#request(
      () => client.callTool({ name: tool, arguments: input }, undefined, requestOptions(this.config.timeoutMs, signal)),
      `calling ${tool}`,
    );
    // Servers of protocol versions before 2024-11-05 answer `{toolResult}`; the loop wants content.
    if ('toolResult' in result && !('content' in result)) {
      return { content: [{ type: 'text', text: JSON.stringify(result.toolResult) }] };
    }
    return result as CallToolResult;
  }

  /** Stops the server for good: a stdio server's process group is gone when this resolves. */
  async close(): Promise<void> {
    this.#state = 'closed';
    clearTimeout(this.#restartTimer);
    await this.#starting?.catch(() => {});
    await this.#stop();
  }

  async #request<T>(run: () => Promise<T>, doing: string): Promise<T> {
    try {
      const result = await run();
      this.#failuresInARow = 0;
      return result;
    } catch (error) {
      const tooLarge = responseTooLargeOf(error);
      if (tooLarge !== undefined) throw await this.#tooLarge(tooLarge, doing, error);
      // The server's own text (an error it answered, the body of a refusal) is cut: the model reads this message.
      const message = cut(error instanceof Error ? error.message : String(error), maxErrorChars);
      // A failure that is not the server's own answer (a refused connection, an unknown session after the server
      // restarted) ends an HTTP session: the next call starts a new one.
      const answered = clientSdk !== undefined && error instanceof clientSdk.McpError;
      if (this.config.transport === 'http' && this.#state === 'ready' && !answered) {
        await this.#stop();
        this.#markIdle();
      }
      if (this.#state === 'down') throw this.#unavailable();
      throw new AssistantError('MCP_CALL_FAILED', `MCP server ${this.name} failed ${doing}: ${message}`, {
        cause: error,
        hint: /timed out/i.test(message)
          ? `raise \`timeout\` of mcp_servers.${this.name} in config.yaml (now ${this.config.timeoutMs / 1000} s) if the tool needs longer`
          : 'try again; `assistant mcp ls` shows whether the server is up',
      });
    }
  }

  /**
   * The error for an answer too large to read, counted against the server's breaker: the model reads the message
   * (so it says what to do instead), the owner the hint.
   */
  async #tooLarge(
    details: { limitBytes: number; receivedBytes: number; cutShort: boolean },
    doing: string,
    cause: unknown,
  ): Promise<AssistantError> {
    this.#failuresInARow += 1;
    const size = details.cutShort
      ? `more than ${formatBytes(details.limitBytes)} (reading stopped there)`
      : `${formatBytes(details.receivedBytes)}, more than the ${formatBytes(details.limitBytes)} allowed`;
    const error = new AssistantError(
      'MCP_RESPONSE_TOO_LARGE',
      `MCP server ${this.name} answered ${doing} with ${size}; the answer was dropped unread ` +
        '(MCP_RESPONSE_TOO_LARGE). Ask for less if the tool allows it (a part of a file, fewer results).',
      {
        cause,
        hint: `raise \`max_response_bytes\` of mcp_servers.${this.name} in config.yaml (now ${formatBytes(this.config.maxResponseBytes)}) if answers this large are expected`,
      },
    );
    this.#logger.warn(
      { mcpServer: this.name, limitBytes: details.limitBytes, receivedBytes: details.receivedBytes },
      error.message,
    );
    if (this.#failuresInARow >= breakerFailures && this.#state === 'ready') {
      this.#failuresInARow = 0;
      // Down before the stop, so no call starts it again meanwhile; the next call after the backoff does.
      this.#down(`answered ${breakerFailures} times in a row with more than ${formatBytes(details.limitBytes)}`);
      await this.#stop();
    }
    return error;
  }

  #markIdle(): void {
    if (this.#state !== 'closed') this.#state = 'idle';
  }

  async #connected(): Promise<Client> {
    if (this.#state === 'closed') {
      throw new AssistantError('MCP_SERVER_UNAVAILABLE', `MCP server ${this.name} was closed (the worker is stopping)`);
    }
    if (this.#state === 'ready' && this.#client) return this.#client;
    if (this.#starting) return this.#starting;
    if (this.#state === 'down' && Date.now() < this.#retryAtMs) throw this.#unavailable();
    return this.#start();
  }

  #start(): Promise<Client> {
    const wasDown = this.#state === 'down';
    this.#state = 'starting';
    this.#tools = undefined;
    const starting = this.#connect().then(
      (client) => {
        this.#starting = undefined;
        if (this.#state === 'closed') {
          void this.#stop();
          throw new AssistantError('MCP_SERVER_UNAVAILABLE', `MCP server ${this.name} was closed while starting`);
        }
        this.#state = 'ready';
        this.#readyAtMs = Date.now();
        if (wasDown) this.#restarts += 1;
        this.#logger.info(
          { mcpServer: this.name, ...(this.pid === undefined ? {} : { serverPid: this.pid }) },
          `MCP server ${this.name} is up${this.pid === undefined ? '' : ` (pid ${this.pid})`}`,
        );
        return client;
      },
      async (error: unknown) => {
        this.#starting = undefined;
        const stderr = this.#stdioTransport()?.recentStderr ?? '';
        await this.#stop();
        if (this.#state === 'closed') throw error;
        const reason = error instanceof Error ? error.message : String(error);
        this.#down(`could not be started: ${reason}${stderr ? `\nits last output:\n${stderr}` : ''}`);
        throw this.#unavailable(error);
      },
    );
    this.#starting = starting;
    return starting;
  }

  /** The transport when it is a stdio server's (its process), else undefined. */
  #stdioTransport(): ProcessGroupStdioTransport | undefined {
    const transport = this.#transport;
    return clientSdk !== undefined && transport instanceof clientSdk.ProcessGroupStdioTransport ? transport : undefined;
  }

  async #connect(): Promise<Client> {
    const { Client, getDefaultEnvironment, ProcessGroupStdioTransport, StreamableHTTPClientTransport, boundedFetch } =
      clientSdk ?? (await loadClientSdk());
    const client = new Client(clientInfo, { capabilities: {} });
    const config = this.config;
    let transport: ProcessGroupStdioTransport | StreamableHTTPClientTransport;
    if (config.transport === 'stdio') {
      transport = new ProcessGroupStdioTransport({
        maxMessageBytes: config.maxResponseBytes,
        command: config.command,
        args: config.args,
        // The SDK's short list of variables a server may inherit (HOME, PATH…), so secrets in Assistant's own
        // environment do not reach it; config's `env:` adds to it.
        env: { ...getDefaultEnvironment(), ...revealAll(config.env) },
        ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      });
    } else {
      transport = new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: revealAll(config.headers) },
        fetch: boundedFetch({ maxMessageBytes: config.maxResponseBytes }),
      });
    }
    this.#transport = transport;
    client.onclose = () => this.#onClosed(client);
    await client.connect(transport, { timeout: config.timeoutMs });
    this.#client = client;
    return client;
  }

  /** The connection ended. Unless we closed it, a stdio server crashed (or exited): restart it after the backoff. */
  #onClosed(client: Client): void {
    if (this.#client !== client || this.#state !== 'ready') return;
    const stderr = this.#stdioTransport()?.recentStderr ?? '';
    this.#client = undefined;
    this.#transport = undefined;
    if (this.config.transport === 'http') {
      this.#state = 'idle';
      return;
    }
    // A server that stayed up a good while starts its backoff afresh; one that keeps crashing waits longer each time.
    if (Date.now() - this.#readyAtMs >= this.#backoff.maxMs) this.#delayMs = this.#backoff.initialMs;
    this.#down(`stopped unexpectedly${stderr ? `; its last output:\n${stderr}` : ''}`);
    this.#restartTimer = setTimeout(() => {
      if (this.#state !== 'down') return;
      this.#start().catch(() => {
        // #down has recorded it; the next call retries after the doubled backoff.
      });
    }, this.#retryAtMs - Date.now());
    this.#restartTimer.unref();
  }

  #down(reason: string): void {
    this.#state = 'down';
    this.#lastError = reason;
    this.#retryAtMs = Date.now() + this.#delayMs;
    this.#logger.warn(
      { mcpServer: this.name, retryInMs: this.#delayMs },
      `MCP server ${this.name} ${reason}; trying again in ${formatSeconds(this.#delayMs)}`,
    );
    this.#delayMs = Math.min(this.#delayMs * 2, this.#backoff.maxMs);
  }

  #unavailable(cause?: unknown): AssistantError {
    const waitMs = Math.max(0, this.#retryAtMs - Date.now());
    return new AssistantError(
      'MCP_SERVER_UNAVAILABLE',
      `MCP server ${this.name} ${this.#lastError ?? 'is down'}; it is tried again in ${formatSeconds(waitMs)}`,
      {
        ...(cause === undefined ? {} : { cause }),
        hint:
          this.config.transport === 'stdio'
            ? `check mcp_servers.${this.name}.command in config.yaml; \`assistant mcp ls ${this.name}\` starts it and shows what goes wrong`
            : `check that ${this.config.url} is reachable; \`assistant mcp ls ${this.name}\` tries it`,
      },
    );
  }

  async #stop(): Promise<void> {
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    this.#transport = undefined;
    try {
      if (client) await client.close();
      else await transport?.close();
    } catch (error) {
      this.#logger.warn({ mcpServer: this.name, err: error }, `closing MCP server ${this.name} failed`);
    }
  }
}

function requestOptions(timeoutMs: number, signal: AbortSignal | undefined) {
  return { timeout: timeoutMs, ...(signal === undefined ? {} : { signal }) };
}

function revealAll(values: Record<string, string | { reveal(): string }>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(values).map(([key, value]) => [key, typeof value === 'string' ? value : value.reveal()]),
  );
}

function cut(text: string, maxChars: number): string {
  return text.length <= maxChars
    ? text
    : `${text.slice(0, maxChars)} [… ${text.length - maxChars} more characters cut]`;
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / (1024 * 1024)).toFixed(1))} MiB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KiB`;
  return `${bytes} bytes`;
}

function formatSeconds(ms: number): string {
  return `${Math.ceil(ms / 1000)} s`;
}

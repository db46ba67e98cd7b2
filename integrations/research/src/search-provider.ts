import {
  OutboundError,
  type OutboundPolicy,
  RetryableError,
  safeFetch,
  type Tool,
  type ToolContext,
} from '@assistant/sdk';
import type { ResearchSettings } from './settings.generated.ts';

/** One search hit as the model sees it. */
export interface SearchResult {
  url: string;
  title: string;
  snippet: string;
}

/** What a provider found: a list of hits, or (an MCP tool's answer) text the model reads as is. */
export type SearchOutcome = { results: SearchResult[] } | { text: string };

/** Where `search` looks. */
export interface SearchProvider {
  /** For the note and the logs: `SearXNG at https://search.example`. */
  readonly name: string;
  /** Rejects with a RetryableError when the provider cannot be reached or is down (5xx, 429): asking later may help. */
  search(query: string, context: { signal: AbortSignal; tool: ToolContext }): Promise<SearchOutcome>;
}

/** The MCP client's view (HandlerContext's `mcpTools`): the tools of named `mcp_servers:` as agents' `server__tool`. */
export type McpToolSource = (serverNames: string[]) => Promise<Tool[]>;

/**
 * The search endpoint is the owner's own choice, written in config.yaml, not a URL from outside text: it may live on
 * this machine or the local network (a SearXNG in a container). So it may reach any address; what outside text
 * chooses (the pages `fetch` reads) never can.
 */
const ownerConfigured: OutboundPolicy = { protocols: ['https:', 'http:'], allowsAddress: () => true };

export interface SearchProviderOptions {
  settings: ResearchSettings;
  mcpTools: McpToolSource;
  timeoutMs: number;
}

/**
 * The provider `search:` configures: exactly one of `searxng`, `url_template` and `mcp`. Returns a sentence saying
 * what to set instead when there is none or more than one.
 */
export function searchProviderFrom(options: SearchProviderOptions): SearchProvider | { problem: string } {
  const search = options.settings.search ?? {};
  const chosen = (['searxng', 'url_template', 'mcp'] as const).filter((key) => search[key] !== undefined);
  if (chosen.length === 0) {
    return {
      problem:
        'No search provider is configured for research. Add one to the research instance in config.yaml, e.g. `- {type: research, name: research, search: {searxng: "http://localhost:8888"}}` (a SearXNG with its JSON API on), `search: {url_template: "https://api.example/search?q={query}"}` for any JSON search API, or `search: {mcp: {server: NAME, tool: TOOL}}` for a search tool of an MCP server. See integrations/research/README.md.',
    };
  }
  if (chosen.length > 1) {
    return { problem: `research's \`search\` names ${chosen.join(' and ')}; give exactly one of them.` };
  }
  const { timeoutMs } = options;
  if (search.searxng !== undefined) {
    const base = search.searxng.replace(/\/+$/, '');
    return jsonProvider({
      name: `SearXNG at ${base}`,
      url: (query) => `${base}/search?q=${encodeURIComponent(query)}&format=json`,
      headers: {},
      paths: { list: 'results', url: 'url', title: 'title', snippet: 'content' },
      timeoutMs,
    });
  }
  if (search.url_template !== undefined) {
    const template = search.url_template;
    if (!template.includes('{query}')) {
      return {
        problem: 'research\'s `search.url_template` has no `{query}`: write where the query goes, e.g. "…?q={query}".',
      };
    }
    const key = search.api_key?.reveal();
    const header = search.api_key_header;
    return jsonProvider({
      name: `the search API at ${safeHost(template)}`,
      url: (query) =>
        template
          .replaceAll('{query}', encodeURIComponent(query))
          .replaceAll('{api_key}', encodeURIComponent(key ?? '')),
      headers: header && key ? { [header]: key } : {},
      paths: search.results ?? { list: 'results', url: 'url', title: 'title', snippet: 'snippet' },
      timeoutMs,
    });
  }
  const mcp = search.mcp;
  if (!mcp) return { problem: 'research has no search provider' };
  return mcpProvider(mcp.server, mcp.tool, options.mcpTools);
}

function safeHost(template: string): string {
  try {
    return new URL(template.replaceAll('{query}', 'q').replaceAll('{api_key}', 'k')).host;
  } catch {
    return 'the configured URL';
  }
}

interface JsonProviderOptions {
  name: string;
  url(query: string): string;
  headers: Record<string, string>;
  paths: { list: string; url: string; title: string; snippet: string };
  timeoutMs: number;
}

/** A search API that answers JSON: the list and each hit's fields found by dotted paths. */
function jsonProvider(options: JsonProviderOptions): SearchProvider {
  return {
    name: options.name,
    async search(query, { signal }) {
      const answer = await safeFetch({
        url: options.url(query),
        headers: { accept: 'application/json', ...options.headers },
        policy: ownerConfigured,
        timeoutMs: options.timeoutMs,
        maxBytes: 2_097_152,
        what: 'the search API',
        signal,
      }).catch((error: unknown) => {
        if (error instanceof OutboundError && error.code === 'OUTBOUND_FAILED') {
          throw new RetryableError(`${options.name} cannot be reached: ${error.message}`, { cause: error });
        }
        throw error;
      });
      if (answer.status >= 500 || answer.status === 429) {
        throw new RetryableError(`${options.name} answered HTTP ${answer.status}`);
      }
      if (answer.status !== 200) {
        throw new Error(
          `${options.name} answered HTTP ${answer.status}${answer.status === 403 ? ' (is its JSON format enabled?)' : ''}`,
        );
      }
      const list = pathValue(parseJson(answer.body, options.name), options.paths.list);
      if (!Array.isArray(list)) {
        throw new Error(
          `${options.name} answered without a list at \`${options.paths.list}\`; set search.results.list`,
        );
      }
      const results: SearchResult[] = [];
      for (const hit of list) {
        const url = pathValue(hit, options.paths.url);
        if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) continue;
        const title = pathValue(hit, options.paths.title);
        const snippet = pathValue(hit, options.paths.snippet);
        results.push({
          url,
          title: typeof title === 'string' ? title : '',
          snippet: typeof snippet === 'string' ? snippet : '',
        });
      }
      return { results };
    },
  };
}

function parseJson(text: string, name: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`${name} answered with something that is not JSON: ${JSON.stringify(text.slice(0, 120))}`);
  }
}

/** `web.results` in `{web: {results: […]}}`; undefined where the path leads nowhere. */
export function pathValue(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split('.').filter(Boolean)) {
    if (current === null || typeof current !== 'object' || !Object.hasOwn(current, key)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/**
 * A search tool of an MCP server, found among the server's tools as `server__tool`. Configuring it as research's
 * search provider is the owner's word that it only searches: research calls it directly, without the approval a
 * tool of unknown tier would otherwise wait for.
 */
function mcpProvider(server: string, toolName: string, source: McpToolSource): SearchProvider {
  const wanted = `${server}__${toolName}`.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
  return {
    name: `the MCP tool ${toolName} of ${server}`,
    async search(query, { tool: toolContext }) {
      const tools = await source([server]).catch((error: unknown) => {
        if (error instanceof Error && 'code' in error && error.code === 'MCP_SERVER_UNAVAILABLE') {
          throw new RetryableError(`the MCP server ${server} cannot be reached: ${error.message}`, { cause: error });
        }
        throw error;
      });
      const tool = tools.find((candidate) => candidate.name === wanted);
      if (!tool) {
        throw new Error(
          `the MCP server ${server} has no tool ${toolName} (it has ${tools.map((candidate) => candidate.name).join(', ') || 'none'})`,
        );
      }
      const output = await tool.run(tool.input.parse({ query }), toolContext);
      return { text: typeof output === 'string' ? output : JSON.stringify(output) };
    },
  };
}

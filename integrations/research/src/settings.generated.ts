// Generated from research's manifest.yaml by `npm run generate:settings`: do not edit. A test fails
// when this file and the manifest disagree.

import type { Secret } from '@assistant/sdk';

/** The settings of an instance of the research integration (its keys in config.yaml beside type and name). */
export interface ResearchSettings {
  /** Where `search` looks: exactly one of `searxng`, `url_template` or `mcp`. Without it the service answers that no search provider is configured. */
  search?: {
    /** A SearXNG instance (its JSON API must be enabled: `search.formats: [html, json]` in its settings.yml): GET URL/search?q=…&format=json. */
    searxng?: string;
    /** Any JSON search API: the URL with `{query}` where the URL-encoded query goes, e.g. https://api.example/search?q={query}. */
    url_template?: string;
    /** For `url_template`: `!secret name`, sent in the header `api_key_header`, or put where `{api_key}` stands in the template. */
    api_key?: Secret;
    /** For `url_template`: the header that carries `api_key`, e.g. X-Subscription-Token. */
    api_key_header?: string;
    /** For `url_template`: where the answer keeps its results, as dotted paths. */
    results?: {
      /** The path of the list of results in the answer, e.g. web.results. */
      list: string;
      /** The path of a result's URL, within one result. */
      url: string;
      /** The path of a result's title. */
      title: string;
      /** The path of a result's summary text (SearXNG: content; Brave: description). */
      snippet: string;
    };
    /** A search tool of an MCP server from config.yaml's `mcp_servers:`; naming it here lets research call it without approval. */
    mcp?: {
      /** The name of the server under `mcp_servers:`. */
      server: string;
      /** The tool's name on that server; it is called with `{query}`. */
      tool: string;
    };
  };
  /** Names under config.yaml's `mcp_servers:` whose tools the research loop also gets (under the tool gate). */
  mcp_servers: string[];
  /** Search results shown to the model per search. */
  max_results: number;
  /** How long one fetch (and one search request) may take, redirects included. Milliseconds. */
  fetch_timeout: number;
  /** The largest page fetch reads; a larger one is refused. */
  fetch_max_bytes: number;
  /** Content types fetch accepts; any other is refused before its body is read. */
  fetch_content_types: string[];
  /** The most characters of one page's readable text the model gets. */
  page_chars: number;
  /** DANGEROUS, for tests and local development only: lets fetch reach this machine's loopback addresses (127.0.0.0/8, ::1), where the Assistant API and your local services listen. Private and link-local addresses stay refused. Never set it on a machine with anything to protect. */
  unsafe_fetch_loopback: boolean;
}

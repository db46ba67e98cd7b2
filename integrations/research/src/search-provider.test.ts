import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { defineTool, RetryableError, type ToolContext } from '@assistant/sdk';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { searchProviderFrom } from './search-provider.ts';
import type { ResearchSettings } from './settings.generated.ts';

const base: ResearchSettings = {
  mcp_servers: [],
  max_results: 8,
  fetch_timeout: 5_000,
  fetch_max_bytes: 2_097_152,
  fetch_content_types: ['text/html'],
  page_chars: 12_000,
  unsafe_fetch_loopback: false,
};

/** An Assistant whose config names no MCP servers. */
const noMcp = async (): Promise<never[]> => [];

describe('searchProviderFrom', () => {
  it('says how to configure a provider when there is none, or more than one', () => {
    const none = searchProviderFrom({ settings: base, mcpTools: noMcp, timeoutMs: 1_000 });
    expect(none).toEqual({ problem: expect.stringMatching(/^No search provider is configured for research/) });
    const two = searchProviderFrom({
      settings: { ...base, search: { searxng: 'http://a.example', url_template: 'http://b.example/?q={query}' } },
      mcpTools: noMcp,
      timeoutMs: 1_000,
    });
    expect(two).toEqual({ problem: expect.stringMatching(/names searxng and url_template; give exactly one/) });
  });

  it("searches with an MCP server's tool, found as server__tool", async () => {
    const asked: unknown[] = [];
    const mcpTools = async (names: string[]) =>
      names[0] === 'brave'
        ? [
            defineTool({
              name: 'brave__search',
              description: 'searches',
              tier: 'read_only',
              input: z.object({ query: z.string() }),
              run: async (input) => {
                asked.push(input);
                return 'Result: https://example.test/a';
              },
            }),
          ]
        : [];
    const provider = searchProviderFrom({
      settings: { ...base, search: { mcp: { server: 'brave', tool: 'search' } } },
      mcpTools,
      timeoutMs: 1_000,
    });
    if ('problem' in provider) throw new Error(provider.problem);
    const found = await provider.search('otters', { signal: AbortSignal.timeout(5_000), tool: {} as never });
    expect(asked).toEqual([{ query: 'otters' }]);
    expect(JSON.stringify(found)).toContain('https://example.test/a');
    const missing = searchProviderFrom({
      settings: { ...base, search: { mcp: { server: 'brave', tool: 'lookup' } } },
      mcpTools,
      timeoutMs: 1_000,
    });
    if ('problem' in missing) throw new Error(missing.problem);
    await expect(missing.search('otters', { signal: AbortSignal.timeout(5_000), tool: {} as never })).rejects.toThrow(
      /has no tool lookup \(it has brave__search\)/,
    );
  });

  it('maps any JSON search API by dotted paths, with the key in a header', async () => {
    const seen: { url: string; key: string | undefined }[] = [];
    const server = http.createServer((request, response) => {
      seen.push({ url: request.url ?? '', key: request.headers['x-token']?.toString() });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          web: {
            results: [
              { link: { href: 'https://tea.example/a' }, name: 'A', summary: 'about a' },
              { link: { href: 'javascript:alert(1)' }, name: 'not a page' },
            ],
          },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const provider = searchProviderFrom({
        settings: {
          ...base,
          search: {
            url_template: `http://127.0.0.1:${port}/find?query={query}`,
            api_key: { reveal: () => 's3cret' } as NonNullable<NonNullable<ResearchSettings['search']>['api_key']>,
            api_key_header: 'X-Token',
            results: { list: 'web.results', url: 'link.href', title: 'name', snippet: 'summary' },
          },
        },
        mcpTools: noMcp,
        timeoutMs: 5_000,
      });
      if ('problem' in provider) throw new Error(provider.problem);
      const outcome = await provider.search('green & black', {
        signal: new AbortController().signal,
        tool: {} as ToolContext,
      });
      expect(outcome).toEqual({ results: [{ url: 'https://tea.example/a', title: 'A', snippet: 'about a' }] });
      expect(seen).toEqual([{ url: '/find?query=green%20%26%20black', key: 's3cret' }]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('rejects with a RetryableError when the search API is down, unreachable or rate-limited', async () => {
    const server = http.createServer((request, response) => {
      response.writeHead(request.url?.includes('busy') ? 429 : 503);
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    server.closeAllConnections();
    const search = async (url_template: string) => {
      const provider = searchProviderFrom({
        settings: { ...base, search: { url_template } },
        mcpTools: noMcp,
        timeoutMs: 5_000,
      });
      if ('problem' in provider) throw new Error(provider.problem);
      return provider.search('tea', { signal: new AbortController().signal, tool: {} as ToolContext });
    };
    try {
      await expect(search(`http://127.0.0.1:${port}/down?q={query}`)).rejects.toThrow(RetryableError);
      await expect(search(`http://127.0.0.1:${port}/busy?q={query}`)).rejects.toThrow(/answered HTTP 429/);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    // Closed now: nothing listens on the port.
    await expect(search(`http://127.0.0.1:${port}/?q={query}`)).rejects.toThrow(/cannot be reached/);
  });
});

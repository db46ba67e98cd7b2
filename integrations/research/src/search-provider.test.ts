import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ToolContext } from '@assistant/sdk';
import { describe, expect, it } from 'vitest';
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

describe('searchProviderFrom', () => {
  it('says how to configure a provider when there is none, or more than one', () => {
    const none = searchProviderFrom({ settings: base, mcpTools: undefined, timeoutMs: 1_000 });
    expect(none).toEqual({ problem: expect.stringMatching(/^No search provider is configured for research/) });
    const two = searchProviderFrom({
      settings: { ...base, search: { searxng: 'http://a.example', url_template: 'http://b.example/?q={query}' } },
      mcpTools: undefined,
      timeoutMs: 1_000,
    });
    expect(two).toEqual({ problem: expect.stringMatching(/names searxng and url_template; give exactly one/) });
    const mcp = searchProviderFrom({
      settings: { ...base, search: { mcp: { server: 'brave', tool: 'search' } } },
      mcpTools: undefined,
      timeoutMs: 1_000,
    });
    expect(mcp).toEqual({ problem: expect.stringMatching(/cannot reach MCP servers yet/) });
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
        mcpTools: undefined,
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
});

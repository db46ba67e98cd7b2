import { isAssistantError } from '@assistant/errors';
import { describe, expect, it } from 'vitest';
import { McpServers, toolTier } from './mcp-servers.ts';

describe('toolTier', () => {
  it('is read_only when the server annotates readOnlyHint: true', () => {
    expect(toolTier({ name: 'get', annotations: { readOnlyHint: true } }, { readOnly: [] })).toBe('read_only');
  });

  it('is read_only when config says so, whatever the server says', () => {
    expect(toolTier({ name: 'search_web', annotations: { readOnlyHint: false } }, { readOnly: ['search_*'] })).toBe(
      'read_only',
    );
  });

  it('is irreversible otherwise, also for destructiveHint: false', () => {
    expect(toolTier({ name: 'write_file' }, { readOnly: ['read_*'] })).toBe('irreversible');
    expect(toolTier({ name: 'touch', annotations: { destructiveHint: false } }, { readOnly: [] })).toBe('irreversible');
  });
});

describe('McpServers', () => {
  it('refuses an unknown server name, listing those configured', async () => {
    const servers = new McpServers({
      servers: {
        files: {
          transport: 'stdio',
          command: 'x',
          args: [],
          env: {},
          allow: ['*'],
          deny: [],
          readOnly: [],
          timeoutMs: 1,
        },
      },
    });
    const error = await servers.toolsFor(['nope']).catch((caught: unknown) => caught);
    expect(isAssistantError(error, 'MCP_SERVER_UNKNOWN')).toBe(true);
    expect((error as Error).message).toContain('configured: files');
    expect(servers.status('files')).toEqual({ name: 'files', transport: 'stdio', state: 'idle', restarts: 0 });
    await servers.close();
    await servers.close();
  });
});

import { FileNoteStore } from '@assistant/notes';
import type { CliContext } from '../cli-context.ts';
import type { GlobalOptions } from '../global-options.ts';
import { listenForShutdown } from '../listen-for-shutdown.ts';
import { openCliRuntime } from '../open-cli-queue.ts';

export interface McpServeCommandOptions {
  globals: GlobalOptions;
  context: CliContext;
}

/**
 * `assistant mcp serve`: Assistant as an MCP server on stdin/stdout, for a desktop assistant or an editor that starts
 * it. It works on the data directory's files as the other commands do (no server needed); chat messages go to the
 * inbox as `assistant chat` sends them, so a running worker answers. stdout carries MCP's JSON-RPC and nothing else:
 * warnings go to stderr. Serves until the client closes stdin, or SIGINT/SIGTERM.
 */
export async function mcpServeCommand(options: McpServeCommandOptions): Promise<void> {
  const { context } = options;
  const warn = (message: string) => context.stderr.write(`warning: ${message}\n`);
  const { queue, registry, config } = await openCliRuntime(options);
  // Imported here so that other commands do not pay for loading the MCP SDK.
  const [{ serveMcpOverStdio }, { configuredChatService, storeMcpBackend }, { assistantVersion }] = await Promise.all([
    import('@assistant/mcp'),
    import('@assistant/server'),
    import('@assistant/process'),
  ]);
  const shutdown = listenForShutdown({ onRepeat: () => {} });
  try {
    const notes = new FileNoteStore({ root: config.paths.notes });
    const chat = configuredChatService({ config, notes, queue, registry, warn });
    const backend = storeMcpBackend({
      notes,
      queue: () => queue,
      chat: () => chat,
      entryTask: (instance, platform) => registry.entryTask(instance, platform),
      dataDir: config.paths.dataDir,
      queueDir: config.paths.queue,
      source: 'cli',
      warn,
    });
    context.stderr.write(`assistant MCP server on stdio (data: ${config.paths.dataDir})\n`);
    // The real process's stdin and stdout, whatever the context says: an MCP client speaks to this process's pipes.
    await serveMcpOverStdio({
      backend,
      version: assistantVersion,
      signal: shutdown.signal,
    });
  } finally {
    shutdown[Symbol.dispose]();
    await queue.close();
  }
}
